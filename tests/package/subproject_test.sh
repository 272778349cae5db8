#!/usr/bin/env bash
# wafersim added with add_subdirectory by a C++20 project: the configure says why wafersim's
# own targets stay C++17 and goes on; the parent's sources stay C++20, see SystemC's headers
# with the C++17 ABI through the wafersim:: target they link, and reach the headers as
# <wafersim/...>. Configures and compiles the parent's one source file, not the simulator.
#   subproject_test.sh CMAKE SOURCE_DIR
set -uo pipefail
cmake=$1 src=$2
command -v ninja > /dev/null || { echo "skipped: needs ninja"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/parent"
cat > "$work/parent/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(parent LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(WAFERSIM_TESTS OFF)
set(WAFERSIM_BENCH OFF)
add_subdirectory("$src" wafersim)
add_executable(parent main.cpp)
target_link_libraries(parent PRIVATE wafersim::sim)
CMAKE
cat > "$work/parent/main.cpp" <<'CPP'
#include <systemc>
#include <wafersim/sim/errors.h>
static_assert(__cplusplus >= 202002L, "the parent project stays C++20");
static_assert(SC_CPLUSPLUS == 201703L, "SystemC's headers are seen with the C++17 ABI");
int main() { return 0; }
CPP
out=$("$cmake" -S "$work/parent" -B "$work/build" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON 2>&1) ||
  { echo "$out"; echo "FAIL: a C++20 parent project does not configure"; exit 1; }
grep -q "wafersim: the parent project is C++20; wafersim's own targets build as C++17" <<<"$out" ||
  { echo "$out"; echo "FAIL: no word at configure on why wafersim stays C++17"; exit 1; }
db="$work/build/compile_commands.json"
grep -q -- '-std=c++17 .*-o wafersim/sim/' "$db" ||
  { echo "FAIL: wafersim's sources are not compiled as C++17"; exit 1; }
if grep -q -- '-std=c++20 .*-o wafersim/' "$db"; then echo "FAIL: a wafersim source compiled as C++20"; exit 1; fi
log=$(ninja -C "$work/build" CMakeFiles/parent.dir/main.cpp.o 2>&1) ||
  { echo "$log"; echo "FAIL: the parent's C++20 source does not compile against wafersim::sim"; exit 1; }
echo "subproject: a C++20 parent configures, stays C++20 and compiles against wafersim::sim"
