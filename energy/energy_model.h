#pragma once
// Energy = counted events x coefficients, exactly (docs/energy.md): the per-component energy
// of a set of events, the static energy of the powered components over a time, and the power
// conversion losses of the systems.

#include <cstdint>

#include "energy/energy_config.h"
#include "energy/events.h"

namespace wafersim::energy {

// What the coefficients apply to: a platform's wafer.
struct Scale {
  std::uint64_t sram_port_bytes = 8;  // bytes one SRAM port access moves
  std::uint64_t pes = 0;              // PEs (and routers) per wafer
};

// Which static consumers a run powers.
struct Powered {
  std::uint64_t wafers = 0;    // CS-X systems, each a wafer and its system around it
  std::uint64_t switches = 0;  // SwarmX switches
  bool memoryx = false;
};

// Energy by component, in joules.
struct Breakdown {
  // The wafer: its PEs (lanes, instructions, active cycles, SRAM) and routers, and leakage.
  double lanes = 0, instructions = 0, active = 0, sram = 0;
  double router = 0, link = 0, ramp = 0;
  double pe_static = 0, router_static = 0;
  // Each system around its wafer: I/O, cooling and control, and the power conversion's losses.
  double edge_io = 0, system_static = 0, conversion = 0;
  // The cluster: SwarmX and MemoryX.
  double swarmx = 0, swarmx_static = 0, dram = 0, flash = 0, optimizer = 0, memoryx_static = 0;

  [[nodiscard]] double compute() const { return lanes + instructions + active; }
  [[nodiscard]] double fabric() const { return router + link + ramp; }
  [[nodiscard]] double wafer_static() const { return pe_static + router_static; }
  [[nodiscard]] double wafer() const { return compute() + sram + fabric() + wafer_static(); }
  [[nodiscard]] double system() const { return edge_io + system_static + conversion; }
  [[nodiscard]] double cluster() const { return swarmx + swarmx_static + dram + flash + optimizer + memoryx_static; }
  [[nodiscard]] double total() const { return wafer() + system() + cluster(); }
  Breakdown& operator+=(const Breakdown& o);
};

// The energy of the events (static parts and conversion zero): each count times its
// coefficient; the wafer's events also times the voltage scale (voltage^2).
Breakdown event_energy(const Events& e, const EnergyConfig& c, const Scale& s);
// The leakage and static power of what `p` powers, over `seconds` (the wafer's leakage times
// the voltage).
Breakdown static_energy(const EnergyConfig& c, const Scale& s, const Powered& p, double seconds);
// Sets b.conversion: what the systems' power conversion loses delivering b's wafer and edge
// energy at the configured supply efficiency.
void add_conversion(Breakdown& b, const EnergyConfig& c);

// The coefficient of lane kind k (hw::lane_kind), voltage not applied.
double lane_coefficient(const EnergyConfig& c, int kind);

}  // namespace wafersim::energy
