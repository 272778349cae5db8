#pragma once
// What the host, MemoryX or SwarmX side of an edge I/O channel hears from the fabric.

#include <cstdint>

#include "fabric/geometry.h"
#include "hw/types.h"
#include "sim/types.h"

namespace wafersim::fabric {

// Contract: as hw::RampListener, for the edge I/O channels (Mesh::edge_channel()): called
// from the fabric's write phase; `at` is the first cycle the wavelet is visible in the
// channel's receive queue, or the credit usable.
class EdgeListener {
 public:
  virtual ~EdgeListener() = default;
  virtual void on_arrival(EdgeSide side, std::uint32_t channel, hw::Color c, sim::Cycle at) = 0;
  virtual void on_credit(EdgeSide side, std::uint32_t channel, hw::Color c, sim::Cycle at) = 0;
};

}  // namespace wafersim::fabric
