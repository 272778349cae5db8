// libFuzzer target: a sweep folder as `wafersim collect` reads it (docs/sweeps.md). The input
// is split at lines "--8<--" into sweep.json, and point 0's done marker, status.json,
// stats.json and stdout.txt, written to a per-process folder and collected.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/app/sweep/collect.h"
#include "sim/app/sweep/sweep_dir.h"
#include "sim/errors.h"

namespace {

std::vector<std::string> parts(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  const std::string cut = "\n--8<--\n";
  while (out.size() < 4) {
    const std::size_t at = text.find(cut, start);
    if (at == std::string::npos) break;
    out.push_back(text.substr(start, at - start));
    start = at + cut.size();
  }
  out.push_back(text.substr(start));
  return out;
}

void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("wafersim-fuzz-collect-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "points/00000");
  const auto p = parts(std::string(reinterpret_cast<const char*>(data), size));
  const char* names[] = {"sweep.json", "points/00000/done", "points/00000/status.json", "points/00000/stats.json",
                         "points/00000/stdout.txt"};
  for (std::size_t i = 0; i < p.size(); ++i) write(dir / names[i], p[i]);
  try {
    auto s = wafersim::app::sweep::collect(wafersim::app::sweep::SweepDir(dir));
    (void)s;
  } catch (const wafersim::sim::InputError&) {
  }
  return 0;
}
