#!/usr/bin/env bash
# A co-simulated cluster over MPI ranks writes the stats.json and stats.txt of the one-process
# run, byte for byte: `mpirun -np K wafersim train` for K = 1, 2 and 3 on a 3-wafer tiny cluster (3 ranks:
# one wafer each; 2: wafers {0, 1} and {2}), timing only and --functional, with 2 threads per
# rank; run.json reports the ranks. Bad rank counts are input errors (exit code 2); a wafer's
# limit on another rank ends the run with its exit code (4).
#   mpi_cluster_test.sh WAFERSIM
set -euo pipefail
wafersim=$1
command -v mpirun >/dev/null || { echo "SKIP: mpirun is not installed (scripts/setup installs openmpi-bin)"; exit 77; }
# Containers run tests as root; Open MPI refuses that unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No network interfaces needed: every rank on this host, shared memory between them.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
work=$(mktemp -d /tmp/wafersim-mpi-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

run=(train tiny-cluster --set cluster.systems=3 --model tiny-mlp --steps 2)
for mode in timing functional; do
  extra=()
  [ $mode = functional ] && extra=(--functional)
  "$wafersim" "${run[@]}" "${extra[@]}" --out "$work/$mode-one" >"$work/$mode-one.txt" 2>&1 ||
    fail "one process ($mode): $(cat "$work/$mode-one.txt")"
  for k in 1 2 3; do
    out=$work/$mode-np$k
    mpirun -np $k --oversubscribe "$wafersim" "${run[@]}" "${extra[@]}" --threads 2 --out "$out" >"$out.txt" 2>&1 ||
      fail "mpirun -np $k ($mode): $(cat "$out.txt")"
    cmp "$work/$mode-one/stats.json" "$out/stats.json" || fail "stats.json of $k ranks ($mode) differs"
    cmp "$work/$mode-one/stats.txt" "$out/stats.txt" || fail "stats.txt of $k ranks ($mode) differs"
    if [ $k -gt 1 ]; then
      grep -q "2 host threads on each of $k MPI ranks" "$out.txt" || fail "the ranks are not reported: $(cat "$out.txt")"
    fi
    python3 - "$out/run.json" $k <<'PY' || fail "run.json of $k ranks ($mode)"
import json, sys
ranks = json.load(open(sys.argv[1]))["ranks"]
k = int(sys.argv[2])
assert ranks["ranks"] == k, ranks
groups = {1: [[0, 3]], 2: [[0, 2], [2, 3]], 3: [[0, 1], [1, 2], [2, 3]]}[k]
assert [m["wafers"] for m in ranks["members"]] == groups, ranks
assert all(m["threads"] == 2 and m["windows"] > 0 and m["busy_seconds"] > 0 for m in ranks["members"]), ranks
PY
  done
  # Only rank 0 writes: one output folder, and its losses are the one-process run's.
  if [ $mode = functional ]; then
    grep -A4 '"losses"' "$work/$mode-one/training.json" >"$work/l1"
    grep -A4 '"losses"' "$work/$mode-np3/training.json" >"$work/l3"
    cmp "$work/l1" "$work/l3" || fail "losses differ over 3 ranks"
  fi
done

# More ranks than wafers, and the replay (one process): input errors on every rank.
set +e
mpirun -np 4 --oversubscribe "$wafersim" "${run[@]}" --out "$work/bad4" >"$work/bad4.txt" 2>&1
code=$?
set -e
[ $code = 2 ] || fail "4 ranks for 3 wafers: exit code $code, expected 2: $(cat "$work/bad4.txt")"
grep -q "4 MPI ranks for 3 wafers: at most one rank per wafer" "$work/bad4.txt" || fail "$(cat "$work/bad4.txt")"
set +e
mpirun -np 2 --oversubscribe "$wafersim" "${run[@]}" --cluster-model replay --out "$work/replay" >"$work/replay.txt" 2>&1
code=$?
set -e
[ $code = 2 ] || fail "replay on 2 ranks: exit code $code, expected 2: $(cat "$work/replay.txt")"
grep -q "runs in one process, not on 2 MPI ranks" "$work/replay.txt" || fail "$(cat "$work/replay.txt")"
[ ! -e "$work/replay" ] || fail "a refused run left an output folder"
# A wafer's limit on another rank ends every rank with the limit's exit code (4).
set +e
mpirun -np 3 --oversubscribe "$wafersim" "${run[@]}" --max-cycles 500 --out "$work/limit" >"$work/limit.txt" 2>&1
code=$?
set -e
[ $code = 4 ] || fail "--max-cycles over 3 ranks: exit code $code, expected 4: $(cat "$work/limit.txt")"
grep -q "wafer [0-9] reached 500 cycles" "$work/limit.txt" || fail "$(cat "$work/limit.txt")"
echo "PASS"
