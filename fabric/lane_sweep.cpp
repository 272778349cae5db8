#include "fabric/lane_sweep.h"

#include <stdexcept>

#include "fabric/mesh.h"

namespace wafersim::fabric {

bool LaneSweep::fits(const Mesh& mesh, const ExpectedTraffic& traffic) {
  const std::uint32_t colors = traffic.single_wavelet_colors;
  const MeshGeometry& g = mesh.geometry();
  return LaneRouters::kAvailable && colors != 0 && colors <= LaneRouters::kColors && colors <= mesh.colors() &&
         traffic.moves >= kMinMoves && mesh.routing() == Routing::XY && g.routers() <= LaneRouters::kMaxRouters &&
         g.width() <= LaneRouters::kMaxWidth && mesh.hop_ == 1 && mesh.uniform_links() && mesh.ramp_ == 1 &&
         !mesh.link_stats_ && mesh.options_.trace_counters == StatsDetail::Totals &&
         mesh.depth() <= LaneRouters::kMaxDepth;
}

LaneSweep::LaneSweep(Mesh& mesh, std::uint32_t colors, sim::parallel::RowBands* bands)
    : mesh_(mesh),
      partition_(bands && bands->parallel() ? bands : nullptr),
      lanes_(mesh.geometry().width(), mesh.geometry().height(), mesh.depth()),
      colors_(colors),
      idle_skip_(mesh.idle_skip_) {
  if (!partition_) return;
  bands_.resize(partition_->count());
  for (std::size_t b = 0; b < bands_.size(); ++b) {
    bands_[b].sweep = this;
    bands_[b].stage = &mesh_.stages_[b];
    bands_[b].counts = &mesh_.stages_[b].counts;
  }
}

void LaneSweep::read(std::uint64_t t) { mesh_.read_phase(*this, t); }

void LaneSweep::push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit /*f*/, std::uint64_t /*now*/,
                             Counters& /*n*/) const {
  throw std::logic_error("LaneSweep: a wavelet for router " + std::to_string(r) + " port " + std::to_string(p) +
                         " color " + std::to_string(c) +
                         " came over the wheel (the lanes have 1-cycle hops and ramps)");
}

std::uint64_t LaneSweep::write(std::uint64_t t) {
  processed_ = t + 1;
  for (std::uint32_t c = 0; c < colors_; ++c) counters_.color_occupancy[c] += counters_.color_queued[c];
  for (std::uint32_t p = 0; p < kPorts; ++p) counters_.dir_occupancy[p] += counters_.dir_queued[p];
  if (partition_) return write_bands(t);
  const LaneRouters::Totals totals{&counters_.forwarded, &counters_.stalled, counters_.color_forwarded,
                                   counters_.color_stalled, counters_.dir_queued};
  const std::uint64_t visits = lanes_.group_visits();
  const std::uint64_t granted = lanes_.sweep(t, idle_skip_, *this, totals);
  counters_.evaluations += (lanes_.group_visits() - visits) * 8;
  return granted;
}

std::uint64_t LaneSweep::write_bands(std::uint64_t t) {
  lanes_.begin_sweep();
  const std::uint32_t width = mesh_.geometry().width();
  partition_->run([this, t, width](std::size_t b) {
    Band& band = bands_[b];
    Counters& n = *band.counts;
    const LaneRouters::Totals totals{&n.forwarded, &n.stalled, n.color_forwarded, n.color_stalled, n.dir_queued};
    const auto bi = static_cast<std::uint32_t>(b);
    // (A band's first row is a multiple of 8, so its routers start a group.)
    const std::uint32_t first = partition_->first_row(bi) * width / 8;
    const std::uint32_t end = (partition_->end_row(bi) * width + 7) / 8;
    band.swept = lanes_.sweep_groups(t, first, end, idle_skip_, band, totals);
    n.evaluations += band.swept.visits * 8;
  });
  // (The join folded the bands' counts and staged effects.)
  bool busy = false;
  std::uint64_t granted = 0, visits = 0;
  for (std::uint32_t b = 0; b < bands_.size(); ++b) {
    const LaneRouters::Swept& s = bands_[b].swept;
    busy = busy || s.busy;
    granted += s.granted;
    visits += s.visits;
    partition_->add_work(b, s.visits * 8 * sim::parallel::kRouterVisitUnits);
  }
  lanes_.end_sweep(busy, visits);
  return granted;
}

void LaneSweep::eject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) {
  mesh_.to_endpoint(nullptr, r, index(Port::Ramp), c, f, t);  // (the lanes count the ramp output's credits themselves)
  --counters_.in_network;
  --counters_.color_queued[c];
}

void LaneSweep::routes_changed(const RouteTable*, const std::vector<RouteChange>&) {
  throw std::logic_error("LaneSweep: the lanes carry XY packets, which have no routes to change");
}

void LaneSweep::ramp_freed(std::uint32_t r, std::uint32_t c, std::uint64_t t) {
  mesh_.return_to_endpoint(nullptr, r, index(Port::Ramp), c, t);
}

void LaneSweep::Band::eject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) {
  sweep->mesh_.to_endpoint(stage, r, index(Port::Ramp), c, f, t);
  --counts->in_network;
  --counts->color_queued[c];
}

void LaneSweep::Band::ramp_freed(std::uint32_t r, std::uint32_t c, std::uint64_t t) {
  sweep->mesh_.return_to_endpoint(stage, r, index(Port::Ramp), c, t);
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
