#!/usr/bin/env python3
"""Opens `wafersim report` pages in headless Chromium and checks what they show.

    report_browser_test.py WAFERSIM [--keep DIR] [--screenshot PNG] [--screenshot-exec PNG]

Runs a hotspot traffic run, a PE pipeline (`wafersim exec`), a weight-streaming loop and a
co-simulated training run with tracing, writes their reports and loads each page in Debian's Chromium (headless, no network, a fresh profile), driven over the
DevTools protocol on a pipe (--remote-debugging-pipe; no extra packages). Fails on any console
error or uncaught exception, and checks the rendered page: the number of heatmap cells, the
hotspot and busiest-link tables, the PE heatmaps and tables, the power density map and power over time, the absent
sections, the window slider, SVG export, the bandwidth chart and the step table. Also checks the runs' Perfetto JSON against the trace-event
format (trace_event_check.py) and that their VCD parses. Exits 77 (skipped) without Chromium.
"""
import argparse
import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_event_check  # noqa: E402

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars"]


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Browser:
    """Chromium driven over --remote-debugging-pipe: requests on fd 3, replies on fd 4, NUL-separated JSON."""

    def __init__(self, chromium, profile, width=1300, height=2400):
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        # Chromium reads fd 3 and writes fd 4: move our ends above them first, then place them.
        high_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
        os.close(to_child_r)
        os.close(from_child_w)

        def fds():
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
             "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(high_r)
        os.close(high_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def close(self):
        try:
            self.send("Browser.close", session=False, wait=False)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_child)
        os.close(self.from_child)

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise Failure("Chromium did not answer in time")
            chunk = os.read(self.from_child, 1 << 16)
            if not chunk:
                raise Failure("Chromium closed the DevTools pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method, params=None, session=True, wait=True, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        if not wait:
            return None
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise Failure(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout=30):
        deadline = time.monotonic() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self._read_message(deadline)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def open(self, url):
        targets = self.send("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable")
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def eval(self, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise Failure(f"evaluating {expression!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def problems(self):
        """Console errors and warnings, uncaught exceptions and error log entries seen so far."""
        # Drain whatever is pending without blocking for long.
        try:
            self.send("Runtime.evaluate", {"expression": "0"})
        except Failure:
            pass
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')} "
                           f"{p['exceptionDetails'].get('exception', {}).get('description', '')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p['args']]}")
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry']['text']} ({p['entry'].get('url', '')})")
        return out

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, WAFERSIM_NO_PROGRESS="1", SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1"))
    if r.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}")
    return r.stdout


def parse_vcd(path):
    """Returns (variables, value changes); raises Failure on anything malformed."""
    with open(path, encoding="ascii") as f:
        tokens = f.read().split()
    i, names, scopes, ids = 0, [], [], set()
    while i < len(tokens) and tokens[i] != "$enddefinitions":
        t = tokens[i]
        if t == "$scope":
            scopes.append(tokens[i + 2])
        elif t == "$upscope":
            check(scopes, "VCD: $upscope without $scope")
            scopes.pop()
        elif t == "$var":
            check(int(tokens[i + 2]) >= 1, "VCD: variable width")
            ids.add(tokens[i + 3])
            names.append(".".join(scopes + [tokens[i + 4]]))
        if t.startswith("$"):
            while tokens[i] != "$end":
                i += 1
        i += 1
    check(i < len(tokens), "VCD: no $enddefinitions")
    check(not scopes, "VCD: unclosed scope")
    i += 2
    now, changes = -1, 0
    while i < len(tokens):
        t = tokens[i]
        if t.startswith("#"):
            check(int(t[1:]) >= now, f"VCD: time goes back at {t}")
            now = int(t[1:])
        elif t.startswith("b"):
            check(set(t[1:]) <= set("01xz") and tokens[i + 1] in ids, f"VCD: bad vector change {t}")
            i += 1
            changes += 1
        elif t[0] in "01xz":
            check(t[1:] in ids, f"VCD: bad scalar change {t}")
            changes += 1
        elif t == "$comment":
            while tokens[i] != "$end":
                i += 1
        else:
            check(t in ("$dumpvars", "$end", "$dumpall", "$dumpon", "$dumpoff"), f"VCD: unexpected {t}")
        i += 1
    return names, changes


def stalled_keys(csv_path):
    """(x, y, dir, color) with credit stalls over the run, from the window table."""
    import csv
    totals = {}
    with open(csv_path, newline="") as f:
        for r in csv.DictReader(f):
            k = (r["x"], r["y"], r["dir"], r["color"])
            totals[k] = totals.get(k, 0) + int(r["stalled"])
    return sum(1 for v in totals.values() if v > 0)


def check_power(b):
    """The power density map (every region draws at least its leakage) and power over time."""
    titles = b.eval("Array.from(document.querySelectorAll('svg[id^=power-density] rect.cell title')).map(t => t.textContent)")
    check(len(titles) == 64 and all(not t.endswith(": 0") for t in titles), f"power density cells: {titles[:4]}")
    lines = b.eval("document.querySelectorAll('svg[id^=power-time] path').length")
    check(lines == 4, f"expected the wafer's power and 3 components over time, found {lines} lines")
    check("Power over time" in b.eval("document.body.innerText"), "the page has no power over time")


def check_traffic_page(b, run_dir):
    check(b.eval("document.body.dataset.reportReady") == "1", "the page did not finish drawing")
    maps = b.eval("Array.from(document.querySelectorAll('svg.heatmap')).map(s => [s.id, s.querySelectorAll('rect.cell').length])")
    check(len(maps) == 8, f"expected 8 heatmaps (power density, 5 link directions, stalls, occupancy), found {len(maps)}")
    for name, cells in maps:
        check(cells == 64, f"heatmap {name} has {cells} cells, expected 8 x 8 = 64")
    check_power(b)
    first = b.eval("(() => { const r = document.querySelector('#hotspots-w0 tbody tr');"
                   " return [r.dataset.x, r.dataset.y, r.dataset.dir, r.cells[1].textContent]; })()")
    check(first[:3] == ["5", "3", "north"], f"the top hotspot should be (5, 3) north into the hot router, found {first}")
    rows = b.eval("document.querySelectorAll('#hotspots-w0 tbody tr').length")
    expect = min(20, stalled_keys(os.path.join(run_dir, "trace/fabric-w0.csv")))
    check(expect >= 1 and rows == expect, f"expected {expect} hotspot rows (links and colors that stalled), found {rows}")
    busiest = b.eval("(() => { const r = document.querySelector('#busiest-w0 tbody tr'); return [r.dataset.x, r.dataset.y, r.dataset.dir]; })()")
    check(busiest == ["5", "2", "ramp"], f"the busiest link should be the hot router's ramp, found {busiest}")
    text = b.eval("document.body.innerText")
    for absent in ("PE busy", "SRAM usage", "Not recorded: no PE ran a program in this run",
                   "Not recorded: no MemoryX or SwarmX in this run", "Not recorded: no training steps in this run",
                   "exactly the run's statistics"):
        check(absent in text, f"the page does not say {absent!r}")
    # Moving the slider redraws the maps for that frame.
    label = b.eval("(() => { const s = document.querySelector('input[type=range]'); s.value = 0;"
                   " s.dispatchEvent(new Event('input')); return document.querySelector('.frame-label').textContent; })()")
    check(label.startswith("frame 1 of "), f"the slider did not move to frame 1: {label!r}")
    svg = b.eval("wafersimReport.exportSvg(document.querySelector('svg.heatmap').id)")
    check(svg.startswith("<?xml") and "<svg" in svg and svg.count("class=\"cell\"") == 64, "SVG export")
    charts = b.eval("document.querySelectorAll('svg.chart path').length")
    check(charts >= 3, f"expected the three throughput charts, found {charts} lines")


def check_exec_page(b, run_dir):
    check(b.eval("document.body.dataset.reportReady") == "1", "the page did not finish drawing")
    maps = b.eval("Array.from(document.querySelectorAll('svg.heatmap')).map(s => [s.id, s.querySelectorAll('rect.cell').length])")
    check(len(maps) == 12,
          f"expected 12 heatmaps (power density, PE busy, PE stalls, SRAM in use, SRAM accesses, 7 fabric), found {len(maps)}")
    for name, cells in maps:
        check(cells == 64, f"heatmap {name} has {cells} cells, expected 8 x 8 = 64")
    check_power(b)
    # Every PE runs a program (pipeline.s): every cell of the PE busy map is colored above zero.
    titles = b.eval("Array.from(document.querySelectorAll('svg[id^=pe-busy] rect.cell title')).map(t => t.textContent)")
    check(len(titles) == 64 and all(not t.endswith(": 0") for t in titles), f"PE busy cells: {titles[:4]}")
    # The rows held up by the PEs computing exponentials, 2 and 3, are busy longest.
    first = b.eval("(() => { const r = document.querySelectorAll('#busiest-pes-w0 tbody tr'); return Array.from(r).slice(0, 16).map(x => [x.dataset.x, x.dataset.y, x.cells[5].textContent]); })()")
    check(len(first) == 16 and all(f[1] in ("2", "3") for f in first), f"the 16 busiest PEs should be rows 2 and 3, found {first}")
    causes = b.eval("Array.from(document.querySelectorAll('#pe-causes-w0 tr')).map(r => r.cells[0].textContent)")
    check(len(causes) == 10 and causes[1] == "busy", f"the cause table: {causes}")
    text = b.eval("document.body.innerText")
    for want in ("PE cores over time", "Busiest PEs", "the windows add up to the cores' statistics exactly",
                 "Not recorded: no layer phases in this run"):
        check(want in text, f"the page does not say {want!r}")
    check("Not recorded: no PE" not in text, "the PE panels are marked absent")
    svg = b.eval("wafersimReport.exportSvg(document.querySelector('svg[id^=pe-busy]').id)")
    check(svg.count("class=\"cell\"") == 64, "SVG export of the PE busy map")


def check_loop_page(b, run_dir):
    check(b.eval("document.body.dataset.reportReady") == "1", "the page did not finish drawing")
    lines = b.eval("document.querySelectorAll('#bandwidth path').length")
    check(lines >= 3, f"expected MemoryX and SwarmX bandwidth lines, found {lines}")
    steps = b.eval("document.querySelectorAll('#steps tr').length")
    check(steps == 3, f"expected a header and 2 step rows, found {steps}")
    links = b.eval("document.querySelectorAll('#links tr').length")
    check(links == 7, f"expected a header and 6 links, found {links}")
    text = b.eval("document.body.innerText")
    check("Not recorded: this run simulated no wafer fabric" in text, "the fabric section is not marked absent")
    check(b.eval("wafersimReport.exportSvg('steps-chart')").count("<rect") >= 4, "SVG export of the step chart")


def check_train_page(b, run_dir):
    check(b.eval("document.body.dataset.reportReady") == "1", "the page did not finish drawing")
    text = b.eval("document.body.innerText")
    check("Weights from MemoryX into the wafers, gradients back" in text, "no weight and gradient path section")
    # One switch level: the wafers' gradient links go to the root, whose link goes to MemoryX.
    series = b.eval("Array.from(document.querySelectorAll('.legend')).map(function (l) { return l.innerText; }).join('|')")
    for name in ("MemoryX out (weights)", "SwarmX down (weights)", "wafer edges into the meshes (weights)",
                 "meshes into wafer edges (gradients)", "wafer edges out (gradients)", "MemoryX in (gradients)"):
        check(name in series, f"the bandwidth chart has no line '{name}'")
    edges = b.eval("document.querySelectorAll('#edges tr').length")
    check(edges == 3, f"expected a header and 2 wafer edges, found {edges}")
    wafers = b.eval("document.querySelectorAll('select[aria-label=wafer] option').length")
    check(wafers == 2, f"expected a selector of 2 wafers, found {wafers}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wafersim")
    ap.add_argument("--keep", help="write the runs here and keep them")
    ap.add_argument("--screenshot", help="save a PNG of the traffic report")
    ap.add_argument("--screenshot-exec", help="save a PNG of the exec (PE program) report")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("chromium is not installed (scripts/setup installs it): skipped")
        return 77
    work = args.keep or tempfile.mkdtemp(prefix="wafersim-report-")
    try:
        traffic, loop, pipe = os.path.join(work, "hotspot"), os.path.join(work, "loop"), os.path.join(work, "pipe")
        run([args.wafersim, "traffic", "tiny", "--pattern", "hotspot", "--hotspot", "5,2", "--hotspot-fraction", "0.3",
             "--rate", "0.05", "--warmup", "200", "--measure", "2000", "--seed", "3",
             "--trace", "windows,timeline,vcd", "--trace-pes", "5,2:5,3", "-o", traffic])
        run([args.wafersim, "report", traffic])
        run([args.wafersim, "stream-loop", "tiny-cluster", "--params", "1e6", "--layers", "3", "--steps", "2",
             "--forward-rate", "400 Gb/s", "--backward-rate", "200 Gb/s", "--trace", "windows,timeline", "-o", loop])
        run([args.wafersim, "report", loop, "-o", os.path.join(loop, "page.html")])
        programs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../examples/programs")
        run([args.wafersim, "exec", "tiny", "--program", os.path.join(programs, "pipeline.s"), "--routes",
             os.path.join(programs, "pipeline-routes.yaml"), "--trace", "windows,timeline", "--trace-pes", "3,2:5,2",
             "-o", pipe])
        run([args.wafersim, "report", pipe])
        train = os.path.join(work, "train")
        run([args.wafersim, "train", "tiny-cluster", "--model", "tiny-mlp", "--steps", "2", "--trace", "windows,timeline",
             "-o", train])
        run([args.wafersim, "report", train])

        for timeline in (os.path.join(traffic, "trace/timeline.json"), os.path.join(loop, "trace/timeline.json"),
                         os.path.join(pipe, "trace/timeline.json"), os.path.join(train, "trace/timeline.json")):
            problems, n = trace_event_check.validate(timeline)
            check(not problems, "\n".join(problems[:10]))
            check(n > 10, f"{timeline}: only {n} events")
        names, changes = parse_vcd(os.path.join(traffic, "trace/routers.vcd"))
        check(len(names) == 30 and changes > 100, f"VCD: {len(names)} variables, {changes} changes")

        for run_dir, page, checker in ((traffic, os.path.join(traffic, "report.html"), check_traffic_page),
                                       (pipe, os.path.join(pipe, "report.html"), check_exec_page),
                                       (loop, os.path.join(loop, "page.html"), check_loop_page),
                                       (train, os.path.join(train, "report.html"), check_train_page)):
            profile = tempfile.mkdtemp(prefix="wafersim-chromium-")
            b = Browser(chromium, profile)
            try:
                b.open("file://" + os.path.abspath(page))
                checker(b, run_dir)
                if args.screenshot and checker is check_traffic_page:
                    b.screenshot(args.screenshot)
                if args.screenshot_exec and checker is check_exec_page:
                    b.screenshot(args.screenshot_exec)
                problems = b.problems()
                check(not problems, f"{page}: console problems:\n" + "\n".join(problems))
            finally:
                b.close()
                shutil.rmtree(profile, ignore_errors=True)
            print(f"ok: {page}")
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
