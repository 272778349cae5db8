#pragma once
// One wafer (one CS-X system) as a SystemC module: its clock-domain engine, the mesh fabric
// with its ramps and edge I/O channels and, as they land, the PE cores.

#include <systemc>

#include <cstdint>
#include <memory>

#include "fabric/mesh.h"
#include "fabric/route_table.h"
#include "platforms/platform_spec.h"
#include "sim/engine/engine.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms {

struct BuildOptions {
  bool idle_skip = true;
  sim::Cycle max_cycles = sim::Cycle::never();
  std::uint64_t seed = 1;
  // How the mesh routes: static color routes (the real fabric) or packet-switched XY
  // (synthetic traffic).
  fabric::Routing routing = fabric::Routing::Static;
  std::shared_ptr<const fabric::RouteTable> routes;  // static routes; none: nothing routed
  // Tracing: per-link counters the mesh keeps for the congestion windows (RunTrace::configure).
  fabric::StatsDetail trace_counters = fabric::StatsDetail::Totals;
};

class Wafer : public sc_core::sc_module {
 public:
  Wafer(const sc_core::sc_module_name& name, const PlatformSpec& spec, const BuildOptions& options,
        sim::stats::Group& stats);

  [[nodiscard]] sim::Engine& engine() { return engine_; }
  [[nodiscard]] const sim::Engine& engine() const { return engine_; }
  [[nodiscard]] const PlatformSpec& spec() const { return spec_; }
  [[nodiscard]] fabric::Mesh& mesh() { return *mesh_; }
  [[nodiscard]] const fabric::Mesh& mesh() const { return *mesh_; }
  // This wafer's statistics group ("wafer0"), for components added by commands.
  [[nodiscard]] sim::stats::Group& stats() { return *stats_; }

 private:
  const PlatformSpec& spec_;
  sim::Engine engine_;
  std::unique_ptr<fabric::Mesh> mesh_;
  sim::stats::Group* stats_;
};

}  // namespace wafersim::platforms
