#!/usr/bin/env bash
# Fabric regression check: runs every case in `cases` and compares the SHA-256 of its
# stats.json, exit code and error output with `expected` (recorded from the model before
# the fabric was optimised, so faster code must give bit-identical results).
#   check.sh WAFERSIM [SOURCE_DIR]            compare (exit 1 on any difference)
#   check.sh WAFERSIM [SOURCE_DIR] --record   rewrite `expected`
set -euo pipefail
bin=$1
src=${2:-$(cd "$(dirname "$0")/../../.." && pwd)}
record=${3:-}
here="$src/tests/golden/fabric"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src"
# stats.json without the PE core array's group and the run's energy (both added after the
# digests were recorded; the traffic runs never load a core), re-serialised exactly as the
# simulator writes it.
fabric_only() {
  python3 -c '
import json, sys
d = json.load(sys.stdin)
d["stats"].pop("energy", None)
for w in d["stats"].values():
    w.pop("cores", None)
d["descriptions"] = {k: v for k, v in d["descriptions"].items() if ".cores." not in k and not k.startswith("energy.")}
sys.stdout.write(json.dumps(d, indent=1) + "\n")'
}
actual="$tmp/actual"
: >"$actual"
while IFS='|' read -r name args; do
  name=$(echo "$name" | xargs)
  case "$name" in '' | \#*) continue ;; esac
  code=0
  # shellcheck disable=SC2086
  "$bin" $args --out "$tmp/$name" >/dev/null 2>"$tmp/$name.err" || code=$?
  sed -i "s|$tmp/$name|OUT|g" "$tmp/$name.err"
  stats=none
  [ -f "$tmp/$name/stats.json" ] && stats=$(fabric_only <"$tmp/$name/stats.json" | sha256sum | cut -c1-64)
  echo "$name exit=$code stats=$stats stderr=$(sha256sum <"$tmp/$name.err" | cut -c1-64)" >>"$actual"
done <"$here/cases"
if [ "$record" = "--record" ]; then
  cp "$actual" "$here/expected"
  cat "$here/expected"
  exit 0
fi
if diff "$here/expected" "$actual"; then
  echo "fabric golden: $(wc -l <"$actual") cases identical"
else
  echo "fabric golden: results differ from $here/expected (lines above: < expected, > actual)"
  exit 1
fi
