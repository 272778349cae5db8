#pragma once
// The external I/O of one wafer as the cluster sees it: its system I/O ports, the fabric's
// edge channels behind them, and how SwarmX's planes map onto them.

#include <cstdint>

#include "sim/units/quantity.h"

namespace wafersim::platforms::edge {

struct EdgeIoConfig {
  std::uint32_t io_ports = 12;                 // system.io_ports (CS-2: 12 x 100 GbE)
  units::Bandwidth io_port_bandwidth{100e9};   // system.io_port_bandwidth, each direction
  std::uint32_t edge_io_channels = 60;         // fabric.edge_io_channels on each of west and east
  units::Bandwidth channel_bandwidth{35.2e9};  // one wavelet per cycle: wavelet_width x wafer clock
  std::uint32_t planes = 12;                   // SwarmX planes: chunk i uses plane i % planes
  units::Bandwidth swarmx_port_bandwidth{100e9};
  std::uint32_t buffer_chunks = 4;  // slots of each weights-in and gradients-out port

  // Weights enter through the west edge channels, gradients leave through the east ones; each
  // direction carries min(io_ports x io_port_bandwidth, edge_io_channels x channel_bandwidth).
  [[nodiscard]] units::Bandwidth direction_bandwidth() const;
  // One plane's link between the wafer and its leaf switch, each direction:
  // min(swarmx port bandwidth, direction_bandwidth / planes).
  [[nodiscard]] units::Bandwidth plane_bandwidth() const;
};

}  // namespace wafersim::platforms::edge
