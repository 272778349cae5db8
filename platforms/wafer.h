#pragma once
// One wafer (one CS-X system) as a SystemC module: its clock-domain engine, the mesh fabric
// with its ramps and edge I/O channels, the PE cores on the ramps, and the host's TLM-2.0
// socket into the PEs' SRAM.

#include <systemc>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "fabric/defects/wafer_remap.h"
#include "fabric/expected_traffic.h"
#include "fabric/mesh.h"
#include "fabric/route_table.h"
#include "hw/core/core_array.h"
#include "hw/tlm/host_port.h"
#include "platforms/failure_spec.h"
#include "platforms/platform_spec.h"
#include "sim/engine/engine.h"
#include "sim/engine/engine_work.h"
#include "sim/parallel/row_bands.h"
#include "sim/parallel/team.h"
#include "sim/parallel/thread_use.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms {

struct BuildOptions {
  bool idle_skip = true;
  // A compiled model's run lets the cores' main threads run ahead (hw::CoreArray::set_run_ahead).
  bool run_ahead = true;
  sim::Cycle max_cycles = sim::Cycle::never();
  std::uint64_t seed = 1;
  // How the mesh routes: static color routes (the real fabric) or packet-switched XY
  // (synthetic traffic).
  fabric::Routing routing = fabric::Routing::Static;
  std::shared_ptr<const fabric::RouteTable> routes;  // static routes; none: nothing routed
  // Tracing: per-link counters the mesh keeps for the congestion windows (RunTrace::configure).
  fabric::StatsDetail trace_counters = fabric::StatsDetail::Totals;
  // PE cores move no data values (hw::CoreParams::timing_only).
  bool timing_only = false;
  // The engine is advanced by direct calls, not by SystemC (a co-simulated cluster's wafer).
  bool driven = false;
  // The traffic the fabric is to expect (fabric::MeshOptions::traffic; synthetic traffic tells it).
  fabric::ExpectedTraffic traffic;
  // Host threads sweeping the wafer's rows in bands (1: the caller's thread only;
  // sim::parallel::kAutoThreads: by the wafer's size, sim/parallel/thread_policy.h). The
  // results are the same for every count (sim/parallel/row_bands.h).
  unsigned threads = 1;
  // Host memory: a wafer is built only when its estimate (memory_estimate.h, with a traffic
  // generator when `synthetic_traffic`) fits within `max_memory` (0: no limit of its own) and
  // the memory the machine has available; otherwise sim::InputError before any allocation.
  std::uint64_t max_memory = 0;
  bool synthetic_traffic = false;
  // Links and PEs that fail while running (--fail; docs/defects.md): each a sim::SimulationError
  // when a static route uses it, unless redundancy.reroute rebuilds the routes around it.
  std::vector<FailureSpec> failures;
};

class Wafer : public sc_core::sc_module {
 public:
  // `index` is the wafer's place in its cluster (its defects are sampled for it). A platform
  // with defects gets its remap's detours on the mesh's links (docs/defects.md); one whose
  // wafer cannot present its grid throws sim::InputError.
  Wafer(const sc_core::sc_module_name& name, const PlatformSpec& spec, const BuildOptions& options,
        sim::stats::Group& stats, std::uint32_t index = 0);

  [[nodiscard]] sim::Engine& engine() { return engine_; }
  [[nodiscard]] const sim::Engine& engine() const { return engine_; }
  [[nodiscard]] const PlatformSpec& spec() const { return spec_; }
  [[nodiscard]] fabric::Mesh& mesh() { return *mesh_; }
  [[nodiscard]] const fabric::Mesh& mesh() const { return *mesh_; }
  // The PE cores, each on its router's ramp: load programs, activate tasks, read counters.
  [[nodiscard]] hw::CoreArray& cores() { return cores_; }
  [[nodiscard]] const hw::CoreArray& cores() const { return cores_; }
  // The host's way in: one TLM-2.0 target socket reaching every PE's SRAM (hw/tlm/host_port.h).
  [[nodiscard]] tlm_utils::simple_target_socket_optional<hw::HostPort>& host_socket() { return host_.socket; }
  [[nodiscard]] const hw::AddressMap& address_map() const { return host_.map(); }
  [[nodiscard]] const hw::HostPort& host_port() const { return host_; }
  // This wafer's statistics group ("wafer0"), for components added by commands.
  [[nodiscard]] sim::stats::Group& stats() { return *stats_; }
  // The remap of a wafer with defects (none without).
  [[nodiscard]] const std::optional<fabric::defects::WaferRemap>& remap() const { return remap_; }
  // The wafer's bands of rows (one band without threads) and their thread team (null then).
  [[nodiscard]] sim::parallel::RowBands& bands() { return *bands_; }
  [[nodiscard]] const sim::parallel::Team* team() const { return team_.get(); }

 private:
  const PlatformSpec& spec_;
  std::optional<fabric::defects::WaferRemap> remap_;
  sim::Engine engine_;
  // Built before and destroyed after the components that sweep by them.
  std::unique_ptr<sim::parallel::Team> team_;
  std::unique_ptr<sim::parallel::RowBands> bands_;
  std::unique_ptr<sim::parallel::TeamRegistration> registration_;  // reads team_ and bands_
  std::unique_ptr<fabric::Mesh> mesh_;
  hw::CoreArray cores_;
  hw::HostPort host_;
  sim::stats::Group* stats_;
  std::unique_ptr<sim::WorkRegistration> work_;  // reads engine_, mesh_ and cores_: destroyed first
};

}  // namespace wafersim::platforms
