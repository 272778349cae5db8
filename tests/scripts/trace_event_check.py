#!/usr/bin/env python3
"""Checks a Chrome trace-event JSON file (the format Perfetto and chrome://tracing open).

Rules from the Trace Event Format document: a JSON object with a traceEvents array (or a
bare array); every event an object with a known phase "ph"; name, pid, tid and a numeric
timestamp "ts" (microseconds) where the phase needs them; complete events ("X") with a
non-negative "dur"; counters ("C") with numeric args; metadata ("M") naming processes and
threads; instants ("i"/"I") with scope g, p or t. Perfetto also needs the complete events of
one thread to nest: two slices on a track either follow each other or one contains the other.

    trace_event_check.py FILE...      exit 0 when every file is valid, 1 otherwise
"""
import json
import numbers
import sys

PHASES = set("BEXiICbneSTpFsftPONDMRc()")
METADATA = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}


def is_number(v):
    return isinstance(v, numbers.Number) and not isinstance(v, bool)


def validate(path):
    """Returns (list of problems, number of events)."""
    problems = []
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            return [f"{path}: not JSON: {e}"], 0
    if isinstance(doc, dict):
        events = doc.get("traceEvents")
        if not isinstance(events, list):
            return [f"{path}: the object has no traceEvents array"], 0
        unit = doc.get("displayTimeUnit", "ms")
        if unit not in ("ms", "ns"):
            problems.append(f"{path}: displayTimeUnit must be ms or ns, not {unit!r}")
    elif isinstance(doc, list):
        events = doc
    else:
        return [f"{path}: neither an object nor an array"], 0

    slices = {}
    for i, e in enumerate(events):
        where = f"{path}: event {i}"
        if not isinstance(e, dict):
            problems.append(f"{where}: not an object")
            continue
        ph = e.get("ph")
        if not isinstance(ph, str) or ph not in PHASES:
            problems.append(f"{where}: unknown phase {ph!r}")
            continue
        if "args" in e and not isinstance(e["args"], dict):
            problems.append(f"{where}: args must be an object")
        for key in ("pid", "tid"):
            if key in e and not isinstance(e[key], int):
                problems.append(f"{where}: {key} must be an integer")
        if ph == "M":
            if e.get("name") not in METADATA:
                problems.append(f"{where}: unknown metadata {e.get('name')!r}")
            args = e.get("args", {})
            if e.get("name", "").endswith("_name") and not isinstance(args.get("name"), str):
                problems.append(f"{where}: {e.get('name')} needs args.name")
            if e.get("name", "").endswith("_sort_index") and not isinstance(args.get("sort_index"), int):
                problems.append(f"{where}: {e.get('name')} needs an integer args.sort_index")
            if "pid" not in e:
                problems.append(f"{where}: metadata needs a pid")
            continue
        if not isinstance(e.get("name"), str):
            problems.append(f"{where}: name must be a string")
        if "pid" not in e or "tid" not in e:
            problems.append(f"{where}: pid and tid are required")
        ts = e.get("ts")
        if not is_number(ts) or ts < 0:
            problems.append(f"{where}: ts must be a non-negative number of microseconds")
            continue
        if ph == "X":
            dur = e.get("dur")
            if not is_number(dur) or dur < 0:
                problems.append(f"{where}: a complete event needs a non-negative dur")
                continue
            # in whole nanoseconds, as Perfetto keeps them
            start = round(ts * 1000)
            slices.setdefault((e.get("pid"), e.get("tid")), []).append((start, start + round(dur * 1000), i))
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(is_number(v) for v in args.values()):
                problems.append(f"{where}: a counter needs numeric args")
        elif ph in "iI":
            if e.get("s", "t") not in ("g", "p", "t"):
                problems.append(f"{where}: instant scope must be g, p or t")

    # Complete events of one thread nest: a stack of open slices, sorted by start (longer first).
    for track, spans in slices.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, i in spans:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1]:
                problems.append(f"{path}: event {i} on pid {track[0]} tid {track[1]} overlaps event "
                                f"{stack[-1][2]} without nesting in it")
            stack.append((start, end, i))
    return problems, len(events)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    bad = 0
    for path in argv[1:]:
        problems, n = validate(path)
        for p in problems[:20]:
            print(p)
        if problems:
            bad += 1
            print(f"{path}: {len(problems)} problem(s) in {n} events")
        else:
            print(f"{path}: valid trace-event JSON, {n} events")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
