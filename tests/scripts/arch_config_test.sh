#!/usr/bin/env bash
# cmake/Arch.cmake: a WAFERSIM_ARCH the compiler does not take stops the configure with one
# message naming it (not a compiler error in every file later); a known one configures.
#   arch_config_test.sh SOURCE_DIR CMAKE
set -uo pipefail
src=$1 cmake=$2
[ "$(uname -m)" = x86_64 ] || { echo "skipped: not x86-64"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$("$cmake" -S "$src" -B "$tmp/bad" -DWAFERSIM_ARCH=no-such-cpu -DWAFERSIM_TESTS=OFF -DWAFERSIM_BENCH=OFF 2>&1)
rc=$?
[ $rc -ne 0 ] || { echo "FAIL: configure with WAFERSIM_ARCH=no-such-cpu succeeded"; exit 1; }
grep -q 'WAFERSIM_ARCH=no-such-cpu: .* does not accept -march=no-such-cpu' <<<"$out" ||
  { echo "FAIL: no message naming the value: $out"; exit 1; }
out=$("$cmake" -S "$src" -B "$tmp/good" -DWAFERSIM_ARCH=x86-64 -DWAFERSIM_TESTS=OFF -DWAFERSIM_BENCH=OFF 2>&1) ||
  { echo "FAIL: configure with WAFERSIM_ARCH=x86-64: $out"; exit 1; }
grep -q 'compiling for -march=x86-64 ' <<<"$out" || { echo "FAIL: -march=x86-64 not reported: $out"; exit 1; }
echo "arch config: ok"
