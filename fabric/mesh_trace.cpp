// Read access to the mesh's cumulative per-link counters for the tracers in fabric/trace:
// they sample these at window boundaries, so tracing adds no work to the router hot path.

#include <stdexcept>

#include "fabric/mesh.h"

namespace wafersim::fabric {

// Wavelets sent over 1-cycle links in the last cycle written are still in the receiving
// router's arrival register (parity processed_ + 1), taken in next cycle: they are queued.
// (A ramp's wavelet there is on its way over the ramp, not yet queued.)
constexpr std::uint32_t kLinkInputs = kAllPorts & ~bit(Port::Ramp);

LinkCounters Mesh::link_counters(std::uint32_t r, std::uint32_t p) const {
  if (r >= geometry_.routers() || p >= kPorts) throw std::out_of_range("Mesh::link_counters: no such router port");
  LinkCounters out;
  out.forwarded = port_forwarded(r, p);
  out.stalled = port_stalled(r, p);
  out.occupancy = per_router_ ? port_occupancy(r, p) : 0;
  out.queued = port_queued(r, p) + ((kLinkInputs >> p & 1u) && port_arriving(r, p, (processed_ + 1) & 1u) ? 1u : 0u);
  return out;
}

LinkCounters Mesh::link_counters(std::uint32_t r, std::uint32_t p, std::uint32_t c) const {
  if (r >= geometry_.routers() || p >= kPorts || c >= colors_)
    throw std::out_of_range("Mesh::link_counters: no such router port or color");
  if (!link_stats_) throw std::logic_error("Mesh::link_counters: per-color link counters are not kept");
  LinkCounters out;
  const std::uint32_t b = block_[r];
  if (b == kNone) return out;
  const Arrivals& a = blocks_[b].in[(processed_ + 1) & 1u];
  const bool arriving = ((a.ports & kLinkInputs) >> p & 1u) && a.color[p] == c;
  const std::uint32_t si = slot_index(b, p, c);
  out.forwarded = link_forwarded_[si];
  out.stalled = link_stalled_of(b, p, c);
  out.occupancy = link_occupancy_of(b, p, c);
  out.queued = slots_[si].count + (arriving ? 1u : 0u);
  return out;
}

}  // namespace wafersim::fabric
