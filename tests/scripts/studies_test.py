#!/usr/bin/env python3
"""scripts/scaling-study and scripts/sparsity-study on tiny-cluster and tiny-mlp: the tables
have one row per point and the exact figures the model gives (kept parameters, stream bytes
relative to dense, scaling efficiency of the first row)."""
import os
import subprocess
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
env = dict(os.environ, WAFERSIM=os.path.abspath(sys.argv[1]))


def table(script, *args):
    out = subprocess.run([os.path.join(root, "scripts", script), *args], env=env, check=True, capture_output=True,
                         text=True).stdout
    lines = [l for l in out.splitlines() if l.startswith("|")]
    return [[c.strip() for c in l.strip("|").split("|")] for l in lines[2:]]


rows = table("sparsity-study", "tiny-cluster", "tiny-mlp", "1", "0.25", "--systems", "2")
assert len(rows) == 2, rows
# tiny-mlp: fc1 16 x 32 + 32, fc2 32 x 8 + 8 = 808 parameters; 0.25 keeps 128 + 64 weights.
assert rows[0][1] == "808 of 808" and rows[0][3] == "1.000", rows[0]
assert rows[1][1] == "232 of 808", rows[1]
assert rows[1][3] == f"{232 * 8 / (808 * 4):.3f}", rows[1]  # value + index vs 4 B per parameter
assert float(rows[1][4]) < float(rows[0][4]), "a sparser step must not be slower here"

rows = table("scaling-study", "tiny-cluster", "tiny-mlp", "1", "2", "4")
assert [r[0] for r in rows] == ["1", "2", "4"], rows
assert rows[0][8] == "1.000", rows[0]
rows = table("scaling-study", "--vary", "port-bandwidth", "--values", "100Gb/s", "1Gb/s", "--systems", "2",
             "tiny-cluster", "tiny-mlp")
assert [r[2] for r in rows] == ["100Gb/s", "1Gb/s"], rows
assert float(rows[1][3]) > float(rows[0][3]) and rows[1][-1] == "stream", rows
print("ok")
