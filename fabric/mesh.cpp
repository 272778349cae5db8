#include "fabric/mesh.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>

#include "fabric/endpoint.h"
#include "fabric/link_take.h"
#include "sim/engine/engine.h"
#include "sim/errors.h"

namespace wafersim::fabric {
namespace {

inline std::uint32_t lowest(std::uint64_t m) { return static_cast<std::uint32_t>(__builtin_ctzll(m)); }
constexpr std::uint16_t kRrSpan = kPorts * 64;

// XY requests (Mesh::Requests, and the outputs requested in `outs`, Block::busy): head (p, c)
// requests output o, or no longer does.
constexpr std::uint64_t kOneHead = std::uint64_t{1} << 32;
template <class R>
inline void add_request(R& rq, std::uint32_t& outs, std::uint32_t o, std::uint32_t p, std::uint32_t c) {
  rq.out[o].heads += kOneHead | p | c << 3;
  outs |= 1u << o;
  rq.out[o].colors[p] |= std::uint64_t{1} << c;
}
template <class R>
inline void remove_request(R& rq, std::uint32_t& outs, std::uint32_t o, std::uint32_t p, std::uint32_t c) {
  rq.out[o].colors[p] &= ~(std::uint64_t{1} << c);
  if (!(rq.out[o].heads -= kOneHead | p | c << 3)) outs &= ~(1u << o);
}

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
      credit_stride_((config.colors * kPorts + 31u) & ~31u),
      step_{0u - geometry.width(), 1u, geometry.width(), 0u - 1u},
      detail_(resolve(config.stats_detail, geometry.routers())),
      link_stats_(detail_ == StatsDetail::Links || options_.trace_counters == StatsDetail::Links),
      per_router_(detail_ != StatsDetail::Totals || options_.trace_counters == StatsDetail::Routers || link_stats_),
      idle_skip_(engine ? engine->options().idle_skip : options_.idle_skip),
      xy_(options_.routing == Routing::XY),
      sweep_(pick_sweep()) {
  if (colors_ == 0 || colors_ > 64) throw std::logic_error("Mesh: colors must be 1 .. 64");
  if (depth_ == 0 || depth_ > 0xffff) throw std::logic_error("Mesh: queue depth must be 1 .. 65535");
  if (hop_ == 0 || ramp_ == 0) throw std::logic_error("Mesh: hop and ramp latencies must be at least 1 cycle");
  if (options_.routes && (options_.routes->width() != geometry_.width() ||
                          options_.routes->height() != geometry_.height() || options_.routes->colors() != colors_))
    throw std::logic_error("Mesh: the route table was built for another mesh shape or color count");
  const std::size_t n = geometry_.routers();
  block_.assign(n, kNone);
  tiles_x_ = (geometry_.width() + kTile - 1) / kTile;
  const std::uint32_t tiles = tiles_x_ * ((geometry_.height() + kTile - 1) / kTile);
  active_ = sim::IndexSet(tiles * kTile * kTile);
  work_ = sim::IndexSet(tiles * kTile * kTile);
  boundary_.resize(n);
  for (std::uint32_t r = 0; r < n; ++r) {
    std::uint8_t b = 0;
    for (std::uint32_t o = 0; o < 4; ++o)
      if (geometry_.neighbour(r, port_at(o)) == MeshGeometry::kNone) b = static_cast<std::uint8_t>(b | (1u << o));
    boundary_[r] = b;
  }

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
  ep_block_.assign(ep_router_.size(), kNone);
  ep_fronts_.assign(ep_router_.size(), Fronts{});
  ep_full_base_ = static_cast<std::uint32_t>(n * kPorts - n);  // + an edge channel's endpoint (>= n)
  full_.resize(n * kPorts + 2 * std::size_t{e} + 1, 0);
  full_.back() = ~std::uint64_t{0};
  down_.resize(n * kPorts);
  for (std::uint32_t r = 0; r < n; ++r)
    for (std::uint32_t o = 0; o < kPorts; ++o) {
      const std::uint32_t nb = o == index(Port::Ramp) ? kNone : next_router(r, o);
      const std::uint32_t ep = nb == kNone ? endpoint_beyond(r, port_at(o)) : kNone;
      down_[r * kPorts + o] = nb != kNone   ? r * kPorts + o  // the sender keeps the link's credits
                              : ep != kNone ? ep_full(ep)
                                            : static_cast<std::uint32_t>(full_.size() - 1);
    }
  ports_.resize(ep_router_.size());
  // A power of two of buckets, so that a cycle's bucket is a mask, not a division.
  std::uint64_t buckets = 1;
  while (buckets < std::uint64_t{std::max(hop_, ramp_)} + 1) buckets *= 2;
  wheel_.resize(buckets);
  wheel_mask_ = buckets - 1;
  if (engine_) engine_->add(this);
}

Mesh::~Mesh() = default;

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

bool Mesh::use_lanes(std::uint32_t colors) {
  if (injected_ != 0) throw std::logic_error("Mesh::use_lanes: only before the first wavelet is sent");
  lanes_.reset();
  lane_colors_ = 0;
  if (!LaneRouters::kAvailable || colors == 0 || colors > LaneRouters::kColors || colors > colors_ || !xy_ ||
      geometry_.routers() > LaneRouters::kMaxRouters || geometry_.width() > LaneRouters::kMaxWidth || hop_ != 1 ||
      ramp_ != 1 || link_stats_ || options_.trace_counters != StatsDetail::Totals || depth_ > LaneRouters::kMaxDepth)
    return false;
  lanes_ = std::make_unique<LaneRouters>(geometry_.width(), geometry_.height(), depth_);
  lane_colors_ = colors;
  return true;
}

// ---- dynamic state -------------------------------------------------------------------

std::uint32_t Mesh::new_tile(std::uint32_t r) {
  const std::uint32_t w = geometry_.width(), h = geometry_.height();
  const std::uint32_t x0 = r % w / kTile * kTile, y0 = r / w / kTile * kTile;
  const auto base = static_cast<std::uint32_t>(blocks_.size());
  blocks_.resize(std::size_t{base} + std::size_t{kTile} * kTile);
  block_router_.resize(blocks_.size(), kNone);
  for (std::uint32_t y = y0; y < std::min(y0 + kTile, h); ++y)
    for (std::uint32_t x = x0; x < std::min(x0 + kTile, w); ++x) {
      const std::uint32_t q = geometry_.router(x, y), b = base + (y - y0) * kTile + (x - x0);
      block_[q] = b;
      block_router_[b] = q;
      counted_.push_back(q);
      Block& k = blocks_[b];
      k.xy = x | (y << 16);
      k.links = ~boundary_[q] & 15u;
      for (std::uint16_t& v : k.out.rr) v = kRrSpan - 1;
    }
  slots_.resize(blocks_.size() * kPorts * colors_);
  credits_.resize(blocks_.size() * credit_stride_, static_cast<std::uint16_t>(depth_));
  sleep_.resize(blocks_.size());
  if (xy_) {
    owned_by_.resize(blocks_.size() * kPorts * kPorts, 0);
    requests_.resize(blocks_.size());
  }
  if (link_stats_) {
    link_forwarded_.resize(slots_.size(), 0);
    link_stalled_.resize(slots_.size(), 0);
    link_occupancy_.resize(slots_.size(), 0);
  }
  return block_[r];
}

void Mesh::prepare_neighbours(std::uint32_t r) {
  for (std::uint32_t o = 0; o < 4; ++o)
    if (!(boundary_[r] >> o & 1u)) ensure_block(r + step_[o]);
  Block& k = blocks_[block_[r]];
  for (std::uint32_t o = 0; o < 4; ++o) k.next[o] = boundary_[r] >> o & 1u ? kNone : block_[r + step_[o]];
  k.ready = 1;
}

std::uint32_t Mesh::touched_routers() const {
  // Routers sent a wavelet: marked when they took it in, or still arriving from the last cycle written.
  const std::uint32_t parity = (processed_ + 1) & 1u;
  std::uint32_t n = 0;
  if (lanes_) {
    for (std::uint32_t r = 0; r < geometry_.routers(); ++r) {
      bool arriving = false;
      for (std::uint32_t p = 0; p < kPorts; ++p) arriving = arriving || lanes_->arriving(r, p, parity);
      n += (lanes_->injected_at(r) || lanes_->took_in(r) || (processed_ && arriving)) ? 1u : 0u;
    }
    return n;
  }
  for (const Block& k : blocks_) n += (k.used || (processed_ && k.in[parity].ports)) ? 1u : 0u;
  return n;
}

std::uint32_t Mesh::new_ep_block(std::uint32_t ep) {
  const auto b = static_cast<std::uint32_t>(ep_last_send_.size());
  ep_block_[ep] = b;
  rx_.resize(rx_.size() + colors_);
  ep_last_send_.push_back(0);
  ep_last_pop_.push_back(0);
  return b;
}

std::uint64_t Mesh::allocated_bytes() const {
  auto v = [](const auto& vec) { return static_cast<std::uint64_t>(vec.capacity() * sizeof(vec[0])); };
  return v(full_) + v(down_) + v(block_) + v(boundary_) + v(block_router_) + v(counted_) + v(blocks_) + v(slots_) +
         v(credits_) + v(owned_by_) + v(requests_) + v(link_forwarded_) + v(link_stalled_) + v(link_occupancy_) +
         v(flits_) + v(ports_) + v(ep_router_) + v(ep_port_) + v(ep_block_) + v(ep_fronts_) + v(rx_) +
         v(ep_last_send_) + v(ep_last_pop_) + v(rx_flits_) + active_.allocated_bytes() + work_.allocated_bytes() +
         v(unfull_) + v(ramp_sent_blocks_[0]) + v(ramp_sent_blocks_[1]) + (lanes_ ? lanes_->allocated_bytes() : 0);
}

// ---- helpers -------------------------------------------------------------------------

std::uint32_t Mesh::endpoint_beyond(std::uint32_t r, Port o) const {
  if (o == Port::Ramp) return r;
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
  const std::uint64_t t = now.count();
  if (lanes_) {  // (the same checks in the same order as below; a ramp's endpoint is its router)
    if (ep >= geometry_.routers() || c >= lane_colors_ || !f.head() || !f.tail()) outside_promise(ep, c);
    if (!lanes_->ramp_credit(ep, c)) no_credit(ep, c);
    stamp_send(ep, t);
    check_head(f);
    ++in_network_;
    ++injected_;
    lanes_->inject(ep, c, f, t);
    count_ramp_send(t, c);
    wake_self(now + sim::Cycle(ramp_));
    return;
  }
  const std::uint32_t r = ep_router_[ep], p = ep_port_[ep];
  std::uint32_t b = block_[r];
  if (b != kNone && credits_[credit_index(b, p, c)] == 0) no_credit(ep, c);
  stamp_send(ep, t);
  if (xy_) check_head(f);
  if (b == kNone) b = new_tile(r);
  blocks_[b].used = 1;
  --credits_[credit_index(b, p, c)];
  ++in_network_;
  ++injected_;
  if (ramp_ == 1 && ep < geometry_.routers()) {  // a ramp: through the arrival register
    blocks_[b].in[t & 1u].put(p, c, f);
    count_ramp_send(t, c);
    ramp_sent_blocks_[t & 1u].push_back(b);
  } else {
    wheel_[(t + ramp_) & wheel_mask_].push_back(Transit{r * kPorts + p, 0, static_cast<std::uint16_t>(c), f});
    ++wheel_count_;
  }
  wake_self(now + sim::Cycle(ramp_));
}

void Mesh::outside_promise(std::uint32_t ep, std::uint32_t c) const {
  throw std::logic_error(
      fmt::format("fabric: endpoint {} sent a wavelet on color {}, but the mesh was promised single-wavelet "
                  "packets from ramps on colors below {} (Mesh::use_lanes)",
                  ep, c, lane_colors_));
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
  const std::uint32_t eb = ep_block_[ep];
  if (ep_last_pop_[eb] == now.count() + 1) popped_twice(ep, now.count());
  ep_last_pop_[eb] = now.count() + 1;
  RxQueue& q = rx_[std::size_t{eb} * colors_ + c];
  const Flit popped = q.front;
  const std::uint64_t cb = std::uint64_t{1} << c;
  if (--q.count == 0) {
    fronts.visible &= ~cb;
    fronts.control &= ~cb;
  } else {
    advance(q, rx_flits_.data(), depth_);
    if (q.front.control())
      fronts.control |= cb;
    else
      fronts.control &= ~cb;
  }
  ep_returns_.push_back(Return{ep, c});
  wake_self(now + sim::Cycle(1));
  return popped;
}

// ---- the cycle -----------------------------------------------------------------------

template <bool kXY>
inline std::uint16_t Mesh::head_wants(const Block& k, std::uint32_t r, std::uint32_t p, std::uint32_t c, const Slot& q,
                                      std::uint32_t payload) const {
  if constexpr (kXY) {
    return static_cast<std::uint16_t>(
        1u << (q.route ? q.route - 1u : index(xy_output(k.xy & 0xffffu, k.xy >> 16, payload))));
  } else {
    const RouteEntry e = options_.routes ? options_.routes->at(r, c) : RouteEntry{};
    if (!(e.accept & (1u << p))) route_error(r, p, c, Flit{payload, 0});
    return static_cast<std::uint16_t>(e.forward & ~q.route);
  }
}

void Mesh::push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f, std::uint64_t now) {
  const std::uint32_t b = block_[r];                     // allocated when the wavelet was sent
  if (blocks_[b].asleep) wake_up(b, processed_, false);  // its counters up to here, with the queues as they were
  Slot& q = slots_[slot_index(b, p, c)];
  enqueue(q, f, flits_);
  Block& k = blocks_[b];
  stamp_queued(k, p, now);
  ++color_queued_[c];
  ++dir_queued_[p];
  if (q.count == 1) {
    k.nonempty[p] |= std::uint64_t{1} << c;
    if (xy_) {
      add_request(requests_[b], k.busy, xy_request(k, q, f.payload), p, c);
    } else {
      k.busy |= 1u << p;
      q.want = head_wants<false>(k, r, p, c, q, f.payload);
    }
  }
  active_.insert(b);
}

void Mesh::read(sim::Cycle now) {
  for (const Return& ret : input_returns_) {
    const std::uint32_t r = ret.target / kPorts, p = ret.target % kPorts;
    if (lanes_)
      lanes_->return_ramp_credit(r, ret.color);
    else
      ++credits_[credit_index(block_[r], p, ret.color)];
  }
  input_returns_.clear();
  for (const Return& ret : ep_returns_) {
    --rx_[std::size_t{ep_block_[ret.target]} * colors_ + ret.color].occ;
    full_[ep_full(ret.target)] &= ~(std::uint64_t{1} << ret.color);
    if (lanes_) lanes_->ramp_output_freed(ret.target, ret.color);  // (lanes have no edge channels)
    if (sleepers_) rouse(ep_router_[ret.target]);
  }
  ep_returns_.clear();
  if (const std::uint32_t parity = (now.count() + 1) & 1u; ramp_sent_[parity]) {
    last_progress_ = now;
    dir_queued_[index(Port::Ramp)] += ramp_sent_[parity];
    ramp_sent_[parity] = 0;
    std::uint32_t* const colors = ramp_sent_colors_[parity];
    for (std::uint32_t c = 0; c < colors_; ++c) {
      color_queued_[c] += colors[c];
      colors[c] = 0;
    }
    for (std::uint32_t b : ramp_sent_blocks_[parity]) active_.insert(b);
    ramp_sent_blocks_[parity].clear();
  }

  auto& bucket = wheel_[now.count() & wheel_mask_];
  if (!bucket.empty()) {
    last_progress_ = now;
    for (const Transit& t : bucket) {
      if (t.to_endpoint) {
        const std::uint32_t ep = t.target;
        RxQueue& q = rx_[std::size_t{ep_block_[ep]} * colors_ + t.color];
        enqueue(q, t.flit, rx_flits_);
        if (q.count == 1) {
          ep_fronts_[ep].visible |= std::uint64_t{1} << t.color;
          if (t.flit.control()) ep_fronts_[ep].control |= std::uint64_t{1} << t.color;
        }
        ++delivered_;
      } else {
        push_visible(t.target / kPorts, t.target % kPorts, t.color, t.flit, now.count());
      }
    }
    wheel_count_ -= bucket.size();
    bucket.clear();
  }
}

// Routers change state only in write(): evaluate() just notes that the cycle has begun.
void Mesh::evaluate(sim::Cycle now) { evaluated_ = now.count() + 1; }

inline void Mesh::to_endpoint(std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f, std::uint64_t now) {
  const std::uint32_t ep = endpoint_beyond(r, port_at(o));
  if (ep == kNone) unconnected(r, o, c);
  RxQueue& rq = rx_[std::size_t{ensure_ep_block(ep)} * colors_ + c];
  if (++rq.occ >= depth_) full_[ep_full(ep)] |= std::uint64_t{1} << c;
  // (The size less one, not wheel_mask_: the sweep this is inlined into compiles about 1% shorter.)
  wheel_[(now + ramp_) & (wheel_.size() - 1)].push_back(Transit{ep, 1, static_cast<std::uint16_t>(c), f});
  ++wheel_count_;
  notify_arrival(ep, c, sim::Cycle(now + ramp_));
}

template <bool kXY, bool kHop1>
inline void Mesh::eject(std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f, std::uint64_t now) {
  to_endpoint(r, o, c, f, now);
  if constexpr (kXY) {
    --in_network_;
    if constexpr (kHop1) --color_queued_[c];
  }
}

inline void Mesh::return_to_endpoint(std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint64_t now) {
  input_returns_.push_back(Return{r * kPorts + p, c});  // read() returns it next cycle
  const std::uint32_t ep = endpoint_beyond(r, port_at(p));
  if (ep != kNone) notify_credit(ep, c, sim::Cycle(now + 1));
}

void Mesh::stall(Block& k, std::uint32_t b, std::uint32_t o, std::uint64_t colors) {
  // (Counted in the loop: without POPCNT in the baseline ISA, __builtin_popcountll is a call.)
  std::uint32_t n = 0;
  for (; colors; colors &= colors - 1) {
    const std::uint32_t c = lowest(colors);
    ++n;
    ++color_stalled_[c];
    if (link_stats_) ++link_stalled_[slot_index(b, o, c)];
  }
  k.stalled[o] += n;
  stalled_ += n;
}

void Mesh::fall_asleep(std::uint32_t b, std::uint64_t now, const std::uint64_t* stalls, std::uint32_t outs) {
  Sleep& s = sleep_[b];
  s.since = now + 1;
  for (std::uint32_t o = 0; o < kPorts; ++o) {
    s.stalled[o] = outs >> o & 1u ? stalls[o] : 0;
    for (std::uint64_t m = s.stalled[o]; m; m &= m - 1) {
      ++sleep_stalls_;
      ++sleep_color_stalls_[lowest(m)];
      sleep_colors_ |= m & -m;
    }
  }
  blocks_[b].asleep = 1;
  ++sleepers_;
}

void Mesh::wake_up(std::uint32_t b, std::uint64_t upto, bool visited) {
  Sleep& s = sleep_[b];
  Block& k = blocks_[b];
  const std::uint64_t n = upto - s.since;
  if (link_stats_)
    for (std::uint32_t p = 0; p < kPorts; ++p)
      for (std::uint64_t m = k.nonempty[p]; m; m &= m - 1) {
        const std::uint32_t si = slot_index(b, p, lowest(m));
        link_occupancy_[si] += slots_[si].count * n;
      }
  for (std::uint32_t o = 0; o < kPorts; ++o)
    for (std::uint64_t m = s.stalled[o]; m; m &= m - 1) {
      const std::uint32_t c = lowest(m);
      k.stalled[o] += n;
      if (link_stats_) link_stalled_[slot_index(b, o, c)] += n;
      if (visited) {  // write() counted this cycle for it as asleep; the visit counts it again
        --stalled_;
        --color_stalled_[c];
      }
      --sleep_stalls_;
      if (--sleep_color_stalls_[c] == 0) sleep_colors_ &= ~(std::uint64_t{1} << c);
    }
  k.asleep = 0;
  --sleepers_;
}

std::uint64_t Mesh::stalled_of(std::uint32_t b, std::uint32_t o) const {
  std::uint64_t v = blocks_[b].stalled[o];
  if (const std::uint64_t n = owed(b))
    for (std::uint64_t m = sleep_[b].stalled[o]; m; m &= m - 1) v += n;
  return v;
}

std::uint64_t Mesh::link_stalled_of(std::uint32_t b, std::uint32_t o, std::uint32_t c) const {
  return link_stalled_[slot_index(b, o, c)] + ((sleep_[b].stalled[o] >> c & 1u) ? owed(b) : 0);
}

std::uint64_t Mesh::occupancy_of(std::uint32_t b, std::uint32_t p) const {
  return blocks_[b].occupancy[p] + std::uint64_t{queued_in(b, p)} * processed_ +
         (cycle_unfinished() ? port_unfinished(block_router_[b], p) : 0);
}

std::uint32_t Mesh::queued_in(std::uint32_t b, std::uint32_t p) const {
  std::uint32_t n = 0;
  for (std::uint64_t m = blocks_[b].nonempty[p]; m; m &= m - 1) n += slots_[slot_index(b, p, lowest(m))].count;
  return n;
}

std::uint64_t Mesh::link_occupancy_of(std::uint32_t b, std::uint32_t p, std::uint32_t c) const {
  const std::uint32_t si = slot_index(b, p, c);
  return link_occupancy_[si] + slots_[si].count * owed(b) + (cycle_unfinished() ? unfinished_queued(b, p, c) : 0);
}

template <bool kXY, bool kHop1, bool kLinkStats>
inline __attribute__((always_inline)) void Mesh::process(std::uint32_t b, std::uint64_t now) {
  const std::uint32_t r = block_router_[b];
  if (!blocks_[b].ready) prepare_neighbours(r);  // before taking pointers into the arrays
  Block& k = blocks_[b];
  if (k.asleep) wake_up(b, now, true);
  const std::uint64_t forwarded_before = forwarded_;
  const std::uint32_t D = depth_;
  Slot* const slots = &slots_[slot_index(b, 0, 0)];
  std::uint16_t* const credits = &credits_[credit_index(b, 0, 0)];
  Requests* const rq = kXY ? &requests_[b] : nullptr;

  // Take in what the neighbours and, over a 1-cycle ramp, the ramp sent last cycle. Under XY
  // routing over 1-cycle hops, a single-wavelet packet that finds its queue empty is a bypass
  // candidate: granted below without passing through its queue's slot if no other head wants
  // its output (a link, or the ramp: XY never routes to an edge channel).
  constexpr bool kBypass = kXY && kHop1 && !kLinkStats;
  std::uint32_t bypass_out[kPorts];  // [input]: a candidate's output (its wavelet stays in `in`)
  std::uint32_t bypass_ins = 0, bypass_many = 0;
  Arrivals& in = k.in[(now + 1) & 1u];
  if (std::uint32_t m = in.ports) {
    in.ports = 0;
    k.used = 1;
    if constexpr (kBypass) {
      // The four links' inputs (fabric/link_take.h), then the ramp's (a tenth as often).
      const std::uint32_t x = k.xy & 0xffffu, y = k.xy >> 16;
      LinkTake t = take_links(m, x, y, in.color, in.flit, k.nonempty, bypass_out);
      if (m & bit(Port::Ramp)) take_ramp(t, m, x, y, in.color, in.flit, k.nonempty, bypass_out);
      bypass_ins = t.ins;
      bypass_many = t.many;
      for (std::uint32_t p = 0; p < 4; ++p)
        assert(!(bypass_ins >> p & 1u) || bypass_out[p] == xy_route(x, y, in.flit[p].payload));
      m &= ~bypass_ins;
    }
    for (; m; m &= m - 1) {
      const std::uint32_t p = lowest(m), c = in.color[p];
      const Flit f = in.flit[p];
      stamp_queued(k, p, now);
      Slot& q = slots[c * kPorts + p];
      if (q.count) {
        enqueue(q, f, flits_);
      } else {
        q.front = f;
        q.count = 1;
        k.nonempty[p] |= std::uint64_t{1} << c;
        if constexpr (kXY) {
          add_request(*rq, k.busy, xy_request(k, q, f.payload), p, c);
        } else {
          k.busy |= 1u << p;
          q.want = head_wants<kXY>(k, r, p, c, q, f.payload);
        }
      }
    }
  }

  // Occupancy integrals count the wavelets queued in this cycle, before grants (the totals
  // per direction and color in write(); per input, each wavelet's cycles in and out).
  if (kLinkStats)
    for (std::uint32_t p = 0; p < kPorts; ++p)
      for (std::uint64_t m = k.nonempty[p]; m; m &= m - 1) {
        const std::uint32_t si = slot_index(b, p, lowest(m));
        link_occupancy_[si] += slots_[si].count;
      }

  // The bypass candidates: granted at once where the output is theirs alone, open and has a
  // credit (the grant the output loop below would make); queued as heads otherwise.
  if constexpr (kBypass) {
    const std::uint32_t taken = bypass_many | k.busy | k.owned_outs;
    std::uint64_t* const no_credit = &full_[std::size_t{r} * kPorts];
    for (; bypass_ins; bypass_ins &= bypass_ins - 1) {
      const std::uint32_t p = lowest(bypass_ins), c = in.color[p], o = bypass_out[p];
      const std::uint64_t cb = std::uint64_t{1} << c;
      const Flit f = in.flit[p];
      if ((taken >> o & 1u) || (no_credit[o] & cb)) {
        stamp_queued(k, p, now);
        Slot& q = slots[c * kPorts + p];
        q.front = f;
        q.count = 1;
        k.nonempty[p] |= cb;
        add_request(*rq, k.busy, o, p, c);
        continue;
      }
      k.out.rr[o] = static_cast<std::uint16_t>(p * 64 + c);
      ++forwarded_;
      ++bypassed_;
      if (o == index(Port::Ramp)) {
        eject<kXY, kHop1>(r, o, c, f, now);
      } else {
        const std::uint32_t pp = o ^ 2u, nb = k.next[o];
        if (--credits[c * kPorts + o] == 0) no_credit[o] |= cb;
        arrive(blocks_[nb], nb, pp, c, f, now);
      }
      ++k.out.forwarded[o];
      ++color_forwarded_[c];
      stamp_passed(k, p);
      --dir_queued_[p];
      // (As the output loop's `links >> p` below; one helper for both cost 1.7% instructions.)
      if (p == index(Port::Ramp))
        return_to_endpoint(r, p, c, now);
      else
        free_credit(k, r, p, c);
    }
  }

  // The requests of the heads at the start of the cycle. Grants below change heads but not
  // these, so each output is arbitrated from the start-of-cycle state whatever the order.
  // Under XY routing (a head requests one output) they are kept across cycles in `rq`: a
  // granted head's request goes at once (its output is not visited again), the request of
  // the head behind it is added after the outputs are done. For static routes they are
  // built here from the heads: most outputs are wanted by one head; masks per input matter
  // only for the others (built in a second pass).
  std::uint32_t first[kPorts];        // [output]: the first head wanting it (input | color << 8)
  std::uint32_t outs = 0, many = 0;   // bit o: one head / more than one head wants output o
  std::uint64_t req[kPorts][kPorts];  // static routes: [output][input]: colors wanting it (read for `many` only)
  if constexpr (kXY) outs = k.busy;
  for (std::uint32_t ports = kXY ? 0u : k.busy; ports; ports &= ports - 1) {
    const std::uint32_t p = lowest(ports);
    for (std::uint64_t m = k.nonempty[p]; m; m &= m - 1) {
      const std::uint32_t c = lowest(m), h = p | c << 8;
      for (std::uint32_t w = slots[c * kPorts + p].want; w; w &= w - 1) {
        const std::uint32_t o = lowest(w);
        if (outs >> o & 1u)
          many |= 1u << o;
        else
          first[o] = h;
        outs |= 1u << o;
      }
    }
  }
  if (!kXY && many) {
    for (std::uint32_t m = many; m; m &= m - 1) std::fill(req[lowest(m)], req[lowest(m)] + kPorts, 0);
    for (std::uint32_t ports = k.busy; ports; ports &= ports - 1) {
      const std::uint32_t p = lowest(ports);
      for (std::uint64_t m = k.nonempty[p]; m; m &= m - 1) {
        const std::uint32_t c = lowest(m);
        for (std::uint32_t w = slots[c * kPorts + p].want & many; w; w &= w - 1)
          req[lowest(w)][p] |= std::uint64_t{1} << c;
      }
    }
  }

  // Arbitrate each output (round robin over (input, color) in the order input * 64 + color,
  // starting after the last grant) and move the granted wavelet (or a copy of it).
  Flit* const flits = flits_.data();
  std::uint64_t* const full = full_.data();
  const std::uint32_t links = k.links;
  std::uint32_t behind[kPorts];  // XY: queues (p | c << 8) granted with a wavelet behind the head
  std::uint64_t stalls[kPorts];  // [output]: colors stalled for lack of credit (outputs in stall_outs)
  std::uint32_t stall_outs = 0;
  std::uint32_t n_behind = 0;
  for (; outs; outs &= outs - 1) {
    const std::uint32_t o = lowest(outs);
    // Whether one head wants the output (the common case), and which.
    bool single;
    std::uint32_t p, c;
    if constexpr (kXY) {
      const std::uint64_t h = rq->out[o].heads;
      single = h >> 32 == 1;
      p = static_cast<std::uint32_t>(h) & 7u;
      c = static_cast<std::uint32_t>(h) >> 3;
    } else {
      single = !(many >> o & 1u);
      p = first[o] & 0xffu;
      c = first[o] >> 8;
    }
    // (XY requests only a neighbouring router or the ramp, whose marks are the router's own.)
    assert(!kXY || down_[r * kPorts + o] == r * kPorts + o);
    const std::uint64_t blocked = full[kXY ? r * kPorts + o : down_[r * kPorts + o]];
    const std::uint64_t* held_by =
        kXY && (k.owned_outs >> o & 1u) ? &owned_by_[(std::size_t{b} * kPorts + o) * kPorts] : nullptr;
    // A color of the output held by a packet from input q is open only to q (XY wormhole).
    auto closed = [held_by](std::uint32_t q) {
      if (!held_by) return std::uint64_t{0};
      const std::uint64_t held = held_by[0] | held_by[1] | held_by[2] | held_by[3] | held_by[4];
      return held & ~held_by[q];
    };
    if (single) {
      const std::uint64_t want = std::uint64_t{1} << c;
      if (want & blocked) {
        stall(k, b, o, want);
        stalls[o] = want;
        stall_outs |= 1u << o;
        continue;
      }
      if (held_by && (want & closed(p))) continue;
    } else {
      std::uint64_t any = 0, open[kPorts];
      std::uint32_t with = 0;  // inputs with an open candidate
      const std::uint64_t* const ro = kXY ? rq->out[o].colors : req[o];
      if (held_by) {
        for (std::uint32_t q = 0; q < kPorts; ++q) {
          any |= ro[q];
          open[q] = ro[q] & ~blocked & ~closed(q);
          with |= static_cast<std::uint32_t>(open[q] != 0) << q;
        }
      } else {
        for (std::uint32_t q = 0; q < kPorts; ++q) {
          any |= ro[q];
          open[q] = ro[q] & ~blocked;
          with |= static_cast<std::uint32_t>(open[q] != 0) << q;
        }
      }
      if (any & blocked) {
        stall(k, b, o, any & blocked);
        stalls[o] = any & blocked;
        stall_outs |= 1u << o;
      }
      if (!with) continue;
      std::uint32_t start = k.out.rr[o] + 1u;
      if (start == kRrSpan) start = 0;
      const std::uint32_t sp = start >> 6, sc = start & 63u;
      const std::uint32_t later = with & ~((2u << sp) - 1u), earlier = with & ((1u << sp) - 1u);
      if (const std::uint64_t m = open[sp] & (~std::uint64_t{0} << sc)) {
        p = sp;
        c = lowest(m);
      } else if (later || earlier) {
        p = lowest(later ? later : earlier);
        c = lowest(open[p]);
      } else {
        p = sp;
        c = lowest(open[sp]);
      }
    }
    k.out.rr[o] = static_cast<std::uint16_t>(p * 64 + c);
    ++forwarded_;

    // Send it.
    const std::uint64_t cb = std::uint64_t{1} << c;
    Slot& q = slots[c * kPorts + p];
    const bool link = links >> o & 1u;
    if (link) {
      const std::uint32_t n = r + step_[o];
      const std::uint32_t pp = o ^ 2u;  // the facing port
      const std::uint32_t nb = k.next[o];
      if (--credits[c * kPorts + o] == 0) full[r * kPorts + o] |= cb;
      if (!kXY) ++in_network_;
      Block& kn = blocks_[nb];
      if (kHop1) {
        if constexpr (!kXY) {  // the wavelet is the head of its queue there if the route is wrong
          if (!((options_.routes ? options_.routes->at(n, c).accept : 0u) & (1u << pp))) route_error(n, pp, c, q.front);
          ++color_queued_[c];
        }
        arrive(kn, nb, pp, c, q.front, now);
      } else {
        kn.used = 1;
        wheel_[(now + hop_) & wheel_mask_].push_back(
            Transit{n * kPorts + pp, 0, static_cast<std::uint16_t>(c), q.front});
        ++wheel_count_;
      }
    } else {
      eject<kXY, kHop1>(r, o, c, q.front, now);
    }
    ++k.out.forwarded[o];
    ++color_forwarded_[c];
    if (kLinkStats) ++link_forwarded_[slot_index(b, o, c)];
    if constexpr (kXY) {
      // Head xor tail (a packet of several wavelets): the two bits are 01 or 10. (Read from the
      // slot here rather than held since the send: fewer registers live across it.)
      const std::uint32_t info = q.front.info;
      if ((info & (Flit::kHead | Flit::kTail)) - Flit::kHead <= Flit::kTail - Flit::kHead) {
        std::uint64_t* own = &owned_by_[(std::size_t{b} * kPorts + o) * kPorts];
        if (info & Flit::kHead) {
          own[p] |= cb;
          k.owned_outs |= 1u << o;
          q.route = static_cast<std::uint16_t>(o + 1);
        } else {
          own[p] &= ~cb;
          if (!(own[0] | own[1] | own[2] | own[3] | own[4])) k.owned_outs &= ~(1u << o);
          q.route = 0;
        }
      }
    } else {
      q.route = static_cast<std::uint16_t>(q.route | (1u << o));
      q.want = static_cast<std::uint16_t>(q.want & ~(1u << o));
      if (q.want) continue;  // copies still to send
      q.route = 0;
    }

    // Pop the head. (A wavelet that moves to a neighbour in XY mode stays in the network
    // and in its color's queue count.)
    stamp_left(k, p, now);
    --dir_queued_[p];
    if (!kXY) --in_network_;
    if (!kXY || !kHop1) --color_queued_[c];
    if constexpr (kXY) {
      if (single) {
        rq->out[o].heads = 0;
        rq->out[o].colors[p] = 0;
        k.busy &= ~(1u << o);
      } else {
        remove_request(*rq, k.busy, o, p, c);
      }
    }
    if (--q.count != 0) {
      advance(q, flits, D);
      if constexpr (kXY)
        behind[n_behind++] = p | c << 8;
      else
        q.want = head_wants<kXY>(k, r, p, c, q, q.front.payload);
    } else if (!(k.nonempty[p] &= ~cb) && !kXY) {
      k.busy &= ~(1u << p);
    }
    if (links >> p & 1u) {
      free_credit(k, r, p, c);
    } else {
      return_to_endpoint(r, p, c, now);
    }
  }
  if constexpr (kXY)
    for (std::uint32_t i = 0; i < n_behind; ++i) {
      const std::uint32_t p = behind[i] & 0xffu, c = behind[i] >> 8;
      const Slot& q = slots[c * kPorts + p];
      add_request(*rq, k.busy, xy_request(k, q, q.front.payload), p, c);
    }
  // (Under XY a router holds a visible wavelet exactly when one of its heads requests an output.)
  if (k.busy) {
    if (forwarded_ == forwarded_before && idle_skip_)
      fall_asleep(b, now, stalls, stall_outs);  // (if a sender already put it on the list, it is visited)
    else
      active_.insert(b);
  }
}

void Mesh::prefetch_visit(std::uint32_t b, std::uint64_t now) const {
  const Block& k = blocks_[b];
  const std::uint32_t r = block_router_[b];
  // A queue (p, c) about to send: its slot, this router's credits of color c (all outputs),
  // and the upstream router's credit it frees.
  auto queue = [&](std::uint32_t p, std::uint32_t c) {
    __builtin_prefetch(&slots_[slot_index(b, p, c)]);
    __builtin_prefetch(&credits_[credit_index(b, 0, c)]);
    if (k.links >> p & 1u) __builtin_prefetch(&credits_[credit_index(k.next[p], p ^ 2u, c)]);
  };
  for (std::uint32_t p = 0; p < kPorts; ++p)
    if (const std::uint64_t m = k.nonempty[p]) queue(p, lowest(m));
  const Arrivals& in = k.in[(now + 1) & 1u];
  for (std::uint32_t m = in.ports; m; m &= m - 1) queue(lowest(m), in.color[lowest(m)]);
  for (std::uint32_t m = k.links; m; m &= m - 1) __builtin_prefetch(&full_[down_[r * kPorts + lowest(m)]]);
}

template <bool kXY, bool kHop1, bool kLinkStats>
std::uint64_t Mesh::run_routers(std::uint64_t t) {
  const std::uint64_t before = forwarded_;
  auto one = [ this, t ](std::uint32_t b) __attribute__((always_inline)) { process<kXY, kHop1, kLinkStats>(b, t); };
  // In block order, so that neighbours' state is still in cache.
  if (idle_skip_) {
    router_evaluations_ += work_.drain_ahead(
        visit_order_, [this](std::uint32_t b) { prefetch_block(b); },
        [this, t](std::uint32_t b) { prefetch_visit(b, t); }, one);
  } else {
    router_evaluations_ += geometry_.routers();
    work_.drain([](std::uint32_t) {});
    for (std::uint32_t b = 0; b < blocks_.size(); ++b)
      if (block_router_[b] != kNone) one(b);
  }
  return forwarded_ - before;
}

Mesh::Sweep Mesh::pick_sweep() const {
  static constexpr Sweep kSweeps[8] = {&Mesh::run_routers<false, false, false>, &Mesh::run_routers<false, false, true>,
                                       &Mesh::run_routers<false, true, false>,  &Mesh::run_routers<false, true, true>,
                                       &Mesh::run_routers<true, false, false>,  &Mesh::run_routers<true, false, true>,
                                       &Mesh::run_routers<true, true, false>,   &Mesh::run_routers<true, true, true>};
  return kSweeps[(xy_ ? 4u : 0u) | (hop_ == 1 ? 2u : 0u) | (link_stats_ ? 1u : 0u)];
}

sim::Cycle Mesh::write(sim::Cycle now) {
  const std::uint64_t t = now.count();
  processed_ = t + 1;
  work_.swap(active_);  // active_ collects the routers with work next cycle
  std::uint64_t granted = 0;
  if (lanes_) {
    for (std::uint32_t c = 0; c < lane_colors_; ++c) color_occupancy_[c] += color_queued_[c];
    for (std::uint32_t p = 0; p < kPorts; ++p) dir_occupancy_[p] += dir_queued_[p];
    granted = sweep_lanes(t);
  } else if (!work_.empty() || sleepers_) {
    for (std::uint32_t c = 0; c < colors_; ++c) color_occupancy_[c] += color_queued_[c];
    for (std::uint32_t p = 0; p < kPorts; ++p) dir_occupancy_[p] += dir_queued_[p];
    // This cycle's credit stalls of the sleeping routers (wake_up() takes back those visited).
    stalled_ += sleep_stalls_;
    for (std::uint64_t m = sleep_colors_; m; m &= m - 1) color_stalled_[lowest(m)] += sleep_color_stalls_[lowest(m)];
    granted = (this->*sweep_)(t);
  }
  for (const Return& u : unfull_) {
    full_[u.target] &= ~(std::uint64_t{1} << u.color);
    if (sleepers_) rouse(u.target / kPorts);  // the sender
  }
  unfull_.clear();
  if (granted) last_progress_ = now;
  check_deadlock(now);

  if (!active_.empty() || sleepers_ || (lanes_ && lanes_->busy()) || !input_returns_.empty() || !ep_returns_.empty() ||
      ramp_sent_[0] || ramp_sent_[1])
    return now + sim::Cycle(1);
  if (wheel_count_)
    for (std::uint64_t j = 1; j < wheel_.size(); ++j)
      if (!wheel_[(t + j) & wheel_mask_].empty()) return now + sim::Cycle(j);
  return sim::Cycle::never();
}

void Mesh::LaneEnds::eject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) {
  mesh_.eject<true, true>(r, index(Port::Ramp), c, f, t);
}

void Mesh::LaneEnds::ramp_freed(std::uint32_t r, std::uint32_t c, std::uint64_t t) {
  mesh_.return_to_endpoint(r, index(Port::Ramp), c, t);
}

std::uint64_t Mesh::sweep_lanes(std::uint64_t t) {
  const LaneRouters::Totals totals{&forwarded_, &stalled_, color_forwarded_, color_stalled_, dir_queued_};
  const std::uint64_t visits = lanes_->group_visits();
  const std::uint64_t granted = lanes_->sweep(t, idle_skip_, lane_ends_, totals);
  router_evaluations_ += (lanes_->group_visits() - visits) * 8;
  return granted;
}

std::uint64_t Mesh::port_forwarded(std::uint32_t r, std::uint32_t p) const {
  if (lanes_) return lanes_->forwarded(r, p);
  return block_[r] == kNone ? 0 : blocks_[block_[r]].out.forwarded[p];
}

std::uint64_t Mesh::port_stalled(std::uint32_t r, std::uint32_t p) const {
  if (lanes_) return lanes_->stalled(r, p);
  return block_[r] == kNone ? 0 : stalled_of(block_[r], p);
}

std::uint64_t Mesh::port_occupancy(std::uint32_t r, std::uint32_t p) const {
  if (lanes_) return lanes_->occupancy(r, p) + (cycle_unfinished() ? port_unfinished(r, p) : 0);
  return block_[r] == kNone ? 0 : occupancy_of(block_[r], p);
}

std::uint32_t Mesh::port_queued(std::uint32_t r, std::uint32_t p) const {
  if (lanes_) return lanes_->queued(r, p);
  return block_[r] == kNone ? 0 : queued_in(block_[r], p);
}

bool Mesh::port_arriving(std::uint32_t r, std::uint32_t p, std::uint32_t parity) const {
  if (lanes_) return lanes_->arriving(r, p, parity);
  return block_[r] != kNone && (blocks_[block_[r]].in[parity].ports >> p & 1u);
}

// The cycle evaluated last, t = evaluated_ - 1, takes in the arrivals of cycle t - 1 (parity evaluated_).
std::uint64_t Mesh::port_unfinished(std::uint32_t r, std::uint32_t p) const {
  return port_queued(r, p) + (port_arriving(r, p, evaluated_ & 1u) ? 1u : 0u);
}

void Mesh::check_deadlock(sim::Cycle now) {
  if (in_network_ == 0) {
    last_progress_ = now;
    return;
  }
  if (now - last_progress_ >= config_.deadlock_timeout) throw sim::SimulationError(deadlock_report(now));
}

// (Per color: as port_unfinished.)
std::uint64_t Mesh::unfinished_queued(std::uint32_t b, std::uint32_t p, std::uint32_t c) const {
  const Arrivals& a = blocks_[b].in[evaluated_ & 1u];
  const bool arriving = ((a.ports >> p) & 1u) && a.color[p] == c;
  return slots_[slot_index(b, p, c)].count + (arriving ? 1u : 0u);
}

std::uint64_t Mesh::occupancy_integral() const {
  std::uint64_t sum = 0;
  for (std::uint64_t v : dir_occupancy_) sum += v;
  if (cycle_unfinished())
    for (std::uint32_t r = 0; r < geometry_.routers(); ++r)
      for (std::uint32_t p = 0; p < kPorts; ++p) sum += port_unfinished(r, p);
  return sum;
}

std::string Mesh::describe() const {
  if (lanes_)
    return fmt::format("fabric mesh {} x {} (routers in vector lanes, {} wavelets in flight)", geometry_.width(),
                       geometry_.height(), in_network_);
  return fmt::format("fabric mesh {} x {} ({} routers busy, {} wavelets in flight)", geometry_.width(),
                     geometry_.height(), active_.size(), in_network_);
}

}  // namespace wafersim::fabric
