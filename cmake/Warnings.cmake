# Project-wide compile options: warnings (kept at zero) and the optional sanitizers.
add_library(wafersim_options INTERFACE)
target_compile_options(wafersim_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                                  -Wold-style-cast -Wcast-align -Woverloaded-virtual)
if(WAFERSIM_WERROR)
  target_compile_options(wafersim_options INTERFACE -Werror)
endif()
if(NOT WAFERSIM_TRACE_HOOKS)
  target_compile_definitions(wafersim_options INTERFACE WAFERSIM_NO_TRACE_HOOKS)
endif()
if(WAFERSIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "WAFERSIM_FUZZ needs clang (CXX=clang++)")
  endif()
  target_compile_options(wafersim_options INTERFACE -fsanitize=fuzzer-no-link,address,undefined
                                                    -fno-omit-frame-pointer)
  target_link_options(wafersim_options INTERFACE -fsanitize=address,undefined)
endif()
if(WAFERSIM_SANITIZE)
  target_compile_options(wafersim_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                                    -fno-sanitize-recover=undefined)
  target_link_options(wafersim_options INTERFACE -fsanitize=address,undefined)
endif()
