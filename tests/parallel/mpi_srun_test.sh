#!/usr/bin/env bash
# A co-simulated cluster launched by Slurm's srun (the ranks started through PMIx, no mpirun)
# on a single-node Slurm started by scripts/slurm-local: 2 ranks write the stats.json of the
# one-process run, byte for byte.
#   mpi_srun_test.sh WAFERSIM SOURCE_DIR
set -euo pipefail
wafersim=$1
src=$2
PATH=$PATH:/usr/sbin
for tool in munged slurmctld slurmd srun; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/setup installs slurm-wlm and munge)"; exit 77; }
done
work=$(mktemp -d /tmp/wafersim-srun-XXXXXX)
cleanup() {
  "$src/scripts/slurm-local" stop "$work/slurm" || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/slurm/slurmd.log" ] && tail -n 15 "$work/slurm/slurmd.log" >&2
  exit 1
}
eval "$("$src/scripts/slurm-local" start "$work/slurm")"
srun --mpi=list 2>&1 | grep -q pmix || { echo "SKIP: this Slurm has no PMIx plugin (slurm-wlm-basic-plugins)"; exit 77; }

run=(train tiny-cluster --model tiny-mlp --steps 1 --functional)
"$wafersim" "${run[@]}" --out "$work/one" >"$work/one.txt" 2>&1 || fail "one process: $(cat "$work/one.txt")"
# PMIx puts its rendezvous files under TMPDIR.
TMPDIR=$work timeout 120 srun --mpi=pmix -n 2 --oversubscribe "$wafersim" "${run[@]}" --out "$work/srun" \
  >"$work/srun.txt" 2>&1 || fail "srun -n 2: $(cat "$work/srun.txt")"
cmp "$work/one/stats.json" "$work/srun/stats.json" || fail "stats.json over 2 srun ranks differs"
grep -q '"ranks": 2' "$work/srun/run.json" || fail "run.json does not report 2 ranks: $(cat "$work/srun/run.json")"
echo "PASS"
