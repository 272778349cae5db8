#!/usr/bin/env bash
# A mesh decode over MPI ranks writes the stats.json and stats.txt of the one-process run, byte
# for byte: `mpirun -np K wafersim infer tiny-cluster --placement mesh` for K = 1 and 2 on a
# plan of two wafers with distinct regions (2 ranks: one each), functional (the token checked
# against the host) and timing-only; mesh.json names each rank's wafers and its cycles are the
# one-process run's. More ranks than regions, and another placement over ranks, are input
# errors (exit code 2) on every rank.
#   mpi_mesh_test.sh WAFERSIM
set -euo pipefail
wafersim=$1
command -v mpirun >/dev/null || { echo "SKIP: mpirun is not installed (scripts/setup installs openmpi-bin)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
work=$(mktemp -d /tmp/wafersim-mpi-mesh-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Eight layers of a small Llama-style decoder: tiny-cluster's wafers hold four each.
cat >"$work/wide.yaml" <<'YAML'
name: wide-llama
dtype: bf16
batch: 1
sequence: 64
transformer:
  d_model: 128
  heads: 8
  kv_heads: 2
  d_ff: 384
  layers: 8
  vocabulary: 256
  activation: swiglu
  norm: rmsnorm
  positions: rotary
  bias: false
YAML
run=(infer tiny-cluster --model "$work/wide.yaml" --placement mesh --prompt-len 5 --token 3)
for mode in functional timing; do
  extra=()
  [ $mode = timing ] && extra=(--timing-only)
  "$wafersim" "${run[@]}" "${extra[@]}" --out "$work/$mode-one" >"$work/$mode-one.txt" 2>&1 ||
    fail "one process ($mode): $(cat "$work/$mode-one.txt")"
  for k in 1 2; do
    out=$work/$mode-np$k
    mpirun -np $k --oversubscribe "$wafersim" "${run[@]}" "${extra[@]}" --out "$out" >"$out.txt" 2>&1 ||
      fail "mpirun -np $k ($mode): $(cat "$out.txt")"
    cmp "$work/$mode-one/stats.json" "$out/stats.json" || fail "stats.json of $k ranks ($mode) differs"
    cmp "$work/$mode-one/stats.txt" "$out/stats.txt" || fail "stats.txt of $k ranks ($mode) differs"
    python3 - "$work/$mode-one/mesh.json" "$out/mesh.json" $k $mode <<'PY' || fail "mesh.json of $k ranks ($mode)"
import json, sys
one, many, k = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
assert one["token"]["cycles"] == many["token"]["cycles"], (one["token"], many["token"])
assert [r["wafers"] for r in one["runs"]] == [r["wafers"] for r in many["runs"]] == [[0], [1]]
assert [[s["cycles"] for s in r["steps"]] for r in one["runs"]] == [[s["cycles"] for s in r["steps"]] for r in many["runs"]]
assert ("ranks" not in many) if k == 1 else many["ranks"] == [[0], [1]], many.get("ranks")
if sys.argv[4] == "functional":
    assert all(r["mismatches"] == 0 and r["compared"] > 0 for r in many["runs"]), many["runs"]
PY
  done
  grep -q "wafer 1 on MPI rank 1 of 2" "$work/$mode-np2.txt" || fail "the ranks are not reported: $(cat "$work/$mode-np2.txt")"
done

# More ranks than distinct regions, and the resident placement over ranks: input errors.
set +e
mpirun -np 3 --oversubscribe "$wafersim" "${run[@]}" --timing-only --out "$work/bad3" >"$work/bad3.txt" 2>&1
code=$?
set -e
[ $code = 2 ] || fail "3 ranks for 2 regions: exit code $code, expected 2: $(cat "$work/bad3.txt")"
grep -q "3 MPI ranks for 2 distinct wafer regions of the mesh plan: at most one rank per region" "$work/bad3.txt" ||
  fail "$(cat "$work/bad3.txt")"
set +e
mpirun -np 2 --oversubscribe "$wafersim" infer tiny --model tiny-mlp --placement streaming --out "$work/bad-resident" \
  >"$work/bad-resident.txt" 2>&1
code=$?
set -e
[ $code = 2 ] || fail "streaming over 2 ranks: exit code $code, expected 2: $(cat "$work/bad-resident.txt")"
grep -q "infer over 2 MPI ranks shares a mesh plan's wafer regions among them" "$work/bad-resident.txt" ||
  fail "$(cat "$work/bad-resident.txt")"
echo "PASS"
