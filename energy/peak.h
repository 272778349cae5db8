#pragma once
// The peak power a platform's coefficients imply (`wafersim info`, docs/energy.md): every PE
// of the wafer busy every cycle with FMACs on all lanes of its widest-energy format, every
// SRAM port moving a word, every router output and both ramp directions carrying a wavelet,
// the system's I/O at full rate both ways, and the leakage; instruction issue is left out
// (a vector instruction's issue is spread over its elements).

#include "energy/energy_config.h"
#include "hw/pe_config.h"

namespace wafersim::energy {

// Power by component, in watts, of one system at peak.
struct PeakPower {
  double lanes = 0, active = 0, sram = 0, router = 0, link = 0, ramp = 0, pe_static = 0, router_static = 0;
  double edge_io = 0, conversion = 0, system_static = 0;
  [[nodiscard]] double wafer() const {
    return lanes + active + sram + router + link + ramp + pe_static + router_static;
  }
  [[nodiscard]] double system() const { return wafer() + edge_io + conversion + system_static; }
};

// `io_bits_per_s` is the system's external I/O in each direction.
PeakPower peak_power(const EnergyConfig& c, const hw::WaferConfig& w, double io_bits_per_s);

}  // namespace wafersim::energy
