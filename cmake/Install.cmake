# The installable package: `cmake --install BUILD --prefix P` puts the libraries in P/lib, the
# headers in P/include/wafersim/<folder>/..., the `wafersim` executable in P/bin and the CMake
# package in P/lib/cmake/wafersim, whose wafersim:: targets carry the include directories, the
# C++17 requirement and the SystemC ABI definition (docs/package.md).
#
# Include directories: a consumer writes `#include <wafersim/fabric/mesh.h>` (P/include); the
# headers themselves include each other from the repository root (`#include "sim/..."`), which
# P/include/wafersim resolves. Inside this build the same spelling works through
# BUILD/include/wafersim, a link to the source tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(WAFERSIM_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/wafersim")

file(MAKE_DIRECTORY "${PROJECT_BINARY_DIR}/include")
file(CREATE_LINK "${PROJECT_SOURCE_DIR}" "${PROJECT_BINARY_DIR}/include/wafersim" SYMBOLIC)

# Contract: call once, after every library has been added. Exports every wafersim_* library
# as wafersim::<name without the prefix> (wafersim::sim, wafersim::platforms, ...) and
# wafersim::wafersim, all of them; the same names are aliases inside the build, for a project
# that adds wafersim with add_subdirectory.
function(wafersim_install)
  _wafersim_collect_targets("${PROJECT_SOURCE_DIR}" targets)
  set(libraries "")
  set(header_folders "")
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(t MATCHES "^wafersim_" AND type MATCHES "LIBRARY$")
      string(REGEX REPLACE "^wafersim_" "" name "${t}")
      set_target_properties(${t} PROPERTIES EXPORT_NAME "${name}")
      add_library(wafersim::${name} ALIAS ${t})
      list(APPEND libraries ${t})
      # Its headers install with its top-level folder (sim/app's with sim/).
      get_target_property(dir ${t} SOURCE_DIR)
      file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${dir}")
      string(REGEX MATCH "^[^/]+" folder "${rel}")
      if(folder AND NOT folder STREQUAL "tests")
        list(APPEND header_folders ${folder})
      endif()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES header_folders)
  target_include_directories(wafersim_sim PUBLIC
    "$<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>"
    "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>"
    "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/wafersim>")
  target_compile_features(wafersim_sim PUBLIC cxx_std_17)

  add_library(wafersim_all INTERFACE)
  set(linkable ${libraries})
  list(REMOVE_ITEM linkable wafersim_options)
  target_link_libraries(wafersim_all INTERFACE ${linkable})
  set_target_properties(wafersim_all PROPERTIES EXPORT_NAME wafersim)
  add_library(wafersim::wafersim ALIAS wafersim_all)

  install(TARGETS ${libraries} wafersim_all EXPORT wafersimTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(TARGETS wafersim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  foreach(folder IN LISTS header_folders)
    install(DIRECTORY "${PROJECT_SOURCE_DIR}/${folder}/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/wafersim/${folder}"
            FILES_MATCHING PATTERN "*.h")
  endforeach()
  install(EXPORT wafersimTargets NAMESPACE wafersim:: DESTINATION "${WAFERSIM_INSTALL_CMAKEDIR}")
  configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/wafersimConfig.cmake.in"
                                "${PROJECT_BINARY_DIR}/wafersimConfig.cmake"
                                INSTALL_DESTINATION "${WAFERSIM_INSTALL_CMAKEDIR}")
  write_basic_package_version_file("${PROJECT_BINARY_DIR}/wafersimConfigVersion.cmake"
                                   COMPATIBILITY SameMinorVersion)
  install(FILES "${PROJECT_BINARY_DIR}/wafersimConfig.cmake" "${PROJECT_BINARY_DIR}/wafersimConfigVersion.cmake"
          DESTINATION "${WAFERSIM_INSTALL_CMAKEDIR}")
endfunction()
