// libFuzzer target: sweep specs (docs/sweeps.md), validated against the real command table.
// The reader takes a path, so each input is written to a per-process temporary file.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "sim/app/cli.h"
#include "sim/app/sweep/spec.h"
#include "sim/config/diagnostics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto catalog = wafersim::app::sweep_catalog();
  static const std::string path = "/tmp/wafersim-fuzz-sweep-" + std::to_string(::getpid()) + ".yaml";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    auto spec = wafersim::app::sweep::read_spec(path, catalog);
    (void)spec;
  } catch (const wafersim::sim::config::ConfigError& e) {
    if (e.diagnostics().empty()) __builtin_trap();
  }
  return 0;
}
