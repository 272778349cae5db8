#include "swarmx/swarmx_config.h"

#include <fmt/format.h>

namespace wafersim::swarmx {
using units::Bandwidth;
using units::DataSize;
using units::Duration;

SwarmXConfig SwarmXConfig::read(sim::config::Section s) {
  SwarmXConfig c;
  std::string f = s.choice("fanout", "1:4", {"1:4", "2x1:2"}, "node fan-out: one 1:4 switch or a pair of 1:2");
  c.fanout = f == "1:4" ? Fanout::OneToFour : Fanout::TwoOneToTwo;
  c.port_bandwidth = s.bandwidth("port_bandwidth", Bandwidth{100e9}, Bandwidth{1e6}, Bandwidth{1e15},
                                 "bandwidth of each port, each direction");
  c.node_latency = s.duration("node_latency", Duration{1e-6}, Duration{0}, Duration{1}, "latency through one node");
  c.reduce_throughput = s.bandwidth("reduce_throughput", Bandwidth{100e9}, Bandwidth{1e6}, Bandwidth{1e15},
                                    "FP32 gradient summation rate per port");
  c.planes = static_cast<std::uint32_t>(
      s.integer("planes", 12, 1, 1024, "parallel trees, each carrying an equal share of the traffic"));
  c.chunk_size = s.size("chunk_size", DataSize::from_bytes(64 * 1024), DataSize::from_bytes(64),
                        DataSize::from_bytes(std::uint64_t{1} << 30), "transfer granularity");
  if (c.chunk_size.bits % 32 != 0)
    s.error("chunk_size", fmt::format("expected a whole number of FP32 values (a multiple of 4 B), found {}",
                                      units::format(c.chunk_size)));
  c.buffer_chunks = static_cast<std::uint32_t>(
      s.integer("buffer_chunks", 4, 1, 1 << 20, "chunks buffered per port before back-pressure"));
  return c;
}

TreeShape tree_shape(std::uint32_t systems, const SwarmXConfig& c) {
  TreeShape t;
  const std::uint32_t a = c.arity();
  std::uint32_t width = systems == 0 ? 1 : systems;
  do {
    width = (width + a - 1) / a;
    t.switches += width;
    ++t.levels;
  } while (width > 1);
  t.nodes_per_plane = c.fanout == Fanout::OneToFour ? t.switches : (t.switches + 1) / 2;
  return t;
}

}  // namespace wafersim::swarmx
