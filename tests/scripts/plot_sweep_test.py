#!/usr/bin/python3
"""Tests of scripts/plot_sweep.py: the Pareto front, numbers with units, and the three plots."""

import importlib.util
import os
import sys
import tempfile
import unittest

try:
    import pandas as pd
    import matplotlib  # noqa: F401
except ImportError as e:  # pragma: no cover
    print(f"SKIP: {e} (scripts/setup installs python3-matplotlib and python3-pandas)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "plot_sweep.py")
spec = importlib.util.spec_from_file_location("plot_sweep", SCRIPT)
plot_sweep = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plot_sweep)

CSV = """index,fabric.queue_depth,fabric.hop_latency,status,exit_code,wall_seconds,latency,throughput
0,1,1 cycles,ok,0,0.1,10,0.5
1,1,2 cycles,ok,0,0.1,14,0.6
2,2,1 cycles,ok,0,0.1,8,0.45
3,2,2 cycles,ok,0,0.1,12,0.7
4,4,1 cycles,failed,4,0.1,,
5,4,2 cycles,ok,0,0.1,9,0.3
"""


class ParetoFront(unittest.TestCase):
    def frame(self):
        return pd.DataFrame({"a": [3, 1, 2, 4, 1, 5], "b": [3, 5, 2, 1, 6, 1]}, index=[10, 11, 12, 13, 14, 15])

    def test_minimising_both(self):
        # (1,5) (2,2) (4,1) are not dominated; (1,6) is dominated by (1,5); (5,1) by (4,1).
        self.assertEqual(plot_sweep.pareto_front(self.frame(), "a", "b"), [11, 12, 13])

    def test_maximising_one(self):
        # Low a, high b: (1,6) has the lowest a and the highest b, so it dominates every other.
        self.assertEqual(plot_sweep.pareto_front(self.frame(), "a", "b", maximize=("b",)), [14])

    def test_maximising_both(self):
        # (5,1) (3,3) (1,6), by a descending; (4,1) (2,2) (1,5) are dominated.
        self.assertEqual(plot_sweep.pareto_front(self.frame(), "a", "b", maximize=("a", "b")), [15, 10, 14])


class Columns(unittest.TestCase):
    def test_numbers_and_one_unit(self):
        values, unit = plot_sweep.numeric_column(pd.Series(["1 cycles", "2 cycles", "4 cycles"]))
        self.assertEqual(list(values), [1.0, 2.0, 4.0])
        self.assertEqual(unit, "cycles")
        values, unit = plot_sweep.numeric_column(pd.Series(["1", "2.5"]))
        self.assertEqual(list(values), [1.0, 2.5])
        self.assertEqual(unit, "")

    def test_mixed_prefixes_become_base_units(self):
        values, unit = plot_sweep.numeric_column(pd.Series(["857.986 MHz", "1.14556 GHz", "600 MHz"]))
        self.assertEqual(list(values), [857.986e6, 1.14556e9, 600e6])
        self.assertEqual(unit, "Hz")
        values, unit = plot_sweep.numeric_column(pd.Series(["16 KiB", "1 MiB"]))
        self.assertEqual(list(values), [16384.0, 1048576.0])
        self.assertEqual(unit, "B")

    def test_other_dimensions_and_words_are_not_numbers(self):
        values, _ = plot_sweep.numeric_column(pd.Series(["850 MHz", "2 cycles"]))
        self.assertIsNone(values)
        values, _ = plot_sweep.numeric_column(pd.Series(["uniform", "transpose"]))
        self.assertIsNone(values)


class Plots(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.csv = os.path.join(self.dir.name, "results.csv")
        with open(self.csv, "w", encoding="utf-8") as f:
            f.write(CSV)

    def tearDown(self):
        self.dir.cleanup()

    def check_png(self, path):
        with open(path, "rb") as f:
            data = f.read()
        self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")
        self.assertGreater(len(data), 2000)

    def test_line_plot_with_series(self):
        out = os.path.join(self.dir.name, "line.png")
        plot_sweep.main([self.csv, "--metric", "latency", "--x", "fabric.queue_depth",
                         "--series", "fabric.hop_latency", "-o", out])
        self.check_png(out)

    def test_heat_map(self):
        out = os.path.join(self.dir.name, "heat.png")
        plot_sweep.main([self.csv, "--metric", "latency", "--x", "fabric.queue_depth", "--y", "fabric.hop_latency",
                         "-o", out])
        self.check_png(out)

    def test_pareto_prints_the_front_of_ok_points(self):
        out = os.path.join(self.dir.name, "pareto.png")
        import io
        import contextlib
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            plot_sweep.main([self.csv, "--pareto", "latency", "throughput", "--maximize", "throughput",
                             "--params", "fabric.queue_depth", "-o", out])
        self.check_png(out)
        # latency low, throughput high: 2 (8, 0.45) and 3 (12, 0.7) and 0 (10, 0.5); 5 (9, 0.3) is
        # dominated by 2, 1 (14, 0.6) by 3; the failed point 4 is not drawn.
        self.assertIn("Pareto front: points 2, 0, 3", text.getvalue())

    def test_numeric_table_sorted_and_labelled_from_the_sidecar(self):
        # The table `wafersim collect` writes for sweeps/clock-sram-lhs.yaml: clocks in Hz, in
        # point order (not sorted), the units in results.units.json.
        csv = os.path.join(self.dir.name, "clock.csv")
        with open(csv, "w", encoding="utf-8") as f:
            f.write("index,wafer.clock,status,exit_code,wall_seconds,simulated_seconds\n"
                    "0,1145560000,ok,0,0.1,8.7e-06\n1,857986000,ok,0,0.1,1.16e-05\n"
                    "2,600000000,ok,0,0.1,1.66e-05\n3,1000000000,ok,0,0.1,1e-05\n")
        with open(os.path.join(self.dir.name, "clock.units.json"), "w", encoding="utf-8") as f:
            f.write('{"format": "wafersim-sweep-units/1", "columns": {"wafer.clock": "Hz", "simulated_seconds": "s"}}')
        plot_sweep._UNITS.clear()
        plot_sweep._UNITS.update(plot_sweep.load_units(csv))
        frame = plot_sweep.ok_rows(pd.read_csv(csv, dtype=str, keep_default_na=False))
        fig, ax = plot_sweep.plt.subplots()
        args = plot_sweep.argparse.Namespace(metric="simulated_seconds", x="wafer.clock", y=None, series=None,
                                             logx=False, logy=False)
        plot_sweep.plot_metric(frame, args, ax)
        xs = list(ax.get_lines()[0].get_xdata())
        self.assertEqual(xs, [600e6, 857986000.0, 1e9, 1145560000.0])
        self.assertEqual(ax.get_xlabel(), "wafer.clock (Hz)")
        self.assertEqual(ax.get_ylabel(), "simulated_seconds (s)")
        plot_sweep.plt.close(fig)
        plot_sweep._UNITS.clear()

    def test_unknown_column_names_the_columns(self):
        with self.assertRaises(SystemExit) as e:
            plot_sweep.main([self.csv, "--metric", "latncy", "--x", "fabric.queue_depth", "-o",
                             os.path.join(self.dir.name, "x.png")])
        self.assertIn("no column 'latncy'", str(e.exception.code))


if __name__ == "__main__":
    unittest.main()
