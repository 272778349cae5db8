"""A run folder (the --out of any simulating command) as pandas tables."""

import glob
import os

import pandas as pd

from .stats import FormatError, read_json, read_stats, stats_table


def _flat_rows(rows):
    """DataFrame of dicts whose nested dicts become dotted columns (stalls.fabric_in, ...)."""
    return pd.json_normalize(rows, sep=".") if rows else pd.DataFrame()


class Run:
    """What a run left in its folder.

    folder   the run folder
    meta     run.json as a dict (command line as `argv`, status, cycles, wall time, version)
    stats    every statistic: columns path, value, unit, description (vector elements as
             path.N, distribution fields as path.mean, path.p99, ...)
    config   the resolved platform (config.yaml) as text
    layers   per layer step of a model run (model.json "results": cycles, bound_cycles,
             binds, flops, flops_per_second, peak_fraction, stalls.*); empty otherwise
    mapping  the compiler's mapping of a model run (model.json "steps"); empty otherwise
    steps    per training step (training.json "steps", else trace/steps.json); empty otherwise
    phases   per layer phase on the wafers (trace/phases.json: wafer, name, start, end)
    windows  the trace's window tables by name ("fabric-w0", "pe-w0", "links", ...)
    trace    trace/meta.json as a dict (empty without a trace)
    """

    def __init__(self, folder):
        self.folder = os.fspath(folder)
        if not os.path.isdir(self.folder):
            raise FormatError(f"{self.folder}: no such run folder")
        self.meta = read_json(os.path.join(self.folder, "run.json"))
        self._stats_file = read_stats(self.folder)
        self.stats = stats_table(self._stats_file)
        config = os.path.join(self.folder, "config.yaml")
        self.config = open(config, encoding="utf-8").read() if os.path.exists(config) else ""
        model = self._optional_json("model.json")
        self.layers = _flat_rows(model.get("results", [])) if model else pd.DataFrame()
        self.mapping = _flat_rows(model.get("steps", [])) if model else pd.DataFrame()
        training = self._optional_json("training.json")
        steps = training.get("steps") if training else None
        if steps is None:
            trace_steps = self._optional_json(os.path.join("trace", "steps.json"))
            steps = trace_steps.get("steps", []) if isinstance(trace_steps, dict) else (trace_steps or [])
        self.steps = _flat_rows(steps)
        phases = self._optional_json(os.path.join("trace", "phases.json"))
        self.phases = pd.DataFrame(phases.get("phases", []) if phases else [])
        self.trace = self._optional_json(os.path.join("trace", "meta.json")) or {}
        self.windows = {}
        for path in sorted(glob.glob(os.path.join(self.folder, "trace", "*.csv"))):
            self.windows[os.path.splitext(os.path.basename(path))[0]] = pd.read_csv(path)

    def _optional_json(self, name):
        path = os.path.join(self.folder, name)
        return read_json(path) if os.path.exists(path) else None

    def stat(self, path):
        """The value of one statistic leaf (KeyError naming the path when there is none)."""
        hit = self.stats.loc[self.stats["path"] == path, "value"]
        if hit.empty:
            raise KeyError(f"{self.folder}: no statistic '{path}'")
        return hit.iloc[0]

    def unit(self, path):
        """The unit of one statistic leaf."""
        hit = self.stats.loc[self.stats["path"] == path, "unit"]
        if hit.empty:
            raise KeyError(f"{self.folder}: no statistic '{path}'")
        return hit.iloc[0]

    def __repr__(self):
        return f"Run({self.folder!r}: {self.meta.get('platform', '?')}, {len(self.stats)} statistics)"


def load_run(folder):
    """Reads a run folder; FormatError (a ValueError) naming the file when one is not what
    wafersim writes."""
    return Run(folder)


__all__ = ["FormatError", "Run", "load_run"]
