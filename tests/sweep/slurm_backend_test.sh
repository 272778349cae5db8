#!/usr/bin/env bash
# `wafersim sweep --backend slurm` against a real single-node Slurm started on localhost by
# scripts/slurm-local (munged, slurmctld, slurmd; proctrack/linuxproc, task/none, no
# accounting daemon): a small array runs to completion (polling squeue, not sbatch --wait),
# a failing point is recorded beside passing ones, and resubmitting runs only what is left.
#   slurm_backend_test.sh WAFERSIM SOURCE_DIR
set -euo pipefail
wafersim=$1
src=$2
PATH=$PATH:/usr/sbin
for tool in munged slurmctld slurmd sbatch squeue; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/setup installs slurm-wlm and munge)"
    exit 77
  fi
done

work=$(mktemp -d /tmp/wafersim-slurm-XXXXXX)
cleanup() {
  "$src/scripts/slurm-local" stop "$work/slurm" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/out/slurm/*.out "$work/slurm/slurmctld.log" "$work/slurm/slurmd.log"; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}

eval "$("$src/scripts/slurm-local" start "$work/slurm")"

cat >"$work/s.yaml" <<'YAML'
sweep:
  name: slurm-test
  platform: tiny
  workload: {command: run, max-cycles: 250}
  parameters:
    - {key: fabric.queue_depth, values: [1, 2]}
    - {key: workload.cycles, values: [100, 200, 300]}
  constraints: ["fabric.queue_depth == 1 || workload.cycles < 300"]
  metrics: [cluster.wafer0.cycles]
YAML

# Wait for a job array to leave the queue by polling squeue.
wait_for_job() {
  local job=$1 deadline=$((SECONDS + 90))
  while [ -n "$(squeue --noheader --jobs "$job" 2>/dev/null || true)" ]; do
    [ $SECONDS -lt $deadline ] || fail "job $job still queued after 90 s: $(squeue --jobs "$job")"
    sleep 0.5
  done
}

"$wafersim" sweep "$work/s.yaml" --out "$work/out" --backend slurm --time 5:00 --mem 64M --jobs 3 >"$work/submit.txt" ||
  fail "submission failed: $(cat "$work/submit.txt")"
job=$(cat "$work/out/slurm/job_id")
grep -q "submitted 5 of 5 points as Slurm job array $job" "$work/submit.txt" || fail "unexpected: $(cat "$work/submit.txt")"
script=$work/out/slurm/sweep.sbatch
for line in "#SBATCH --array=0-4%3" "#SBATCH --time=5:00" "#SBATCH --mem=64M" "#SBATCH --job-name=wafersim-slurm-test"; do
  grep -qxF -- "$line" "$script" || fail "no '$line' in $script"
done
wait_for_job "$job"

for i in 0 1 2 3 4; do
  [ -f "$work/out/points/0000$i/done" ] || fail "point $i has no done marker"
done
"$wafersim" collect "$work/out" >/dev/null || fail "collect failed"
expected='index,fabric.queue_depth,workload.cycles,status,exit_code,cluster.wafer0.cycles
0,1,100,ok,0,100
1,1,200,ok,0,200
2,1,300,failed,4,
3,2,100,ok,0,100
4,2,200,ok,0,200'
actual=$(cut -d, -f1-5,7 "$work/out/results.csv")
[ "$actual" = "$expected" ] || fail "results.csv:
$actual
expected:
$expected"
grep -q -- "--max-cycles 250 reached" "$work/out/points/00002/status.json" || fail "point 2 has no stderr tail"
ls "$work/out/slurm/${job}_"*.out >/dev/null || fail "no task logs"

# Resubmitting with point 3 unfinished (its marker removed) runs only point 3; --follow polls
# squeue until the array has left the queue.
rm "$work/out/points/00003/done"
before=$(cat "$work/out/points/00000/status.json")
"$wafersim" sweep "$work/s.yaml" --out "$work/out" --backend slurm --follow --json >"$work/follow.json" && rc=0 || rc=$?
[ "$rc" = 3 ] || fail "resubmission exit code $rc (expected 3: point 2 failed before)"
grep -qxF "#SBATCH --array=3" "$script" || fail "resubmitted array is not just point 3: $(grep array "$script")"
python3 - "$work/follow.json" <<'PY' || fail "summary: $(cat "$work/follow.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["backend"] == "slurm" and s["ok"] == 1 and s["failed"] == 0, s
assert s["finished_before"] == 4 and s["failed_before"] == 1 and s["left"] == 0, s
PY
[ -f "$work/out/points/00003/done" ] || fail "point 3 was not rerun"
[ "$before" = "$(cat "$work/out/points/00000/status.json")" ] || fail "point 0 was rerun"

# Nothing left: nothing is submitted.
"$wafersim" sweep "$work/s.yaml" --out "$work/out" --backend slurm >"$work/none.txt"
grep -q "nothing to submit" "$work/none.txt" || fail "unexpected: $(cat "$work/none.txt")"
# The example sweep of README.md (16 traffic points) on Slurm equals the local pool's.
source "$src/tests/sweep/example_sweep_check.sh"
example_sweep_check "$wafersim" "$src" "$work" slurm --follow --time 5:00
echo "PASS: Slurm array of 5 points, resubmission of 1, example sweep of 16 points"
