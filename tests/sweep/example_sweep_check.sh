# Sourced by the backend tests: runs the example sweeps of docs/sweeps.md (fabric queue depth x hop
# latency on synthetic traffic; a compiled, checked model against queue depth and accumulation
# format) through a backend and checks that every point succeeds and that the results equal
# those of the local pool, column for column except wall time.
#   example_sweep_check WAFERSIM SOURCE_DIR WORK BACKEND [backend args...]
example_sweep_check() {
  local wafersim=$1 src=$2 work=$3 backend=$4
  shift 4
  local name points
  for name in fabric-queue-hop:16 compiled-mlp-queue:8; do
    points=${name#*:}
    name=${name%:*}
    local spec=$src/sweeps/$name.yaml local=$work/$name-local remote=$work/$name-$backend
    "$wafersim" sweep "$spec" --out "$local" --jobs 2 >/dev/null || fail "local $name sweep failed"
    "$wafersim" sweep "$spec" --out "$remote" --backend "$backend" "$@" >/dev/null ||
      fail "$backend $name sweep failed"
    "$wafersim" collect "$remote" >/dev/null || fail "collect of the $backend $name sweep failed"
    "$wafersim" collect "$local" >/dev/null
    local cols
    cols=$(head -1 "$local/results.csv" | tr ',' '\n' | grep -nvx wall_seconds | cut -d: -f1 | paste -sd,)
    local a b
    a=$(cut -d, -f"$cols" "$local/results.csv")
    b=$(cut -d, -f"$cols" "$remote/results.csv")
    [ "$(grep -c ',ok,' <<<"$b")" = "$points" ] || fail "$backend $name: not $points ok points:
$b"
    [ "$a" = "$b" ] || fail "$backend $name differs from the local pool:
$b
local:
$a"
  done
}
