// libFuzzer target: PE assembly text, assembled and, when valid, loaded onto a small core
// array and run for a bounded number of cycles (program errors are fine; crashes are not).

#include <cstddef>
#include <cstdint>
#include <string>

#include "hw/core/core_array.h"
#include "hw/isa/assembler.h"
#include "platforms/platform_spec.h"
#include "sim/config/diagnostics.h"
#include "sim/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto spec = wafersim::platforms::load_platform("tiny").spec;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<wafersim::hw::isa::Placement> placements;
  try {
    placements = wafersim::hw::isa::assemble(text, "fuzz.s");
  } catch (const wafersim::sim::config::ConfigError& e) {
    if (e.diagnostics().empty()) __builtin_trap();
    return 0;
  }
  wafersim::hw::CoreArray cores("cores", spec.wafer, {spec.fabric.colors, true});
  try {
    for (const auto& p : placements) cores.load(p);
    for (std::uint64_t c = 0; c < 5000; ++c) {
      cores.read(wafersim::sim::Cycle(c));
      cores.evaluate(wafersim::sim::Cycle(c));
      if (cores.write(wafersim::sim::Cycle(c)).is_never()) break;
    }
  } catch (const wafersim::sim::Error&) {
  }
  return 0;
}
