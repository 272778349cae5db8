"""The statistics that differ between two runs, in the order `wafersim diff` lists them."""

import math

import pandas as pd

from .stats import describe, flatten, read_stats


def diff(a, b):
    """A DataFrame (path, unit, a, b, delta, relative) of every statistic leaf that differs
    between runs `a` and `b` (folders or stats.json files): a statistic of one run only first,
    then the largest |relative| change ((b - a) / |a|; a change from 0 before the rest), then
    the largest |delta|, then the path. Missing values and undefined changes are NaN."""
    ja, jb = read_stats(a), read_stats(b)
    la, lb = dict(flatten(ja["stats"])), dict(flatten(jb["stats"]))
    da, db = ja.get("descriptions") or {}, jb.get("descriptions") or {}
    rows = []
    for path in sorted(set(la) | set(lb)):
        va, vb = la.get(path), lb.get(path)
        if va == vb and (path in la) == (path in lb):
            continue
        unit = describe(da, path)[0] or describe(db, path)[0]
        both = va is not None and vb is not None
        delta = vb - va if both else math.nan
        relative = delta / abs(va) if both and va != 0 else math.nan
        if not both:
            magnitude = math.inf
        elif va == 0:
            magnitude = 1.7976931348623157e308
        else:
            magnitude = abs(delta) / abs(va)
        rows.append((path, unit, math.nan if va is None else va, math.nan if vb is None else vb, delta, relative,
                     magnitude, abs(delta) if both else 0.0))
    frame = pd.DataFrame(rows, columns=["path", "unit", "a", "b", "delta", "relative", "_m", "_d"])
    frame = frame.sort_values(["_m", "_d", "path"], ascending=[False, False, True], kind="mergesort")
    return frame.drop(columns=["_m", "_d"]).reset_index(drop=True)
