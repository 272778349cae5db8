# Every dependency is a Debian package (scripts/setup); nothing is downloaded.
find_package(PkgConfig REQUIRED)
pkg_check_modules(SYSTEMC REQUIRED IMPORTED_TARGET systemc>=2.3.3)
find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
if(WAFERSIM_TESTS)
  find_package(GTest REQUIRED)
endif()
if(WAFERSIM_BENCH)
  find_package(benchmark REQUIRED)
endif()

# SystemC as one imported target that also pins the C++ ABI the library was built for.
add_library(wafersim_systemc INTERFACE)
target_link_libraries(wafersim_systemc INTERFACE PkgConfig::SYSTEMC Threads::Threads)
target_compile_definitions(wafersim_systemc INTERFACE SC_CPLUSPLUS=201703L)

# MPI (Open MPI from Debian: libopenmpi-dev, openmpi-bin) for a co-simulated cluster over
# processes (docs/parallel.md). On by default when found; OFF builds one-process runs only.
find_package(MPI COMPONENTS CXX QUIET)
option(WAFERSIM_MPI "Build the MPI transport: 'mpirun -np K wafersim train ...' spreads a cluster's wafers over ranks"
       ${MPI_CXX_FOUND})
if(WAFERSIM_MPI)
  find_package(MPI REQUIRED COMPONENTS CXX)
  find_program(WAFERSIM_MPIEXEC NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
endif()
