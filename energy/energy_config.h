#pragma once
// Resolved energy coefficients of a platform: the energy of each counted event and the static
// power of each component (docs/energy.md). Energies are in joules, powers in watts.

#include <array>

#include "sim/config/schema.h"
#include "sim/units/quantity.h"

namespace wafersim::energy {

// The number formats lane coefficients are given for; u16 and u32 lanes (raw copies) use the
// fp16 and fp32 coefficients of their class.
inline constexpr int kFormats = 3;  // fp16, bf16, fp32

// One coefficient per number format, in joules per lane operation.
using PerFormat = std::array<double, kFormats>;

// The datapath classes lane operations are priced by (hw::lane_class_name order).
inline constexpr int kLaneClasses = 6;  // mov, add, mul, fmac, exp, recip

struct PeEnergy {
  std::array<PerFormat, kLaneClasses> lane{};  // J per lane operation, [class][format]
  double instruction = 0;                      // J per instruction issued (fetch, decode, registers)
  double active_cycle = 0;                     // J per busy cycle of a PE (idle PEs are clock-gated)
  double sram_read = 0;                        // J per byte of SRAM port word read
  double sram_write = 0;                       // J per byte of SRAM port word written
  double static_power = 0;                     // W per PE, always
};

struct RouterEnergy {
  double traversal = 0;     // J per wavelet sent through a router output
  double link = 0;          // J per wavelet-hop to a neighbour (or an edge channel)
  double ramp = 0;          // J per wavelet crossing a ramp between a PE core and its router
  double static_power = 0;  // W per router, always
};

struct MemoryXEnergy {
  double dram_read = 0, dram_write = 0;    // J per byte
  double flash_read = 0, flash_write = 0;  // J per byte
  double optimizer = 0;                    // J per parameter updated
  double static_power = 0;                 // W for the whole MemoryX, when the run simulates it
};

struct SystemEnergy {
  double static_power = 0;       // W per CS-X system besides the wafer: cooling, control, I/O
  double supply_efficiency = 1;  // wafer-side power / wall power of the system's power conversion
};

struct EnergyConfig {
  double voltage = 1;        // wafer supply relative to the coefficients' own: wafer events x v^2, leakage x v
  double tile_area_mm2 = 0;  // silicon area of one PE tile (core, SRAM and router), mm^2
  PeEnergy pe;
  RouterEnergy router;
  double edge_io = 0;        // J per bit crossing the wafer's edge (system I/O)
  double swarmx = 0;         // J per byte sent on a SwarmX port
  double swarmx_static = 0;  // W per SwarmX switch, when the run simulates them
  MemoryXEnergy memoryx;
  SystemEnergy system;

  // Declares and reads the `energy:` section (defaults: a WSE-2 PE in TSMC 7 nm).
  static EnergyConfig read(sim::config::Section s);
  // Multipliers of the wafer's per-event energies (voltage^2) and of its leakage (voltage).
  [[nodiscard]] double dynamic_scale() const { return voltage * voltage; }
  [[nodiscard]] double static_scale() const { return voltage; }
};

}  // namespace wafersim::energy
