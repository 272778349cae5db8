// libFuzzer target: model YAML (graph or transformer; `base:` to the built-in model presets).

#include <cstddef>
#include <cstdint>
#include <string>

#include "models/model_spec.h"
#include "sim/config/diagnostics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto m = wafersim::models::load_model_text(text, "fuzz.yaml");
    (void)m.spec.parameters();
    (void)m.spec.forward_flops();
  } catch (const wafersim::sim::config::ConfigError& e) {
    if (e.diagnostics().empty()) __builtin_trap();
  }
  return 0;
}
