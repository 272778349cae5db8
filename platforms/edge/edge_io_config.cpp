#include "platforms/edge/edge_io_config.h"

#include <algorithm>

namespace wafersim::platforms::edge {

units::Bandwidth EdgeIoConfig::direction_bandwidth() const {
  return units::Bandwidth{
      std::min(io_ports * io_port_bandwidth.bits_per_s, edge_io_channels * channel_bandwidth.bits_per_s)};
}

units::Bandwidth EdgeIoConfig::plane_bandwidth() const {
  return units::Bandwidth{std::min(swarmx_port_bandwidth.bits_per_s, direction_bandwidth().bits_per_s / planes)};
}

}  // namespace wafersim::platforms::edge
