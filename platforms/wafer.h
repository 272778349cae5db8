#pragma once
// One wafer (one CS-X system) as a SystemC module: its clock-domain engine and, as they
// land, the mesh fabric, the PE cores and the edge I/O.

#include <systemc>

#include <cstdint>
#include <memory>

#include "platforms/platform_spec.h"
#include "sim/engine/engine.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms {

struct BuildOptions {
  bool idle_skip = true;
  sim::Cycle max_cycles = sim::Cycle::never();
  std::uint64_t seed = 1;
};

class Wafer : public sc_core::sc_module {
 public:
  Wafer(const sc_core::sc_module_name& name, const PlatformSpec& spec, const BuildOptions& options,
        sim::stats::Group& stats);

  [[nodiscard]] sim::Engine& engine() { return engine_; }
  [[nodiscard]] const sim::Engine& engine() const { return engine_; }
  [[nodiscard]] const PlatformSpec& spec() const { return spec_; }

 private:
  const PlatformSpec& spec_;
  sim::Engine engine_;
};

}  // namespace wafersim::platforms
