"""Read wafersim's results into pandas: run folders, sweep tables and run differences.

    import wafersim
    run = wafersim.load_run("out/run-1")       # a run folder (any simulating command's --out)
    run.stats                                   # every statistic: path, value, unit, description
    run.layers, run.steps, run.phases           # per-layer, per-step and per-phase tables
    run.windows["fabric-w0"]                    # a trace's congestion windows
    sweep = wafersim.load_sweep("sweep-out")    # one row per point, parameters as numbers
    wafersim.diff("out/a", "out/b")             # what differs, largest relative change first

docs/python.md has the details; the files are described in README.md and docs/trace.md.
"""

from .diff import diff
from .run import Run, load_run
from .sweep import load_sweep
from .units import to_base_units

__all__ = ["Run", "diff", "load_run", "load_sweep", "to_base_units"]
__version__ = "0.1.0"
