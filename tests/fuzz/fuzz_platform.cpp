// libFuzzer target: platform YAML text (with `base:` to the built-in presets and units).
// Any input must end in a resolved platform or a ConfigError; nothing else may escape.

#include <cstddef>
#include <cstdint>
#include <string>

#include "platforms/platform_spec.h"
#include "sim/config/diagnostics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto p = wafersim::platforms::load_platform_text(text, "fuzz.yaml");
    (void)p;
  } catch (const wafersim::sim::config::ConfigError& e) {
    if (e.diagnostics().empty()) __builtin_trap();
  }
  return 0;
}
