# wafersim_embed_files(OUTPUT file.cpp FUNCTION name BASE_DIR dir FILES a.yaml b.yaml)
# Generates a C++ source whose function `wafersim::generated::<name>()` returns each file's
# path (relative to BASE_DIR) and text, so presets ship inside the binary.
set(WAFERSIM_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/embed.cmake")
function(wafersim_embed_files)
  cmake_parse_arguments(ARG "" "OUTPUT;FUNCTION;BASE_DIR" "FILES" ${ARGN})
  string(REPLACE ";" "|" files_arg "${ARG_FILES}")
  add_custom_command(
    OUTPUT "${ARG_OUTPUT}"
    COMMAND ${CMAKE_COMMAND} "-DFILES=${files_arg}" "-DOUTPUT=${ARG_OUTPUT}" "-DBASE_DIR=${ARG_BASE_DIR}"
            "-DFUNCTION=${ARG_FUNCTION}" -P "${WAFERSIM_EMBED_SCRIPT}"
    DEPENDS ${ARG_FILES} "${WAFERSIM_EMBED_SCRIPT}"
    COMMENT "Embedding ${ARG_FUNCTION}"
    VERBATIM)
endfunction()
