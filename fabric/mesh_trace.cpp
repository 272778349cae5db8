// Read access to the mesh's cumulative per-link counters for the tracers in fabric/trace:
// they sample these at window boundaries, so tracing adds no work to the router hot path.

#include <stdexcept>

#include "fabric/mesh.h"

namespace wafersim::fabric {

LinkCounters Mesh::link_counters(std::uint32_t r, std::uint32_t p) const {
  if (r >= geometry_.routers() || p >= kPorts) throw std::out_of_range("Mesh::link_counters: no such router port");
  LinkCounters out;
  const std::uint32_t b = block_[r];
  if (b == kNone) return out;
  const std::size_t i = std::size_t{b} * kPorts + p;
  out.forwarded = port_forwarded_[i];
  out.stalled = port_stalled_[i];
  out.occupancy = per_router_ ? port_occupancy_[i] : 0;
  out.queued = port_queued_[i];
  return out;
}

LinkCounters Mesh::link_counters(std::uint32_t r, std::uint32_t p, std::uint32_t c) const {
  if (r >= geometry_.routers() || p >= kPorts || c >= colors_)
    throw std::out_of_range("Mesh::link_counters: no such router port or color");
  if (!link_stats_) throw std::logic_error("Mesh::link_counters: per-color link counters are not kept");
  LinkCounters out;
  const std::uint32_t b = block_[r];
  if (b == kNone) return out;
  const std::uint32_t si = slot_index(b, p, c);
  out.forwarded = link_forwarded_[si];
  out.stalled = link_stalled_[si];
  out.occupancy = link_occupancy_[si];
  out.queued = slots_[si].count;
  return out;
}

}  // namespace wafersim::fabric
