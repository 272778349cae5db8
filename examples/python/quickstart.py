#!/usr/bin/env python3
"""The example of docs/python.md: two runs of a model at two clocks, their per-layer table, the
statistics that differ, and a small sweep's table with numeric parameters.

    quickstart.py WAFERSIM_BINARY WORK_DIR
"""

import subprocess
import sys

import wafersim

binary, work = sys.argv[1], sys.argv[2]


def sim(*args):
    subprocess.run([binary, *args], check=True, capture_output=True)


sim("run", "tiny", "--model", "tiny-mlp", "-o", f"{work}/base")
sim("run", "tiny", "--model", "tiny-mlp", "--set", "wafer.clock=900 MHz", "-o", f"{work}/slow")

base = wafersim.load_run(f"{work}/base")
print(base.layers[["layer", "phase", "cycles", "bound_cycles", "binds", "peak_fraction"]].to_string(index=False))
print("cycles:", base.stat("cluster.wafer0.cycles"), base.unit("cluster.wafer0.cycles"))

changes = wafersim.diff(f"{work}/base", f"{work}/slow")
print(changes.head(5).to_string(index=False))

with open(f"{work}/clocks.yaml", "w", encoding="utf-8") as f:
    f.write("sweep:\n  name: clocks\n  platform: tiny\n  workload: {command: run, cycles: 1000}\n"
            "  parameters:\n    - {key: wafer.clock, values: [1.2 GHz, 850 MHz, 1 GHz]}\n"
            "  metrics: [{name: seconds, path: summary.simulated_seconds}]\n")
sim("sweep", f"{work}/clocks.yaml", "--jobs", "1", "--out", f"{work}/clocks")
sweep = wafersim.load_sweep(f"{work}/clocks").sort_values("wafer.clock")
print(sweep[["wafer.clock", "seconds"]].to_string(index=False), sweep.attrs["units"])
assert list(sweep["wafer.clock"]) == [850e6, 1e9, 1.2e9]
