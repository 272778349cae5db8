#pragma once
// Figures derived from a platform spec, for `wafersim info` and for checking presets
// against published numbers.

#include <cstdint>

#include <nlohmann/json.hpp>

#include "platforms/platform_spec.h"

namespace wafersim::platforms {

struct PlatformFigures {
  std::uint64_t pe_count = 0;    // per wafer
  std::uint64_t sram_bytes = 0;  // per wafer
  double peak_flops_fp16 = 0;    // dense, per wafer: lanes x 2 FLOP x clock x PEs
  double peak_flops_bf16 = 0;
  double peak_flops_fp32 = 0;
  double sram_bandwidth_bytes_per_s = 0;    // all ports of all PEs
  double fabric_bisection_bytes_per_s = 0;  // both directions across the narrower cut
  double fabric_total_bits_per_s = 0;       // all router mesh ports, in and out (as published)
  double edge_io_bits_per_s = 0;            // fabric-side edge channels, both edges
  double io_bandwidth_bits_per_s = 0;       // system external I/O
  std::uint64_t memoryx_capacity_bytes = 0;
  double memoryx_read_bytes_per_s = 0;
  std::uint64_t max_params = 0;  // MemoryX capacity / bytes per parameter
  std::uint32_t systems = 1;
  std::uint32_t swarmx_nodes = 0;           // all planes
  std::uint32_t swarmx_depth = 0;           // switch levels
  double swarmx_bandwidth_bits_per_s = 0;   // aggregate into each wafer: planes x port bandwidth
  double peak_power_wafer_w = 0;            // the energy coefficients' peak (energy/peak.h), one wafer
  double peak_power_system_w = 0;           // the same with I/O, power conversion and cooling: one system
  double peak_power_density_w_per_mm2 = 0;  // the wafer's peak over its PE tiles' area
};

PlatformFigures figures(const PlatformSpec& p);
nlohmann::ordered_json to_json(const PlatformFigures& f);

}  // namespace wafersim::platforms
