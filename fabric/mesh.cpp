#include "fabric/mesh.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>

#include "fabric/block_routers.h"
#include "fabric/endpoint.h"
#include "fabric/lane_sweep.h"
#include "fabric/link_delays.h"
#include "fabric/link_take.h"
#include "fabric/mesh_outages.h"
#include "sim/engine/engine.h"
#include "sim/errors.h"

namespace wafersim::fabric {
namespace {

StatsDetail resolve(StatsDetail d, std::uint32_t routers) {
  if (d != StatsDetail::Auto) return d;
  if (routers <= 64) return StatsDetail::Links;
  if (routers <= 4096) return StatsDetail::Routers;
  return StatsDetail::Totals;
}

}  // namespace

Mesh::Mesh(const FabricConfig& config, const MeshGeometry& geometry, MeshOptions options, sim::Engine* engine)
    : config_(config),
      geometry_(geometry),
      options_(std::move(options)),
      engine_(engine),
      colors_(config.colors),
      depth_(config.queue_depth),
      hop_(static_cast<std::uint32_t>(config.hop_latency.count())),
      ramp_(static_cast<std::uint32_t>(config.ramp_latency.count())),
      detail_(resolve(config.stats_detail, geometry.routers())),
      link_stats_(detail_ == StatsDetail::Links || options_.trace_counters == StatsDetail::Links),
      per_router_(detail_ != StatsDetail::Totals || options_.trace_counters == StatsDetail::Routers || link_stats_),
      idle_skip_(engine ? engine->options().idle_skip : options_.idle_skip),
      xy_(options_.routing == Routing::XY) {
  if (colors_ == 0 || colors_ > 64) throw std::logic_error("Mesh: colors must be 1 .. 64");
  if (depth_ == 0 || depth_ > 0xffff) throw std::logic_error("Mesh: queue depth must be 1 .. 65535");
  if (hop_ == 0 || ramp_ == 0) throw std::logic_error("Mesh: hop and ramp latencies must be at least 1 cycle");
  if (options_.routes && (options_.routes->width() != geometry_.width() ||
                          options_.routes->height() != geometry_.height() || options_.routes->colors() != colors_))
    throw std::logic_error("Mesh: the route table was built for another mesh shape or color count");
  if (options_.link_delays && options_.link_delays->routers() != geometry_.routers())
    throw std::logic_error("Mesh: the link delays were built for another mesh shape");
  const std::size_t n = geometry_.routers();
  const std::uint32_t e = geometry_.edge_channels();
  ep_router_.resize(n + 2 * std::size_t{e});
  ep_port_.resize(ep_router_.size());
  for (std::uint32_t r = 0; r < n; ++r) {
    ep_router_[r] = r;
    ep_port_[r] = static_cast<std::uint8_t>(index(Port::Ramp));
  }
  for (std::uint32_t ch = 0; ch < e; ++ch) {
    const std::uint32_t row = geometry_.channel_row(ch);
    ep_router_[n + ch] = geometry_.router(0, row);
    ep_port_[n + ch] = static_cast<std::uint8_t>(index(Port::West));
    ep_router_[n + e + ch] = geometry_.router(geometry_.width() - 1, row);
    ep_port_[n + e + ch] = static_cast<std::uint8_t>(index(Port::East));
  }
  const std::size_t eps = ep_router_.size();
  ep_built_.assign(eps, 0);
  ep_fronts_.assign(eps, Fronts{});
  rx_ = LazyArray<RxQueue>(eps * colors_);
  ep_spent_ = LazyArray<std::uint16_t>(eps * colors_);
  ep_last_send_ = LazyArray<std::uint64_t>(eps);
  ep_last_pop_ = LazyArray<std::uint64_t>(eps);
  ports_.resize(eps);
  if (options_.bands && options_.bands->granule() % kBandRows)
    throw std::logic_error("Mesh: bands must hold whole multiples of Mesh::kBandRows rows");
  if (options_.bands && options_.bands->rows() != geometry_.height())
    throw std::logic_error("Mesh: the bands were made for another row count");
  if (options_.bands && options_.bands->parallel()) {
    bands_ = options_.bands;
    stages_.resize(bands_->count());
    bands_->add_client(this);
  }
  ep_band_.assign(eps, 0);
  place_endpoints();
  // A power of two of buckets, so that a cycle's bucket is a mask, not a division.
  std::uint64_t buckets = 1;
  const std::uint32_t longest = hop_ + (options_.link_delays ? options_.link_delays->max_extra() : 0u);
  while (buckets < std::uint64_t{std::max(longest, ramp_)} + 1) buckets *= 2;
  reads_.resize(bands_ ? bands_->count() : 1);
  for (BandReads& r : reads_) r.wheel.resize(buckets);
  wheel_mask_ = buckets - 1;
  rx_rings_.resize((geometry_.height() + kBandRows - 1) / kBandRows);
  choose_sweep(options_.traffic.value_or(ExpectedTraffic{}));
  if (engine_) engine_->add(this);
}

void Mesh::choose_sweep(const ExpectedTraffic& traffic) {
  if (!LaneSweep::fits(*this, traffic)) {
    auto own = std::make_unique<BlockRouters>(*this, bands_);
    inlet_ = RampInlet(*own);
    routers_ = std::move(own);
    counts_ = &routers_->counters();
    return;
  }
  auto lanes = std::make_unique<LaneSweep>(*this, traffic.single_wavelet_colors, bands_);
  inlet_ = RampInlet(lanes->lanes());
  routers_ = std::move(lanes);
  counts_ = &routers_->counters();
  // The lanes take single-wavelet packets from the ramps on the promised colors only: every
  // endpoint's credits for the others, and the edge channels', are none.
  held_colors_ = traffic.single_wavelet_colors;
  whole_packets_ = Flit::kHead | Flit::kTail;
  for (std::uint32_t ep = 0; ep < endpoints(); ++ep)
    for (std::uint32_t c = 0; c < colors_; ++c)
      ep_spent_[std::size_t{ep} * colors_ + c] =
          static_cast<std::uint16_t>(ep < geometry_.routers() && c < held_colors_ ? 0u : depth_);
}

Mesh::~Mesh() {
  if (bands_) bands_->remove_client(this);
}

std::uint32_t Mesh::link_latency(std::uint32_t r, std::uint32_t o) const {
  return hop_ + (options_.link_delays ? options_.link_delays->extra(r, o) : 0u);
}

bool Mesh::uniform_links() const { return !options_.link_delays || !options_.link_delays->any(); }

hw::RampPort& Mesh::ramp(hw::PeCoord pe) {
  if (!geometry_.contains(pe.x, pe.y))
    throw std::logic_error(fmt::format("Mesh::ramp: PE ({}, {}) is outside the mesh", pe.x, pe.y));
  const std::uint32_t ep = geometry_.router(pe);
  if (!ports_[ep]) ports_[ep] = std::make_unique<Endpoint>(*this, ep);
  return *ports_[ep];
}

hw::RampPort& Mesh::edge_channel(EdgeSide side, std::uint32_t channel) {
  const std::uint32_t ep = edge_endpoint(side, channel);
  if (!ports_[ep]) ports_[ep] = std::make_unique<Endpoint>(*this, ep);
  return *ports_[ep];
}

std::uint32_t Mesh::edge_endpoint(EdgeSide side, std::uint32_t channel) const {
  if (channel >= geometry_.edge_channels())
    throw std::logic_error(
        fmt::format("Mesh: edge channel {} does not exist ({} per edge)", channel, geometry_.edge_channels()));
  return geometry_.routers() + (side == EdgeSide::East ? geometry_.edge_channels() : 0) + channel;
}

void Mesh::build_endpoint(std::uint32_t ep) {
  for (std::uint32_t c = 0; c < colors_; ++c) rx_[std::size_t{ep} * colors_ + c].buf = kNone;
  ep_built_[ep] = 1;
}

void Mesh::place_endpoints() {
  if (!bands_) return;
  for (std::uint32_t ep = 0; ep < endpoints(); ++ep)
    ep_band_[ep] = static_cast<std::uint16_t>(bands_->band_of_row(ep_router_[ep] / geometry_.width()));
}

std::uint64_t Mesh::allocated_bytes() const {
  auto v = [](const auto& vec) { return static_cast<std::uint64_t>(vec.capacity() * sizeof(vec[0])); };
  std::uint64_t built = 0;
  for (const std::uint8_t b : ep_built_) built += b;
  // Endpoints' receive queues are counted once their first wavelet arrived.
  std::uint64_t rings = v(rx_rings_);
  for (const auto& r : rx_rings_) rings += v(r);
  return v(ports_) + v(ep_router_) + v(ep_port_) + v(ep_built_) + v(ep_fronts_) + v(ep_band_) +
         built * colors_ * (sizeof(RxQueue) + sizeof(std::uint16_t)) + rings + routers_->allocated_bytes();
}

// ---- helpers -------------------------------------------------------------------------

std::uint32_t Mesh::channel_beyond(std::uint32_t r, Port o) const {
  const std::uint32_t ch = geometry_.channel_beyond(r, o);
  if (ch == MeshGeometry::kNone) return kNone;
  return edge_endpoint(o == Port::West ? EdgeSide::West : EdgeSide::East, ch);
}

Port Mesh::xy_output(std::uint32_t x, std::uint32_t y, std::uint32_t payload) const {
  return port_at(xy_route(x, y, payload));
}

void Mesh::wake_self(sim::Cycle at) {
  if (!engine_ || at == last_wake_request_) return;
  last_wake_request_ = at;
  engine_->wake(this, at);
}

void Mesh::tell_arrival(std::uint32_t ep, std::uint32_t c, sim::Cycle at) {
  const std::uint32_t n = geometry_.routers();
  if (ep < n) {
    if (ramp_listener_) ramp_listener_->on_arrival(geometry_.coord(ep), hw::Color(static_cast<std::uint8_t>(c)), at);
  } else if (edge_listener_) {
    const std::uint32_t e = geometry_.edge_channels();
    edge_listener_->on_arrival(ep - n < e ? EdgeSide::West : EdgeSide::East, (ep - n) % e,
                               hw::Color(static_cast<std::uint8_t>(c)), at);
  }
}

void Mesh::tell_credit(std::uint32_t ep, std::uint32_t c, sim::Cycle at) {
  const std::uint32_t n = geometry_.routers();
  if (ep < n) {
    if (ramp_listener_) ramp_listener_->on_credit(geometry_.coord(ep), hw::Color(static_cast<std::uint8_t>(c)), at);
  } else if (edge_listener_) {
    const std::uint32_t e = geometry_.edge_channels();
    edge_listener_->on_credit(ep - n < e ? EdgeSide::West : EdgeSide::East, (ep - n) % e,
                              hw::Color(static_cast<std::uint8_t>(c)), at);
  }
}

void Mesh::route_error(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f) const {
  const RouteEntry e = options_.routes ? options_.routes->at(r, c) : RouteEntry{};
  throw sim::SimulationError(fmt::format(
      "wavelet on color {} (payload {:#010x}) reached router {} from its {} port, but {}", c, f.payload,
      geometry_.name(r), port_name(port_at(p)),
      e.empty() ? fmt::format("the route table has no route for color {} there", c)
                : fmt::format("the route for color {} there accepts only: {}", c, port_set_name(e.accept))));
}

// ---- endpoints -----------------------------------------------------------------------

void Mesh::empty_receive_queue(const char* what, std::uint32_t c) const {
  throw std::logic_error(fmt::format("fabric: {}() on an empty receive queue (color {})", what, c));
}

void Mesh::send(std::uint32_t ep, hw::Color color, Flit f, sim::Cycle now) {
  const std::uint32_t c = color.id();
  if (c >= colors_) throw std::logic_error(fmt::format("fabric: send on color {} of {}", c, colors_));
  if ((f.info & whole_packets_) != whole_packets_) outside_promise(ep, c);
  const std::uint64_t t = now.count();
  std::uint16_t& spent = ep_spent_[std::size_t{ep} * colors_ + c];
  if (spent >= depth_) refused(ep, c);
  stamp_send(ep, t);
  if (xy_) check_head(f);
  ++spent;
  BandStage* stage = stage_of(ep);
  ++(stage ? stage->counts : *counts_).in_network;
  ++(stage ? stage->injected : injected_);
  if (ramp_ == 1 && ep < geometry_.routers()) {  // a ramp: through the arrival register
    inlet_.arrive(ep, c, f, t);
    count_ramp_send(stage, t, c);
  } else {
    const std::uint32_t r = ep_router_[ep], p = ep_port_[ep];
    inlet_.reserve(r);
    queue_transit(Transit{r * kPorts + p, 0, static_cast<std::uint16_t>(c), f}, t + ramp_);  // a band's own
    ++(stage ? stage->wheel_added : wheel_count_);
  }
  if (stage)
    stage->wake_send = t + ramp_;
  else
    wake_self(now + sim::Cycle(ramp_));
}

void Mesh::refused(std::uint32_t ep, std::uint32_t c) const {
  if (held_colors_ && (ep >= geometry_.routers() || c >= held_colors_)) outside_promise(ep, c);
  no_credit(ep, c);
}

void Mesh::outside_promise(std::uint32_t ep, std::uint32_t c) const {
  throw std::logic_error(
      fmt::format("fabric: endpoint {} sent a wavelet on color {}, but the mesh was promised single-wavelet "
                  "packets from ramps on colors below {} (MeshOptions::traffic)",
                  ep, c, held_colors_));
}

void Mesh::popped_twice(std::uint32_t ep, std::uint64_t now) const {
  throw std::logic_error(fmt::format("fabric: endpoint {} popped twice in cycle {}", ep, now));
}

void Mesh::unconnected(std::uint32_t r, std::uint32_t o, std::uint32_t c) const {
  throw std::logic_error(fmt::format("fabric: router {} forwarded color {} {} where nothing is connected",
                                     geometry_.name(r), c, port_name(port_at(o))));
}

void Mesh::no_credit(std::uint32_t ep, std::uint32_t c) const {
  throw std::logic_error(fmt::format("fabric: endpoint {} sent on color {} without a credit", ep, c));
}

void Mesh::sent_twice(std::uint32_t ep, std::uint64_t now) const {
  throw std::logic_error(fmt::format("fabric: endpoint {} sent twice in cycle {}", ep, now));
}

void Mesh::head_outside(Flit f) const {
  throw std::logic_error(fmt::format("fabric: packet head for ({}, {}) outside the mesh", destination_x(f.payload),
                                     destination_y(f.payload)));
}

Flit Mesh::pop(std::uint32_t ep, hw::Color color, sim::Cycle now) {
  const std::uint32_t c = color.id();
  Fronts& fronts = ep_fronts_[ep];
  if (!((fronts.visible >> c) & 1u)) empty_receive_queue("pop", c);
  if (ep_last_pop_[ep] == now.count() + 1) popped_twice(ep, now.count());
  ep_last_pop_[ep] = now.count() + 1;
  RxQueue& q = rx_[std::size_t{ep} * colors_ + c];
  const Flit popped = q.front;
  const std::uint64_t cb = std::uint64_t{1} << c;
  if (--q.count == 0) {
    fronts.visible &= ~cb;
    fronts.control &= ~cb;
  } else {
    ring_queue::advance(q, rx_rings_[q.pool].data(), depth_);
    if (q.front.control())
      fronts.control |= cb;
    else
      fronts.control &= ~cb;
  }
  reads_[band_of_ep(ep)].ep_returns.push_back(Return{ep, c});  // a band's own
  if (BandStage* stage = stage_of(ep))
    stage->wake_pop = now.count() + 1;
  else
    wake_self(now + sim::Cycle(1));
  return popped;
}

// ---- bands ---------------------------------------------------------------------------

void Mesh::joined() {
  RouterSweep::Counters& n = *counts_;
  for (BandStage& s : stages_) {
    RouterSweep::Counters& d = s.counts;
    n.in_network += d.in_network;
    n.forwarded += d.forwarded;
    n.stalled += d.stalled;
    n.evaluations += d.evaluations;
    n.bypassed += d.bypassed;
    for (std::uint32_t c = 0; c < colors_; ++c) {
      n.color_forwarded[c] += d.color_forwarded[c];
      n.color_stalled[c] += d.color_stalled[c];
      n.color_occupancy[c] += d.color_occupancy[c];
      n.color_queued[c] += d.color_queued[c];
    }
    for (std::uint32_t p = 0; p < kPorts; ++p) {
      n.dir_occupancy[p] += d.dir_occupancy[p];
      n.dir_queued[p] += d.dir_queued[p];
    }
    d = RouterSweep::Counters{};
    injected_ += s.injected;
    s.injected = 0;
    for (std::uint32_t parity = 0; parity < 2; ++parity) {
      if (!s.ramp_sent[parity]) continue;
      ramp_sent_[parity] += s.ramp_sent[parity];
      s.ramp_sent[parity] = 0;
      for (std::uint32_t c = 0; c < colors_; ++c) {
        ramp_sent_colors_[parity][c] += s.ramp_sent_colors[parity][c];
        s.ramp_sent_colors[parity][c] = 0;
      }
    }
    for (const BandStage::Due& due : s.transits) queue_transit(due.transit, due.at);
    wheel_count_ += s.transits.size() + s.wheel_added;
    s.transits.clear();
    s.wheel_added = 0;
    delivered_ += s.delivered;
    s.delivered = 0;
    for (const BandStage::Notice& nt : s.notices) {
      switch (nt.kind) {
        case BandStage::Kind::Arrival:
          notify_arrival(nt.ep, nt.color, sim::Cycle(nt.at));
          break;
        case BandStage::Kind::Credit:
          notify_credit(nt.ep, nt.color, sim::Cycle(nt.at));
          break;
        case BandStage::Kind::Wake:
          ramp_listener_->wake_after_band(geometry_.coord(nt.ep), sim::Cycle(nt.at));
          break;
      }
    }
    s.notices.clear();
    if (s.wake_pop) wake_self(sim::Cycle(s.wake_pop));
    if (s.wake_send) wake_self(sim::Cycle(s.wake_send));
    s.wake_pop = s.wake_send = 0;
  }
  routers_->joined();
}

void Mesh::repartitioned(const std::vector<std::uint32_t>& old_first) {
  place_endpoints();
  // What the read phases hold, dealt out to the new owners; each queue's wavelets and credits
  // were all in one band's lists, in order, and stay so.
  std::vector<BandReads> old(reads_.size());
  for (std::size_t b = 0; b < reads_.size(); ++b) {
    std::swap(old[b], reads_[b]);
    reads_[b].wheel.resize(old[b].wheel.size());
  }
  for (BandReads& r : old) {
    for (std::uint64_t slot = 0; slot < r.wheel.size(); ++slot)
      for (const Transit& w : r.wheel[slot]) queue_transit(w, slot);
    for (const Return& ret : r.input_returns) reads_[band_of_ep(ret.target)].input_returns.push_back(ret);
    for (const Return& ret : r.ep_returns) reads_[band_of_ep(ret.target)].ep_returns.push_back(ret);
  }
  routers_->repartitioned(old_first);
}

// ---- the cycle -----------------------------------------------------------------------

void Mesh::read(sim::Cycle now) { routers_->read(now.count()); }

// Routers change state only in write(): evaluate() just notes that the cycle has begun.
void Mesh::evaluate(sim::Cycle now) { evaluated_ = now.count() + 1; }

sim::Cycle Mesh::write(sim::Cycle now) {
  const std::uint64_t t = now.count();
  processed_ = t + 1;
  if (t >= next_outage_) apply_outages(t);
  if (bands_) bands_->maybe_rebalance();
  if (routers_->write(t)) last_progress_ = now;
  check_deadlock(now);

  bool returns = false;
  for (const BandReads& r : reads_) returns = returns || !r.input_returns.empty() || !r.ep_returns.empty();
  if (routers_->busy() || returns || ramp_sent_[0] || ramp_sent_[1]) return now + sim::Cycle(1);
  if (wheel_count_)
    for (std::uint64_t j = 1; j <= wheel_mask_; ++j)
      for (const BandReads& r : reads_)
        if (!r.wheel[(t + j) & wheel_mask_].empty()) return now + sim::Cycle(j);
  return sim::Cycle::never();
}

std::uint64_t Mesh::port_occupancy(std::uint32_t r, std::uint32_t p) const {
  return routers_->port_occupancy(r, p) + (cycle_unfinished() ? port_unfinished(r, p) : 0);
}

std::uint32_t Mesh::port_queued(std::uint32_t r, std::uint32_t p) const {
  std::uint32_t n = 0;
  for (std::uint64_t m = routers_->queued_colors(r, p); m; m &= m - 1)
    n += routers_->queued(r, p, static_cast<std::uint32_t>(__builtin_ctzll(m)));
  return n;
}

// The cycle evaluated last, t = evaluated_ - 1, takes in the arrivals of cycle t - 1 (parity evaluated_).
std::uint64_t Mesh::port_unfinished(std::uint32_t r, std::uint32_t p) const {
  return port_queued(r, p) + (routers_->arriving(r, p, evaluated_ & 1u) ? 1u : 0u);
}

void Mesh::check_deadlock(sim::Cycle now) {
  if (counts_->in_network == 0) {
    last_progress_ = now;
    return;
  }
  if (now - last_progress_ >= config_.deadlock_timeout) throw sim::SimulationError(deadlock_report(now));
}

std::uint64_t Mesh::occupancy_integral() const {
  std::uint64_t sum = 0;
  for (std::uint64_t v : counts_->dir_occupancy) sum += v;
  if (cycle_unfinished())
    for (std::uint32_t r = 0; r < geometry_.routers(); ++r)
      for (std::uint32_t p = 0; p < kPorts; ++p) sum += port_unfinished(r, p);
  return sum;
}

std::string Mesh::describe() const {
  return fmt::format("fabric mesh {} x {} ({}, {} wavelets in flight)", geometry_.width(), geometry_.height(),
                     routers_->describe(), counts_->in_network);
}

}  // namespace wafersim::fabric
