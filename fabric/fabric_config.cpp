#include "fabric/fabric_config.h"

#include <algorithm>
#include <string>

namespace wafersim::fabric {
using sim::Cycle;

FabricConfig FabricConfig::read(sim::config::Section s, const hw::WaferConfig& wafer) {
  FabricConfig c;
  c.colors = static_cast<std::uint32_t>(s.integer("colors", 24, 1, 64, "routable colors (virtual channels) per link"));
  c.queue_depth = static_cast<std::uint32_t>(
      s.integer("queue_depth", 8, 1, 4096, "input queue depth per port and color, in wavelets"));
  c.hop_latency = s.cycles("hop_latency", Cycle(1), Cycle(1), Cycle(1000), "router-to-router link latency");
  c.wavelet_width = s.size("wavelet_width", units::DataSize{32}, units::DataSize{8}, units::DataSize{1024},
                           "payload bits per wavelet");
  c.ramp_latency = s.cycles("ramp_latency", Cycle(1), Cycle(1), Cycle(1000), "core-router ramp latency, each way");
  c.edge_io_channels = static_cast<std::uint32_t>(
      s.integer("edge_io_channels", std::min<std::int64_t>(60, wafer.height), 0, wafer.height,
                "I/O channels on each of the west and east edges (at most one per PE row)"));
  c.deadlock_timeout = s.cycles("deadlock_timeout", Cycle(10000), Cycle(10), Cycle(1000000000),
                                "cycles without progress, wavelets in flight, before a deadlock is reported");
  const std::string detail =
      s.choice("stats_detail", "auto", {"auto", "totals", "routers", "links"},
               "per-link statistics kept: totals (per color and direction), routers (+ per router and link), "
               "links (+ per link and color); auto: links up to 64 routers, routers up to 4096");
  c.stats_detail = detail == "totals"    ? StatsDetail::Totals
                   : detail == "routers" ? StatsDetail::Routers
                   : detail == "links"   ? StatsDetail::Links
                                         : StatsDetail::Auto;
  return c;
}

}  // namespace wafersim::fabric
