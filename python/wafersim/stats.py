"""The statistics file of a run (stats.json) as flat rows: one per scalar, vector element and
distribution field, each with the unit and description its statistic declares."""

import json
import os

import pandas as pd


class FormatError(ValueError):
    """A file that is not what wafersim writes (names the file and what was expected)."""


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise FormatError(f"{path}: cannot read it: {e.strerror}") from e
    except ValueError as e:
        raise FormatError(f"{path}: not JSON: {e}") from e


def stats_path(path):
    """The stats.json of a run folder, or `path` itself when it names a file."""
    path = os.fspath(path)
    return os.path.join(path, "stats.json") if os.path.isdir(path) else path


def read_stats(path):
    """The parsed stats.json of a run folder (or file); FormatError when it is not one."""
    file = stats_path(path)
    if not os.path.exists(os.fspath(path)):
        raise FormatError(f"{os.fspath(path)}: no such run folder or stats.json")
    j = read_json(file)
    if not isinstance(j, dict) or not isinstance(j.get("stats"), dict):
        raise FormatError(f'{file}: not a wafersim statistics file (expected JSON with a "stats" object)')
    return j


def flatten(tree, prefix=""):
    """(path, value) for every leaf: vector elements as path.N, distribution fields as
    path.mean, path.p99, ...; booleans as 0/1, nulls as None."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from flatten(v, f"{prefix}.{i}")
    elif isinstance(tree, bool):
        yield prefix, float(tree)
    elif isinstance(tree, (int, float)):
        yield prefix, tree
    else:
        yield prefix, None


def describe(descriptions, path):
    """(unit, description) of the statistic at `path` or its nearest ancestor."""
    p = path
    while p:
        d = descriptions.get(p)
        if isinstance(d, dict):
            return d.get("unit", ""), d.get("description", "")
        if "." not in p:
            break
        p = p.rsplit(".", 1)[0]
    return "", ""


def stats_table(j):
    """A DataFrame (path, value, unit, description), in the file's order."""
    descriptions = j.get("descriptions") or {}
    rows = []
    for path, value in flatten(j["stats"]):
        unit, text = describe(descriptions, path)
        rows.append((path, value, unit, text))
    return pd.DataFrame(rows, columns=["path", "value", "unit", "description"])
