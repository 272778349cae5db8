#pragma once
// One wafer (one CS-X system) as a SystemC module: its clock-domain engine, the PE cores
// with the host's TLM-2.0 socket into their SRAM and, as they land, the mesh fabric and
// the edge I/O.

#include <systemc>

#include <cstdint>
#include <memory>

#include "hw/core/core_array.h"
#include "hw/tlm/host_port.h"
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
  // The PE cores: load programs, activate tasks, read counters.
  [[nodiscard]] hw::CoreArray& cores() { return cores_; }
  // The host's way in: one TLM-2.0 target socket reaching every PE's SRAM (see hw/tlm/host_port.h).
  [[nodiscard]] tlm_utils::simple_target_socket_optional<hw::HostPort>& host_socket() { return host_.socket; }
  [[nodiscard]] const hw::AddressMap& address_map() const { return host_.map(); }
  [[nodiscard]] const hw::HostPort& host_port() const { return host_; }

 private:
  const PlatformSpec& spec_;
  sim::Engine engine_;
  hw::CoreArray cores_;
  hw::HostPort host_;
};

}  // namespace wafersim::platforms
