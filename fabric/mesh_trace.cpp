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
  out.forwarded = routers_->port_forwarded(r, p);
  out.stalled = routers_->port_stalled(r, p);
  out.occupancy = per_router_ ? port_occupancy(r, p) : 0;
  out.queued =
      port_queued(r, p) + ((kLinkInputs >> p & 1u) && routers_->arriving(r, p, (processed_ + 1) & 1u) ? 1u : 0u);
  return out;
}

LinkCounters Mesh::link_counters(std::uint32_t r, std::uint32_t p, std::uint32_t c) const {
  if (r >= geometry_.routers() || p >= kPorts || c >= colors_)
    throw std::out_of_range("Mesh::link_counters: no such router port or color");
  if (!link_stats_) throw std::logic_error("Mesh::link_counters: per-color link counters are not kept");
  return routers_->link_color_counters(r, p, c, evaluated_);
}

}  // namespace wafersim::fabric
