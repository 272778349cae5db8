#!/usr/bin/env bash
# `pip install ./python` into a fresh virtual environment (Debian's pandas and numpy through
# --system-site-packages; --no-index: nothing may be downloaded), then the example of
# docs/python.md run from another folder against the installed package.
#   pip_install_test.sh PYTHON3 SOURCE_DIR WAFERSIM
set -euo pipefail
python3=$1 src=$2 binary=$3
if ! "$python3" -c "import venv, ensurepip, pandas, numpy" 2>/dev/null; then
  echo "SKIP: needs python3-venv, python3-pandas and python3-numpy (scripts/setup)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python3" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index "$src/python"
cd "$work"
installed=$("$work/venv/bin/python" -c "import wafersim; print(wafersim.__file__)")
case "$installed" in
  "$work/venv/"*) ;;
  *) echo "FAIL: wafersim imported from $installed, not the virtual environment"; exit 1 ;;
esac
mkdir out
"$work/venv/bin/python" "$src/examples/python/quickstart.py" "$binary" "$work/out" > example.txt
grep -q "^cycles: " example.txt || { echo "FAIL: the example printed no cycles"; cat example.txt; exit 1; }
grep -q "'wafer.clock': 'Hz'" example.txt || { echo "FAIL: the sweep's units"; cat example.txt; exit 1; }
echo "pip install ./python and docs/python.md's example: ok"
