# Sourced by the backend tests: runs the README's example sweep (fabric queue depth x hop
# latency on synthetic traffic) through a backend and checks that every point succeeds and
# that the results equal those of the local pool, column for column except wall time.
#   example_sweep_check WAFERSIM SOURCE_DIR WORK BACKEND [backend args...]
example_sweep_check() {
  local wafersim=$1 src=$2 work=$3 backend=$4
  shift 4
  local spec=$src/sweeps/fabric-queue-hop.yaml
  "$wafersim" sweep "$spec" --out "$work/example-local" --jobs 2 >/dev/null || fail "local example sweep failed"
  "$wafersim" sweep "$spec" --out "$work/example-$backend" --backend "$backend" "$@" >/dev/null ||
    fail "$backend example sweep failed"
  "$wafersim" collect "$work/example-$backend" >/dev/null || fail "collect of the $backend example failed"
  "$wafersim" collect "$work/example-local" >/dev/null
  local cols
  cols=$(head -1 "$work/example-local/results.csv" | tr ',' '\n' | grep -nvx wall_seconds | cut -d: -f1 | paste -sd,)
  local a b
  a=$(cut -d, -f"$cols" "$work/example-local/results.csv")
  b=$(cut -d, -f"$cols" "$work/example-$backend/results.csv")
  [ "$(grep -c ',ok,' <<<"$b")" = 16 ] || fail "$backend example: not 16 ok points:
$b"
  [ "$a" = "$b" ] || fail "$backend example differs from the local pool:
$b
local:
$a"
}
