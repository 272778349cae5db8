"""The wafersim Python package against run folders and a sweep made by the built wafersim
(WAFERSIM_BINARY): statistics with units, per-layer and per-phase tables, trace windows,
numeric sweep tables and run differences in the order the command line lists them."""

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import wafersim  # noqa: E402
from wafersim.stats import FormatError  # noqa: E402

BINARY = os.environ.get("WAFERSIM_BINARY", "")
pytestmark = pytest.mark.skipif(not os.path.exists(BINARY), reason="set WAFERSIM_BINARY to the built wafersim")
ENV = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1", WAFERSIM_NO_PROGRESS="1")


def wafersim_cmd(*args):
    r = subprocess.run([BINARY, *args], capture_output=True, text=True, env=ENV, check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    wafersim_cmd("run", "tiny", "--model", "tiny-mlp", "--trace", "windows", "-o", str(d / "model"))
    wafersim_cmd("run", "tiny", "--cycles", "100", "-o", str(d / "idle100"))
    wafersim_cmd("run", "tiny", "--cycles", "250", "-o", str(d / "idle250"))
    return d


def test_stats_are_flat_with_units(runs):
    run = wafersim.load_run(runs / "idle100")
    assert list(run.stats.columns) == ["path", "value", "unit", "description"]
    assert run.stat("cluster.wafer0.cycles") == 100
    assert run.unit("cluster.wafer0.cycles") == "cycles"
    assert run.meta["argv"][1:4] == ["run", "tiny", "--cycles"]
    assert "wafer:" in run.config
    with pytest.raises(KeyError, match="no statistic 'nope'"):
        run.stat("nope")


def test_model_run_tables(runs):
    run = wafersim.load_run(runs / "model")
    model = json.load(open(runs / "model" / "model.json"))
    assert list(run.layers["layer"]) == [r["layer"] for r in model["results"]]
    assert list(run.layers["cycles"]) == [r["cycles"] for r in model["results"]]
    for column in ("bound_cycles", "binds", "flops_per_second", "peak_fraction", "stalls.fabric_in"):
        assert column in run.layers.columns, column
    phases = json.load(open(runs / "model" / "trace" / "phases.json"))["phases"]
    assert list(run.phases.columns) == ["wafer", "name", "start", "end"]
    assert list(run.phases["name"]) == [p["name"] for p in phases]
    assert sorted(run.windows) == ["energy-w0", "fabric-w0", "pe-w0", "sram-w0"]
    assert run.unit("energy.total") == "J"
    assert len(run.windows["fabric-w0"]) > 0
    assert run.trace["format"] == "wafersim-trace/1"
    assert run.steps.empty


def test_training_steps(tmp_path):
    wafersim_cmd("train", "tiny-cluster", "--model", "tiny-mlp", "--steps", "2", "-o", str(tmp_path / "t"))
    run = wafersim.load_run(tmp_path / "t")
    training = json.load(open(tmp_path / "t" / "training.json"))
    assert list(run.steps["step"]) == [0, 1]
    assert list(run.steps["time_ps"]) == [s["time_ps"] for s in training["steps"]]


def test_diff_matches_the_command_line(runs):
    d = wafersim.diff(runs / "idle100", runs / "idle250")
    assert list(d.columns) == ["path", "unit", "a", "b", "delta", "relative"]
    # Largest |relative change| first: the cycles, and the idle wafer's leakage energy with them.
    assert list(d["relative"].abs()) == sorted(d["relative"].abs(), reverse=True)
    assert abs(d.iloc[0]["relative"] - 1.5) < 1e-12
    cycles = d[d["path"] == "cluster.wafer0.cycles"].iloc[0]
    assert (cycles["unit"], cycles["a"], cycles["b"], cycles["relative"]) == ("cycles", 100, 250, 1.5)
    cli = json.loads(wafersim_cmd("diff", str(runs / "idle100"), str(runs / "idle250"), "--json"))
    assert list(d["path"]) == [r["path"] for r in cli["differences"]]
    assert wafersim.diff(runs / "idle100", runs / "idle100").empty


def test_sweep_parameters_are_numbers_with_units(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("sweep:\n  name: clocks\n  platform: tiny\n  workload: {command: run, cycles: 100}\n"
                    "  parameters:\n    - {key: wafer.clock, values: [1.2 GHz, 850 MHz, 1 GHz]}\n"
                    "  metrics: [{name: t, path: summary.simulated_seconds}]\n")
    wafersim_cmd("sweep", str(spec), "--jobs", "1", "--out", str(tmp_path / "sw"))
    frame = wafersim.load_sweep(tmp_path / "sw")
    assert list(frame["wafer.clock"]) == [1.2e9, 850e6, 1e9]
    assert frame.attrs["units"]["wafer.clock"] == "Hz"
    assert frame.attrs["units"]["t"] == "s"
    assert list(frame.sort_values("wafer.clock")["wafer.clock"]) == [850e6, 1e9, 1.2e9]


def test_older_tables_with_prefixed_text_become_numbers(tmp_path):
    csv = tmp_path / "results.csv"
    csv.write_text("index,wafer.clock,status,t\n0,1.14556 GHz,ok,1\n1,857.986 MHz,ok,2\n")
    frame = wafersim.load_sweep(csv)
    assert list(frame["wafer.clock"]) == [1.14556e9, 857.986e6]
    assert frame.attrs["units"] == {"wafer.clock": "Hz"}


def test_bad_input_names_the_file(tmp_path):
    with pytest.raises(FormatError, match="no such run folder"):
        wafersim.load_run(tmp_path / "missing")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "run.json").write_text("{}")
    (tmp_path / "r" / "stats.json").write_text("[1, 2]")
    with pytest.raises(FormatError, match=r"stats.json: not a wafersim statistics file"):
        wafersim.load_run(tmp_path / "r")
    with pytest.raises(FormatError, match="no results table"):
        wafersim.load_sweep(tmp_path)
