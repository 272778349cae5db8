#pragma once
// What a synthetic-traffic run does: pattern, offered load, packet size, colors used as
// virtual channels, the warm-up / measure / drain phases and the seed.

#include <cstdint>
#include <string>

#include "fabric/fabric_config.h"
#include "fabric/geometry.h"
#include "hw/types.h"

namespace wafersim::fabric::traffic {

struct TrafficOptions {
  std::string pattern = "uniform";
  double rate = 0.1;              // offered wavelets per source per cycle (0 .. 1)
  std::uint32_t packet_size = 1;  // wavelets per packet (XY routing)
  std::uint32_t colors = 4;       // colors 0 .. colors-1 used as virtual channels (XY routing)
  hw::PeCoord hotspot{};          // hotspot pattern: the hot router
  double hotspot_fraction = 0.1;  // hotspot pattern: share of packets sent to it
  std::uint64_t warmup = 1000;    // cycles before measurement starts
  std::uint64_t measure = 4000;   // measurement window (packets created in it are measured)
  std::uint64_t drain = 20000;    // at most this many cycles after the window to deliver them
  std::uint64_t seed = 1;

  // Throws sim::InputError when the options do not fit the fabric (colors, sizes, ...).
  void validate(const FabricConfig& fabric, const MeshGeometry& geometry, bool static_routes) const;
};

}  // namespace wafersim::fabric::traffic
