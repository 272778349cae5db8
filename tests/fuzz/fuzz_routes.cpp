// libFuzzer target: route-table YAML (docs/routes.md) checked against an 8 x 8 mesh with
// 8 edge channels per side and 24 colors. Any input must load or end in a ConfigError.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fabric/route_loader.h"
#include "sim/config/diagnostics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const wafersim::fabric::MeshGeometry geometry(8, 8, 8);
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto table = wafersim::fabric::parse_routes(text, "fuzz.yaml", geometry, 24);
    (void)table;
  } catch (const wafersim::sim::config::ConfigError& e) {
    if (e.diagnostics().empty()) __builtin_trap();
  }
  return 0;
}
