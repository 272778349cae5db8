#pragma once
// Resolved configuration of the SwarmX broadcast/reduce tree and its shape.

#include <cstdint>
#include <string>

#include "sim/config/schema.h"
#include "sim/units/quantity.h"

namespace wafersim::swarmx {

enum class Fanout { OneToFour, TwoOneToTwo };

struct SwarmXConfig {
  Fanout fanout = Fanout::OneToFour;  // a node is one 1:4 switch or a pair of 1:2 switches
  units::Bandwidth port_bandwidth{100e9};
  units::Duration node_latency{1e-6};
  units::Bandwidth reduce_throughput{100e9};  // FP32 gradient summation rate per port
  std::uint32_t planes = 12;                  // parallel trees, one per system I/O port
  units::DataSize chunk_size{64 * 1024 * 8};  // TLM transfer granularity
  std::uint32_t buffer_chunks = 4;            // per-port buffering before back-pressure

  static SwarmXConfig read(sim::config::Section s);
  // Switch fan-out seen by the tree: 4 for 1:4, 2 for a pair of 1:2.
  [[nodiscard]] std::uint32_t arity() const { return fanout == Fanout::OneToFour ? 4 : 2; }
};

// The shape of one plane of the tree connecting MemoryX (root) to `systems` wafers.
struct TreeShape {
  std::uint32_t levels = 0;           // switch levels between MemoryX and the wafers
  std::uint32_t switches = 0;         // logical switches (1:4 or 1:2) per plane
  std::uint32_t nodes_per_plane = 0;  // physical nodes per plane (a 2x1:2 node holds two switches)
};

// At least one switch level even for a single system (MemoryX reaches wafers through SwarmX).
TreeShape tree_shape(std::uint32_t systems, const SwarmXConfig& c);

}  // namespace wafersim::swarmx
