// libFuzzer target: two statistics files as `wafersim diff A B` reads them (docs/cli.md). The
// input is split at a line "--8<--" into A's and B's stats.json, written to a per-process
// folder, compared and printed as JSON. Any input must compare or end in an InputError.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "sim/app/run_diff.h"
#include "sim/errors.h"
#include "tests/fuzz/input_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("wafersim-fuzz-diff-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto p = wafersim::fuzz::split_input(data, size, 2);
  wafersim::fuzz::write_file(dir / "a.json", p[0]);
  wafersim::fuzz::write_file(dir / "b.json", p.size() > 1 ? p[1] : p[0]);
  try {
    const auto d = wafersim::app::diff_runs(dir / "a.json", dir / "b.json");
    (void)wafersim::app::to_json(d).dump();
  } catch (const wafersim::sim::InputError&) {
  }
  return 0;
}
