#!/usr/bin/env bash
# scripts/bench-pair: two pairs of a small fabric_profile run print their rates, ratios and the
# median; bad arguments and a program that prints no rate are errors with their exit codes.
#   bench_pair_test.sh SOURCE_DIR FABRIC_PROFILE
set -uo pipefail
src=$1 prof=$2
[ "$(nproc)" -ge 2 ] || { echo "skipped: needs two cores"; exit 77; }
command -v taskset >/dev/null || { echo "skipped: no taskset"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
out=$("$src/scripts/bench-pair" -n 2 "$prof" "$prof" 4 0.1 1000) || fail "two pairs exited $?"
[ "$(grep -cE '^[12] [0-9.]+ [0-9.]+ [0-9.]+$' <<<"$out")" -eq 2 ] || fail "expected two pair lines: $out"
grep -qE '^median B/A [0-9.]+ over 2 pairs' <<<"$out" || fail "no median line: $out"
"$src/scripts/bench-pair" --help | grep -q 'K RATE CYCLES' || fail "--help does not name the arguments"
err=$("$src/scripts/bench-pair" -n 0 "$prof" "$prof" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q 'positive whole number' <<<"$err" || fail "-n 0: exit $rc, '$err'"
err=$("$src/scripts/bench-pair" /nonexistent "$prof" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q '/nonexistent is not an executable' <<<"$err" || fail "missing binary: exit $rc, '$err'"
err=$("$src/scripts/bench-pair" "$prof" "$prof" 4 0.1 2>&1); rc=$?
[ $rc -eq 2 ] || fail "two of three profile arguments: exit $rc"
err=$("$src/scripts/bench-pair" -n 1 /bin/true "$prof" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q 'no rate' <<<"$err" || fail "a program without a rate: exit $rc, '$err'"
echo "bench-pair: ok"
