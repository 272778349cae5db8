// libFuzzer target: a sweep folder as `wafersim collect` reads it (docs/sweeps.md). The input
// is split at lines "--8<--" into sweep.json, and point 0's done marker, status.json,
// stats.json and stdout.txt, written to a per-process folder and collected.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/app/sweep/collect.h"
#include "sim/app/sweep/sweep_dir.h"
#include "sim/errors.h"
#include "tests/fuzz/input_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("wafersim-fuzz-collect-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "points/00000");
  const auto p = wafersim::fuzz::split_input(data, size, 5);
  const char* names[] = {"sweep.json", "points/00000/done", "points/00000/status.json", "points/00000/stats.json",
                         "points/00000/stdout.txt"};
  for (std::size_t i = 0; i < p.size(); ++i) wafersim::fuzz::write_file(dir / names[i], p[i]);
  try {
    auto s = wafersim::app::sweep::collect(wafersim::app::sweep::SweepDir(dir));
    (void)s;
  } catch (const wafersim::sim::InputError&) {
  }
  return 0;
}
