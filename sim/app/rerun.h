#pragma once
// Exact reruns: a run folder keeps the command line as a list (run.json "argv") and a copy of
// every file it names (inputs/, with the files those name in turn), recorded in rerun.json,
// so `wafersim rerun DIR` repeats the run from the folder alone and writes the same
// stats.json byte for byte (docs/cli.md).

#include <filesystem>
#include <string>
#include <vector>

namespace wafersim::app {

// The command line this process was started with, one element per argument.
std::vector<std::string>& invocation_args();

// Copies every regular file the command line names (a whole argument, or the VALUE of
// --option=VALUE) into DIR/inputs/N/, and for YAML files every relative path inside them
// that names a file below their folder (base:, mask files), keeping that relative path;
// writes DIR/rerun.json ({"format": "wafersim-rerun/1", version, argv without the output
// folder, cwd, inputs: [{arg, prefix, original, copy}]}), the same for identical runs into
// different folders. Throws sim::InputError when a copy cannot be written.
void capture_inputs(const std::filesystem::path& dir);

// The arguments (without the program) that repeat the run in `run_dir`: its rerun.json's
// argv with every captured file replaced by its copy (absolute) and the output folder
// replaced by `out` (no --out when `out` is empty: the command's default folder). Throws
// sim::InputError naming the file when the folder has no readable rerun.json.
std::vector<std::string> rerun_args(const std::filesystem::path& run_dir, const std::string& out);

}  // namespace wafersim::app
