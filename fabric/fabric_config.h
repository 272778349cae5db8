#pragma once
// Resolved configuration of the on-wafer mesh fabric and its routers.

#include <cstdint>

#include "hw/pe_config.h"
#include "sim/config/schema.h"
#include "sim/types.h"
#include "sim/units/quantity.h"

namespace wafersim::fabric {

// How much of the per-link statistics a run keeps (totals per color are always kept).
enum class StatsDetail : std::uint8_t {
  Auto,     // links up to 64 routers, routers up to 4096, totals beyond
  Totals,   // mesh totals, per color and per port direction
  Routers,  // + per router and per link (router, port) arrays
  Links,    // + per link and color arrays
};

struct FabricConfig {
  std::uint32_t colors = 24;            // virtual channels per link
  std::uint32_t queue_depth = 8;        // wavelets per input port and color
  sim::Cycle hop_latency{1};            // router-to-router link latency
  units::DataSize wavelet_width{32};    // payload bits per wavelet
  sim::Cycle ramp_latency{1};           // core <-> router ramp, each way
  std::uint32_t edge_io_channels = 60;  // I/O channels on each of the west and east edges
  sim::Cycle deadlock_timeout{10000};   // no progress with wavelets in flight for this long
  StatsDetail stats_detail = StatsDetail::Auto;

  // Edge channels default to one per row, at most 60 (WSE-2), and cannot exceed the rows.
  static FabricConfig read(sim::config::Section s, const hw::WaferConfig& wafer);
};

}  // namespace wafersim::fabric
