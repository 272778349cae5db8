#!/usr/bin/env bash
# The installed package as a user's project sees it: `cmake --install` of this build into a
# temporary prefix, then examples/host_tlm configured, built and run as a project of its own
# against it (find_package(wafersim), #include <wafersim/...>), once as C++17 and once as
# C++20 (where the package says why SystemC's headers are compiled for the C++17 ABI).
#   install_test.sh CMAKE BUILD_DIR SOURCE_DIR
set -euo pipefail
cmake=$1 build=$2 src=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$cmake" --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in lib/cmake/wafersim/wafersimConfig.cmake lib/cmake/wafersim/wafersimTargets.cmake \
         include/wafersim/fabric/mesh.h include/wafersim/sim/errors.h bin/wafersim lib/libwafersim_sim.a; do
  [ -e "$work/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
# Every header's own includes ("folder/file.h") are installed beside it.
missing=$(cd "$work/prefix/include/wafersim" &&
  grep -rhoE '^#include "[^"]+"' --include='*.h' . | sed -E 's/#include "(.*)"/\1/' | sort -u |
  while read -r h; do [ -e "$h" ] || echo "$h"; done)
[ -z "$missing" ] || { echo "FAIL: installed headers include what is not installed: $missing"; exit 1; }
generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
for std in 17 20; do
  out="$work/host-$std"
  "$cmake" -S "$src/examples/host_tlm" -B "$out" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_STANDARD=$std -DCMAKE_PREFIX_PATH="$work/prefix" > "$out.configure.log" 2>&1 ||
    { cat "$out.configure.log"; echo "FAIL: configure as C++$std"; exit 1; }
  if [ $std = 20 ] && ! grep -q "wafersim: this project is C++20" "$out.configure.log"; then
    cat "$out.configure.log"; echo "FAIL: no word on C++20 and SystemC's ABI at configure"; exit 1
  fi
  "$cmake" --build "$out" > "$out.build.log" 2>&1 || { cat "$out.build.log"; echo "FAIL: build as C++$std"; exit 1; }
  SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "$out/host_tlm" > "$out.run.log" 2>&1 ||
    { cat "$out.run.log"; echo "FAIL: run as C++$std"; exit 1; }
  grep -q "0 error(s)" "$out.run.log" || { cat "$out.run.log"; echo "FAIL: wrong result as C++$std"; exit 1; }
done
echo "installed package: examples/host_tlm builds and runs against it as C++17 and C++20"
