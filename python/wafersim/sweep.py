"""A sweep's results table (results.csv of `wafersim collect`) with numeric parameters."""

import json
import os

import pandas as pd

from .stats import FormatError
from .units import to_base_units


def _numeric(column):
    """The column as numbers in one base unit when every value is one, else unchanged."""
    converted = [to_base_units(v) for v in column]
    if column.empty or any(c is None for c in converted) or len({u for _, u in converted}) != 1:
        return column, None
    return pd.Series([v for v, _ in converted], index=column.index), converted[0][1]


def load_sweep(folder_or_csv):
    """One row per point: index, the parameters (numbers in base units: Hz, B, s, cycles, ...),
    status, exit_code, wall_seconds and the metrics. `frame.attrs["units"]` maps each column
    to its unit (from the RESULTS.units.json sidecar; for older tables, from converting
    values such as "850 MHz"). Run `wafersim collect DIR` first."""
    path = os.fspath(folder_or_csv)
    csv = os.path.join(path, "results.csv") if os.path.isdir(path) else path
    if not os.path.exists(csv):
        raise FormatError(f"{csv}: no results table (run 'wafersim collect {path}')")
    frame = pd.read_csv(csv, keep_default_na=True)
    if "index" not in frame.columns or "status" not in frame.columns:
        raise FormatError(f"{csv}: not a wafersim sweep table (expected the columns index and status)")
    units = {}
    sidecar = os.path.splitext(csv)[0] + ".units.json"
    if os.path.exists(sidecar):
        try:
            with open(sidecar, encoding="utf-8") as f:
                units = dict(json.load(f)["columns"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise FormatError(f"{sidecar}: expected {{\"format\", \"columns\": {{column: unit}}}}: {e}") from e
    for c in frame.columns:
        if frame[c].dtype == object and c != "status":
            frame[c], unit = _numeric(frame[c])
            if unit is not None and not units.get(c):
                units[c] = unit
    frame.attrs["units"] = {c: u for c, u in units.items() if u}
    return frame
