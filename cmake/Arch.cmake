# The x86-64 instruction set level the whole build targets (WAFERSIM_ARCH):
#   auto      x86-64-v3 (BMI1/2, LZCNT, POPCNT, AVX2: Haswell, Zen and later) when the compiler
#             offers it and this machine runs it, else the baseline: bit scans and variable
#             shifts in single instructions, and the fabric's take-in in AVX2 lanes
#             (fabric/link_take.h; docs/getting-started.md, "Build options")
#   baseline  the compiler's default (any x86-64), for binaries taken to other machines
#   <other>   passed as -march=<other> (native, x86-64-v2, znver3, ...), checked at configure time
# Floating-point results never depend on it: multiply-adds are not fused (-ffp-contract=off),
# so the same inputs give bit-identical statistics whatever the level.
set(WAFERSIM_ARCH "auto" CACHE STRING "x86-64 level: auto, baseline, or a -march value")

set(_wafersim_march "")
if(WAFERSIM_ARCH STREQUAL "auto")
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64" AND NOT CMAKE_CROSSCOMPILING)
    include(CheckCXXSourceRuns)
    set(CMAKE_REQUIRED_QUIET ON)
    check_cxx_source_runs(
      "int main() { __builtin_cpu_init(); return __builtin_cpu_supports(\"x86-64-v3\") ? 0 : 1; }"
      WAFERSIM_HOST_RUNS_X86_64_V3)
    unset(CMAKE_REQUIRED_QUIET)
    if(WAFERSIM_HOST_RUNS_X86_64_V3)
      set(_wafersim_march "x86-64-v3")
    endif()
  endif()
elseif(NOT WAFERSIM_ARCH STREQUAL "baseline")
  include(CheckCXXCompilerFlag)
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_compiler_flag("-march=${WAFERSIM_ARCH}" WAFERSIM_COMPILER_TAKES_MARCH_${WAFERSIM_ARCH})
  unset(CMAKE_REQUIRED_QUIET)
  if(NOT WAFERSIM_COMPILER_TAKES_MARCH_${WAFERSIM_ARCH})
    message(FATAL_ERROR "WAFERSIM_ARCH=${WAFERSIM_ARCH}: ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} "
                        "does not accept -march=${WAFERSIM_ARCH}; expected auto, baseline or a -march value it "
                        "knows (x86-64-v2, x86-64-v3, native, ...)")
  endif()
  set(_wafersim_march "${WAFERSIM_ARCH}")
endif()

if(_wafersim_march)
  add_compile_options(-march=${_wafersim_march})
  message(STATUS "wafersim: compiling for -march=${_wafersim_march} (WAFERSIM_ARCH=${WAFERSIM_ARCH})")
else()
  message(STATUS "wafersim: compiling for the baseline instruction set (WAFERSIM_ARCH=${WAFERSIM_ARCH})")
endif()
add_compile_options(-ffp-contract=off)
