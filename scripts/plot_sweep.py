#!/usr/bin/python3
"""Plots the results of a wafersim sweep (the results.csv of `wafersim collect`).

  plot_sweep.py RESULTS.csv --metric M --x P                 M against parameter P
  plot_sweep.py RESULTS.csv --metric M --x P --series Q      one line per value of Q
  plot_sweep.py RESULTS.csv --metric M --x P --y Q           a heat map of M over P and Q
  plot_sweep.py RESULTS.csv --pareto M1 M2 [--maximize M2]   the Pareto front of two metrics

Only points with status ok are drawn. `wafersim collect` writes parameters with a unit as
numbers in their base unit (Hz, B, b/s, s, cycles) and every column's unit in the sidecar
RESULTS.units.json, which labels the axes. Older tables with text values ("850 MHz",
"1.2 GHz") are converted to base units when the prefixes differ. Axes are sorted numerically.
Uses Debian's python3-matplotlib and python3-pandas (installed by scripts/setup).
"""

import argparse
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/]+)\s*$")


_PREFIXES = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "m": 1e-3, "u": 1e-6, "n": 1e-9,
             "p": 1e-12, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_BASES = ("params/s", "cycles", "b/s", "B/s", "Hz", "B", "s")


def split_unit(unit):
    """(factor, base) of a unit with an SI or IEC prefix ("MHz" -> (1e6, "Hz")), or (1, unit)."""
    for base in _BASES:
        if unit.endswith(base) and unit[: len(unit) - len(base)] in _PREFIXES:
            return _PREFIXES[unit[: len(unit) - len(base)]], base
    return 1.0, unit


def numeric_column(series):
    """Returns (numbers, unit) for a column of numbers or of numbers sharing one base unit."""
    as_numbers = pd.to_numeric(series, errors="coerce")
    if as_numbers.notna().all():
        return as_numbers, ""
    units = set()
    values = []
    for text in series.astype(str):
        m = _QUANTITY.match(text)
        if not m:
            return None, ""
        factor, base = split_unit(m.group(2))
        values.append(float(m.group(1)) * factor)
        units.add(base)
    if len(units) != 1:
        return None, ""
    return pd.Series(values, index=series.index), units.pop()


_UNITS = {}  # column -> unit, from the units sidecar (or the sweep.json) beside the CSV


def label(name, unit):
    unit = unit or _UNITS.get(name, "")
    return f"{name} ({unit})" if unit else name


def load_units(csv_path):
    """Reads the columns' units from the CSV's units sidecar (RESULTS.units.json) or, for
    tables collected before it existed, the parameters' units from the sweep.json beside it."""
    sidecar = os.path.splitext(os.path.abspath(csv_path))[0] + ".units.json"
    try:
        with open(sidecar, encoding="utf-8") as f:
            return {k: v for k, v in json.load(f).get("columns", {}).items() if v}
    except (OSError, ValueError, AttributeError):
        pass
    path = os.path.join(os.path.dirname(os.path.abspath(csv_path)), "sweep.json")
    try:
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
        return {p["key"]: p.get("unit", "") for p in plan.get("parameters", []) if p.get("unit")}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def pareto_front(frame, first, second, maximize=()):
    """Index labels of the rows no other row dominates, ordered by `first`.

    A row dominates another when it is at least as good in both metrics and better in one;
    metrics are minimised unless named in `maximize`.
    """
    sign_a = -1.0 if first in maximize else 1.0
    sign_b = -1.0 if second in maximize else 1.0
    rows = sorted(
        ((sign_a * float(frame.at[i, first]), sign_b * float(frame.at[i, second]), i) for i in frame.index),
        key=lambda r: (r[0], r[1]),
    )
    front = []
    best_b = None
    for a, b, i in rows:
        if best_b is None or b < best_b:
            front.append(i)
            best_b = b
    return front


def ok_rows(frame):
    if "status" in frame.columns:
        frame = frame[frame["status"] == "ok"]
    if frame.empty:
        sys.exit("plot_sweep: no point finished ok; nothing to plot")
    return frame


def need(frame, *columns):
    for c in columns:
        if c not in frame.columns:
            sys.exit(f"plot_sweep: no column '{c}'; the columns are: {', '.join(frame.columns)}")


def plot_metric(frame, args, ax):
    need(frame, args.metric, args.x)
    y, y_unit = numeric_column(frame[args.metric])
    x, x_unit = numeric_column(frame[args.x])
    if y is None:
        sys.exit(f"plot_sweep: metric '{args.metric}' is not numeric")
    data = frame.assign(_x=x if x is not None else frame[args.x].astype(str), _y=y)
    if args.y:
        need(frame, args.y)
        q, q_unit = numeric_column(frame[args.y])
        data = data.assign(_q=q if q is not None else frame[args.y].astype(str))
        table = data.pivot_table(index="_q", columns="_x", values="_y", aggfunc="mean").sort_index()
        image = ax.imshow(table.values, origin="lower", aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(table.columns)), [f"{v:g}" if isinstance(v, float) else str(v) for v in table.columns])
        ax.set_yticks(range(len(table.index)), [f"{v:g}" if isinstance(v, float) else str(v) for v in table.index])
        for r in range(table.shape[0]):
            for c in range(table.shape[1]):
                v = table.values[r, c]
                if pd.notna(v):
                    ax.text(c, r, f"{v:.3g}", ha="center", va="center", color="white", fontsize=8)
        ax.figure.colorbar(image, ax=ax, label=label(args.metric, y_unit))
        ax.set_xlabel(label(args.x, x_unit))
        ax.set_ylabel(label(args.y, q_unit))
        return
    groups = [(None, data)]
    if args.series:
        need(frame, args.series)
        s, s_unit = numeric_column(frame[args.series])
        data = data.assign(_s=s if s is not None else frame[args.series].astype(str))
        groups = [(f"{args.series} = {k:g}{' ' + s_unit if s_unit else ''}" if isinstance(k, float) else
                   f"{args.series} = {k}", g) for k, g in data.groupby("_s", sort=True)]
    for name, g in groups:
        g = g.groupby("_x", sort=True)["_y"].mean()
        ax.plot(list(g.index), list(g.values), marker="o", label=name)
    if args.series:
        ax.legend(fontsize=8)
    ax.set_xlabel(label(args.x, x_unit))
    ax.set_ylabel(label(args.metric, y_unit))
    if args.logx:
        ax.set_xscale("log", base=2)
    if args.logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)


def plot_pareto(frame, args, ax):
    first, second = args.pareto
    need(frame, first, second)
    a, a_unit = numeric_column(frame[first])
    b, b_unit = numeric_column(frame[second])
    if a is None or b is None:
        sys.exit("plot_sweep: both Pareto metrics must be numeric")
    data = frame.assign(**{first: a, second: b})
    front = pareto_front(data, first, second, args.maximize)
    ax.scatter(data[first], data[second], color="0.7", label="points")
    ax.plot(data.loc[front, first], data.loc[front, second], marker="o", color="C3", label="Pareto front")
    params = [c for c in frame.columns if c not in ("index", "status", "exit_code", "wall_seconds", first, second)
              and c in args.params]
    for i in front:
        text = (", ".join(f"{p.split('.')[-1]}={frame.at[i, p]}" for p in params) if params else
                f"point {frame.at[i, 'index']}")
        ax.annotate(text, (data.at[i, first], data.at[i, second]), fontsize=7, xytext=(4, 4),
                    textcoords="offset points")
    ax.set_xlabel(label(first, a_unit) + (" (higher is better)" if first in args.maximize else ""))
    ax.set_ylabel(label(second, b_unit) + (" (higher is better)" if second in args.maximize else ""))
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return front


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", help="results.csv written by `wafersim collect` (or by the sweep itself)")
    p.add_argument("--metric", help="the metric column to plot")
    p.add_argument("--x", help="the parameter on the horizontal axis")
    p.add_argument("--y", help="a second parameter: draws a heat map")
    p.add_argument("--series", help="a second parameter: one line per value")
    p.add_argument("--pareto", nargs=2, metavar=("M1", "M2"), help="draw the Pareto front of two metrics")
    p.add_argument("--maximize", action="append", default=[], metavar="M",
                   help="a Pareto metric where higher is better (repeatable; default: lower is better)")
    p.add_argument("--params", nargs="*", default=[], help="parameters to label Pareto points with")
    p.add_argument("--logx", action="store_true", help="logarithmic (base 2) horizontal axis")
    p.add_argument("--logy", action="store_true", help="logarithmic vertical axis")
    p.add_argument("--title", help="the plot's title (default: the sweep folder's name)")
    p.add_argument("--size", nargs=2, type=float, default=(6.0, 4.0), metavar=("W", "H"), help="inches")
    p.add_argument("--dpi", type=int, default=100)
    p.add_argument("-o", "--output", help="the PNG (or SVG, PDF) to write; default beside the CSV")
    args = p.parse_args(argv)
    if bool(args.pareto) == bool(args.metric):
        p.error("give either --metric (with --x) or --pareto")
    if args.metric and not args.x:
        p.error("--metric needs --x")
    if args.y and args.series:
        p.error("--y and --series exclude each other")

    _UNITS.update(load_units(args.csv))
    frame = ok_rows(pd.read_csv(args.csv, dtype=str, keep_default_na=False))
    fig, ax = plt.subplots(figsize=tuple(args.size))
    if args.pareto:
        front = plot_pareto(frame, args, ax)
        default = f"pareto-{args.pareto[0]}-{args.pareto[1]}.png"
        print(f"Pareto front: points {', '.join(str(frame.at[i, 'index']) for i in front)}")
    else:
        plot_metric(frame, args, ax)
        default = f"{args.metric}-vs-{args.x}" + (f"-{args.y}" if args.y else "") + ".png"
    ax.set_title(args.title or os.path.basename(os.path.dirname(os.path.abspath(args.csv))), fontsize=10)
    fig.tight_layout()
    out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.csv)), default.replace("/", "_"))
    fig.savefig(out, dpi=args.dpi)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
