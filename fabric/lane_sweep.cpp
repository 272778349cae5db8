#include "fabric/lane_sweep.h"

#include <stdexcept>

#include "fabric/mesh.h"

namespace wafersim::fabric {

bool LaneSweep::fits(const Mesh& mesh, const ExpectedTraffic& traffic) {
  const std::uint32_t colors = traffic.single_wavelet_colors;
  const MeshGeometry& g = mesh.geometry();
  return LaneRouters::kAvailable && colors != 0 && colors <= LaneRouters::kColors && colors <= mesh.colors() &&
         traffic.moves >= kMinMoves && mesh.routing() == Routing::XY && g.routers() <= LaneRouters::kMaxRouters &&
         g.width() <= LaneRouters::kMaxWidth && mesh.hop_ == 1 && mesh.ramp_ == 1 && !mesh.link_stats_ &&
         mesh.options_.trace_counters == StatsDetail::Totals && mesh.depth() <= LaneRouters::kMaxDepth;
}

LaneSweep::LaneSweep(Mesh& mesh, std::uint32_t colors)
    : mesh_(mesh),
      lanes_(mesh.geometry().width(), mesh.geometry().height(), mesh.depth()),
      colors_(colors),
      idle_skip_(mesh.idle_skip_) {}

void LaneSweep::read(std::uint64_t t) { mesh_.read_phase(*this, t); }

void LaneSweep::push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit /*f*/,
                             std::uint64_t /*now*/) const {
  throw std::logic_error("LaneSweep: a wavelet for router " + std::to_string(r) + " port " + std::to_string(p) +
                         " color " + std::to_string(c) +
                         " came over the wheel (the lanes have 1-cycle hops and ramps)");
}

std::uint64_t LaneSweep::write(std::uint64_t t) {
  processed_ = t + 1;
  for (std::uint32_t c = 0; c < colors_; ++c) counters_.color_occupancy[c] += counters_.color_queued[c];
  for (std::uint32_t p = 0; p < kPorts; ++p) counters_.dir_occupancy[p] += counters_.dir_queued[p];
  const LaneRouters::Totals totals{&counters_.forwarded, &counters_.stalled, counters_.color_forwarded,
                                   counters_.color_stalled, counters_.dir_queued};
  const std::uint64_t visits = lanes_.group_visits();
  const std::uint64_t granted = lanes_.sweep(t, idle_skip_, *this, totals);
  counters_.evaluations += (lanes_.group_visits() - visits) * 8;
  return granted;
}

void LaneSweep::eject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) {
  mesh_.to_endpoint(r, index(Port::Ramp), c, f, t);  // (the lanes count the ramp output's credits themselves)
  --counters_.in_network;
  --counters_.color_queued[c];
}

void LaneSweep::ramp_freed(std::uint32_t r, std::uint32_t c, std::uint64_t t) {
  mesh_.return_to_endpoint(r, index(Port::Ramp), c, t);
}

LinkCounters LaneSweep::link_color_counters(std::uint32_t, std::uint32_t, std::uint32_t, std::uint64_t) const {
  throw std::logic_error("LaneSweep: the lanes keep no per-color link counters");
}

std::uint64_t LaneSweep::queued_colors(std::uint32_t r, std::uint32_t p) const {
  std::uint64_t m = 0;
  for (std::uint32_t c = 0; c < LaneRouters::kColors; ++c)
    if (lanes_.queued(r, p, c)) m |= std::uint64_t{1} << c;
  return m;
}

std::uint32_t LaneSweep::touched_routers() const {
  // Routers sent a wavelet: marked when they took it in, or still arriving from the last cycle written.
  const std::uint32_t parity = (processed_ + 1) & 1u;
  std::uint32_t n = 0;
  for (std::uint32_t r = 0; r < mesh_.geometry().routers(); ++r) {
    bool arriving = false;
    for (std::uint32_t p = 0; p < kPorts; ++p) arriving = arriving || lanes_.arriving(r, p, parity);
    n += (lanes_.injected_at(r) || lanes_.took_in(r) || (processed_ && arriving)) ? 1u : 0u;
  }
  return n;
}

}  // namespace wafersim::fabric
