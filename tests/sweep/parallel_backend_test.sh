#!/usr/bin/env bash
# `wafersim sweep --backend parallel`: GNU parallel with a job log runs the points; a sweep
# killed with SIGKILL midway resumes (parallel --resume, reconciled with the done markers),
# a failing point is recorded beside passing ones and only --retry-failed runs it again, and
# --sshloginfile spreads points over the hosts listed (here ':' = this machine).
#   parallel_backend_test.sh WAFERSIM
set -euo pipefail
wafersim=$1
src=$2
if ! command -v parallel >/dev/null; then
  echo "SKIP: GNU parallel is not installed (scripts/setup installs it)"
  exit 77
fi
work=$(mktemp -d /tmp/wafersim-parallel-XXXXXX)
launcher=
cleanup() {
  [ -n "$launcher" ] && kill -9 "$launcher" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$work/out/parallel/joblog" "$work/out/parallel/stderr.log" "$work/run1.err"; do
    [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }
  done
  exit 1
}

cat >"$work/slow.sh" <<'SH'
#!/bin/sh
sleep 0.4
exec "$@"
SH
chmod +x "$work/slow.sh"
cat >"$work/s.yaml" <<'YAML'
sweep:
  name: parallel-test
  platform: tiny
  workload: {command: run, wrapper: ./slow.sh, max-cycles: 650}
  parameters: [{key: workload.cycles, range: {from: 100, to: 800, step: 100}}]
  metrics: [cluster.wafer0.cycles]
YAML
out=$work/out
done_count() { ls "$out"/points/*/done 2>/dev/null | wc -l; }
# Whether a process of this sweep is still alive (read from /proc: no procps needed).
sweep_alive() {
  local p
  for p in /proc/[0-9]*; do
    tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "--out $out" && return 0
  done
  return 1
}

# Run 1, killed with SIGKILL once two points have finished.
"$wafersim" sweep "$work/s.yaml" --out "$out" --backend parallel --jobs 2 >/dev/null 2>"$work/run1.err" &
launcher=$!
deadline=$((SECONDS + 30))
until [ "$(done_count)" -ge 2 ]; do
  [ $SECONDS -lt $deadline ] || fail "no two points finished in 30 s"
  sleep 0.05
done
kill -9 "$launcher"
wait "$launcher" 2>/dev/null || true
launcher=
# Point runners started by parallel finish what they started; wait until none holds a point.
deadline=$((SECONDS + 10))
while sweep_alive; do
  [ $SECONDS -lt $deadline ] || fail "point runners still alive"
  sleep 0.1
done
finished=$(done_count)
[ "$finished" -lt 8 ] || fail "the sweep finished before it was killed"
for d in "$out"/points/*; do
  if [ -f "$d/done" ]; then
    [ "$(cat "$d/done")" = ok ] || fail "$d: $(cat "$d/done")"
    python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$d/status.json" || fail "$d/status.json unreadable"
  fi
done

# Run 2 resumes through --sshloginfile (':' is this machine): only unfinished points run.
echo ":" >"$work/hosts"
"$wafersim" sweep "$work/s.yaml" --out "$out" --backend parallel --jobs 4 --sshloginfile "$work/hosts" --json \
  >"$work/run2.json" && rc=0 || rc=$?
[ "$rc" = 3 ] || fail "run 2 exit code $rc (expected 3: points 6 and 7 exceed --max-cycles)"
[ "$(done_count)" = 8 ] || fail "not every point finished after resuming"
python3 - "$work/run2.json" "$finished" <<'PY' || fail "run 2 summary: $(cat "$work/run2.json")"
import json, sys
s = json.load(open(sys.argv[1])); before = int(sys.argv[2])
assert s["backend"] == "parallel" and s["finished_before"] == before, s
assert s["ok"] + s["failed"] == 8 - before and s["left"] == 0, s
assert s["failed"] + s["failed_before"] == 2, s
PY
# The job log holds each point once, by sequence number = index + 1.
seqs=$(tail -n +2 "$out/parallel/joblog" | cut -f1 | sort -n | tr '\n' ' ')
[ "$seqs" = "1 2 3 4 5 6 7 8 " ] || fail "job log sequence numbers: $seqs"
exits=$(tail -n +2 "$out/parallel/joblog" | sort -n | cut -f7 | tr '\n' ' ')
[ "$exits" = "0 0 0 0 0 0 4 4 " ] || fail "job log exit values: $exits"
"$wafersim" collect "$out" >/dev/null
actual=$(cut -d, -f1-4,6 "$out/results.csv")
expected='index,workload.cycles,status,exit_code,cluster.wafer0.cycles
0,100,ok,0,100
1,200,ok,0,200
2,300,ok,0,300
3,400,ok,0,400
4,500,ok,0,500
5,600,ok,0,600
6,700,failed,4,
7,800,failed,4,'
[ "$actual" = "$expected" ] || fail "results.csv:
$actual"

# Run 3: nothing left to run; run 4 with --retry-failed reruns exactly the two failures.
"$wafersim" sweep "$work/s.yaml" --out "$out" --backend parallel --json >"$work/run3.json" || true
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['finished_before']==8 and s['ok']+s['failed']==0, s" \
  "$work/run3.json" || fail "run 3: $(cat "$work/run3.json")"
"$wafersim" sweep "$work/s.yaml" --out "$out" --backend parallel --retry-failed --json >"$work/run4.json" || true
python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['finished_before']==6 and s['failed']==2 and s['failed_points']==[6,7], s" \
  "$work/run4.json" || fail "run 4: $(cat "$work/run4.json")"
[ "$(grep -c -- '--retry-failed' "$out/parallel/joblog")" = 2 ] || fail "retry did not go through parallel --resume-failed"
# The example sweep of README.md (16 traffic points) through GNU parallel equals the local pool's.
source "$src/tests/sweep/example_sweep_check.sh"
example_sweep_check "$wafersim" "$src" "$work" parallel
echo "PASS: parallel backend, killed after $finished of 8 points, resumed; example sweep of 16 points"
