#!/usr/bin/python3
"""Plots the yield curve of `wafersim yield --json` (docs/defects.md).

  plot_yield.py YIELD.json [--out yield.png]

Left: the share of wafers that present their logical grid against the defect density, one line
per core area (the same silicon in cores of that size), the closed form for independent defects
dashed. Right: the mean hops per logical link on those wafers. The point asked for is marked.
Uses Debian's python3-matplotlib (installed by scripts/setup).
"""

import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(study):
    """Per core area, its points in density order."""
    by_area = {}
    for p in study["curve"]:
        by_area.setdefault(p["core_area_mm2"], []).append(p)
    for points in by_area.values():
        points.sort(key=lambda p: p["density_per_mm2"])
    return by_area


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", help="the output of wafersim yield --json")
    ap.add_argument("--out", default="yield.png", help="image to write (default: yield.png)")
    args = ap.parse_args(argv)
    with open(args.json, encoding="utf-8") as f:
        study = json.load(f)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for area, points in sorted(series(study).items()):
        d = [p["density_per_mm2"] for p in points]
        label = f"{area:g} mm² ({points[0]['logical_cores']:,} cores)"
        line = left.plot(d, [100 * p["yield"] for p in points], marker="o", label=label)[0]
        left.plot(d, [100 * p["independent_yield"] for p in points], ls="--", color=line.get_color(), lw=0.8)
        good = [p for p in points if p["good"]]
        right.plot([p["density_per_mm2"] for p in good], [p["mean_stretch"] for p in good], marker="o", label=label)
    pt = study["point"]
    left.plot([pt["density_per_mm2"]], [100 * pt["yield"]], "k*", ms=12, label="asked for")
    title = study.get("platform", "")
    left.set(xscale="log", xlabel="defects per mm²", ylabel="wafers presenting the grid (%)",
             title=f"{title}: yield (dashed: independent-defect closed form)")
    right.set(xscale="log", xlabel="defects per mm²", ylabel="hops per logical link", title="detours' stretch")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
