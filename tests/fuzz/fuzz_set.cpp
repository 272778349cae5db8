// libFuzzer target: `--set` overrides (one per input line) applied to the tiny preset.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "platforms/platform_spec.h"
#include "sim/config/diagnostics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> sets;
  for (std::string line; std::getline(in, line) && sets.size() < 16;) sets.push_back(line);
  try {
    wafersim::platforms::load_platform("tiny", sets);
  } catch (const wafersim::sim::config::ConfigError& e) {
    if (e.diagnostics().empty()) __builtin_trap();
  }
  return 0;
}
