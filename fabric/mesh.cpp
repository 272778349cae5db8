#include "fabric/mesh.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "fabric/endpoint.h"
#include "sim/engine/engine.h"
#include "sim/errors.h"

namespace wafersim::fabric {
namespace {

inline std::uint32_t lowest(std::uint64_t m) { return static_cast<std::uint32_t>(__builtin_ctzll(m)); }
inline std::uint32_t popcount(std::uint64_t m) { return static_cast<std::uint32_t>(__builtin_popcountll(m)); }
constexpr std::uint16_t kRrSpan = kPorts * 64;

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
      link_stats_(detail_ == StatsDetail::Links),
      per_router_(detail_ != StatsDetail::Totals),
      idle_skip_(engine ? engine->options().idle_skip : options_.idle_skip),
      xy_(options_.routing == Routing::XY) {
  if (colors_ == 0 || colors_ > 64) throw std::logic_error("Mesh: colors must be 1 .. 64");
  if (depth_ == 0 || depth_ > 0xffff) throw std::logic_error("Mesh: queue depth must be 1 .. 65535");
  if (hop_ == 0 || ramp_ == 0) throw std::logic_error("Mesh: hop and ramp latencies must be at least 1 cycle");
  if (options_.routes && (options_.routes->width() != geometry_.width() ||
                          options_.routes->height() != geometry_.height() || options_.routes->colors() != colors_))
    throw std::logic_error("Mesh: the route table was built for another mesh shape or color count");
  const std::size_t n = geometry_.routers();
  block_.assign(n, kNone);
  active_ = RouterSet(static_cast<std::uint32_t>(n));
  work_ = RouterSet(static_cast<std::uint32_t>(n));
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
  ep_visible_.assign(ep_router_.size(), 0);
  used_.assign((n + 63) / 64, 0);
  credit_stride_ = (std::size_t{kPorts} * colors_ + 31) / 32 * 32;  // a whole number of cache lines
  ports_.resize(ep_router_.size());
  color_forwarded_.assign(colors_, 0);
  color_stalled_.assign(colors_, 0);
  color_occupancy_.assign(colors_, 0);
  color_queued_.assign(colors_, 0);
  wheel_.resize(std::max(hop_, ramp_) + 1);
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

// ---- dynamic state -------------------------------------------------------------------

std::uint32_t Mesh::new_chunk(std::uint32_t r) {
  const std::uint32_t first = r - r % kChunk;
  const std::uint32_t count = std::min(kChunk, geometry_.routers() - first);
  const auto base = static_cast<std::uint32_t>(blocks_.size());
  blocks_.resize(std::size_t{base} + count);
  credits_.resize(blocks_.size() * credit_stride_, 0);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t q = first + i, b = base + i;
    block_[q] = b;
    Block& k = blocks_[b];
    const hw::PeCoord pc = geometry_.coord(q);
    k.xy = pc.x | (std::uint32_t{pc.y} << 16);
    for (std::uint32_t o = 0; o < kPorts; ++o) {
      k.out[o].rr = kRrSpan - 1;
      const bool connected = (o < 4 && next_router(q, o) != kNone) || endpoint_beyond(q, port_at(o)) != kNone;
      if (!connected) {
        k.out[o].full = ~std::uint64_t{0};
        continue;
      }
      for (std::uint32_t c = 0; c < colors_; ++c) credits(b)[c * kPorts + o] = static_cast<std::uint16_t>(depth_);
    }
  }
  const std::size_t per = std::size_t{kPorts} * colors_;
  slots_.resize(blocks_.size() * per);
  if (xy_) owned_by_.resize(blocks_.size() * kPorts * kPorts, 0);
  if (link_stats_) {
    link_forwarded_.resize(slots_.size(), 0);
    link_stalled_.resize(slots_.size(), 0);
    link_occupancy_.resize(slots_.size(), 0);
  }
  return block_[r];
}

void Mesh::ensure_buffer(Slot& q) {
  if (q.buf != kNone) return;
  q.buf = static_cast<std::uint32_t>(flits_.size());
  flits_.resize(flits_.size() + depth_);
}

std::uint32_t Mesh::ensure_ep_block(std::uint32_t ep) {
  if (ep_block_[ep] != kNone) return ep_block_[ep];
  const auto b = static_cast<std::uint32_t>(ep_last_send_.size());
  ep_block_[ep] = b;
  rx_.resize(rx_.size() + colors_);
  ep_last_send_.push_back(0);
  ep_last_pop_.push_back(0);
  return b;
}

const Mesh::Slot* Mesh::find_slot(std::uint32_t r, std::uint32_t p, std::uint32_t c) const {
  return block_[r] == kNone ? nullptr : &slots_[slot_index(block_[r], p, c)];
}

const Mesh::RxQueue* Mesh::find_rx(std::uint32_t ep, std::uint32_t c) const {
  return ep_block_[ep] == kNone ? nullptr : &rx_[std::size_t{ep_block_[ep]} * colors_ + c];
}

std::uint64_t Mesh::allocated_bytes() const {
  auto v = [](const auto& vec) { return static_cast<std::uint64_t>(vec.capacity() * sizeof(vec[0])); };
  return v(block_) + v(boundary_) + v(used_) + v(block_router_) + v(blocks_) + v(slots_) + v(credits_) + v(owned_by_) +
         v(link_forwarded_) + v(link_stalled_) + v(link_occupancy_) + v(flits_) + v(ports_) + v(ep_router_) +
         v(ep_port_) + v(ep_block_) + v(ep_visible_) + v(rx_) + v(ep_last_send_) + v(ep_last_pop_) + v(rx_flits_) +
         active_.allocated_bytes() + work_.allocated_bytes() + v(link_returns_);
}

// ---- helpers -------------------------------------------------------------------------

std::uint32_t Mesh::endpoint_beyond(std::uint32_t r, Port o) const {
  if (o == Port::Ramp) return r;
  const std::uint32_t ch = geometry_.channel_beyond(r, o);
  if (ch == MeshGeometry::kNone) return kNone;
  return edge_endpoint(o == Port::West ? EdgeSide::West : EdgeSide::East, ch);
}

Port Mesh::xy_output(std::uint32_t x, std::uint32_t y, std::uint32_t payload) const {
  const std::uint32_t dx = destination_x(payload), dy = destination_y(payload);
  if (dx > x) return Port::East;
  if (dx < x) return Port::West;
  if (dy > y) return Port::South;
  if (dy < y) return Port::North;
  return Port::Ramp;
}

void Mesh::wake_self(sim::Cycle at) {
  if (!engine_ || at == last_wake_request_) return;
  last_wake_request_ = at;
  engine_->wake(this, at);
}

void Mesh::notify_arrival(std::uint32_t ep, std::uint32_t c, sim::Cycle at) {
  const std::uint32_t n = geometry_.routers();
  if (ep < n) {
    if (ramp_listener_) ramp_listener_->on_arrival(geometry_.coord(ep), hw::Color(static_cast<std::uint8_t>(c)), at);
  } else if (edge_listener_) {
    const std::uint32_t e = geometry_.edge_channels();
    edge_listener_->on_arrival(ep - n < e ? EdgeSide::West : EdgeSide::East, (ep - n) % e,
                               hw::Color(static_cast<std::uint8_t>(c)), at);
  }
}

void Mesh::notify_credit(std::uint32_t ep, std::uint32_t c, sim::Cycle at) {
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

bool Mesh::can_send(std::uint32_t ep, hw::Color c) const {
  const Slot* s = find_slot(ep_router_[ep], ep_port_[ep], c.id());
  return !s || s->occ < depth_;
}

void Mesh::send(std::uint32_t ep, hw::Color color, Flit f, sim::Cycle now) {
  const std::uint32_t c = color.id();
  if (c >= colors_) throw std::logic_error(fmt::format("fabric: send on color {} of {}", c, colors_));
  if (!can_send(ep, color))
    throw std::logic_error(fmt::format("fabric: endpoint {} sent on color {} without a credit", ep, c));
  const std::uint32_t eb = ensure_ep_block(ep);
  if (ep_last_send_[eb] == now.count() + 1)
    throw std::logic_error(fmt::format("fabric: endpoint {} sent twice in cycle {}", ep, now.count()));
  ep_last_send_[eb] = now.count() + 1;
  if (xy_ && f.head() && !geometry_.contains(destination_x(f.payload), destination_y(f.payload)))
    throw std::logic_error(fmt::format("fabric: packet head for ({}, {}) outside the mesh", destination_x(f.payload),
                                       destination_y(f.payload)));
  const std::uint32_t r = ep_router_[ep], p = ep_port_[ep];
  ++slots_[slot_index(use_router(r), p, c)].occ;
  ++in_network_;
  ++injected_;
  wheel_[(now.count() + ramp_) % wheel_.size()].push_back(Transit{r * kPorts + p, 0, static_cast<std::uint16_t>(c), f});
  ++wheel_count_;
  wake_self(now + sim::Cycle(ramp_));
}

Flit Mesh::front(std::uint32_t ep, hw::Color c) const {
  if (!((ep_visible_[ep] >> c.id()) & 1u))
    throw std::logic_error(fmt::format("fabric: front() on an empty receive queue (color {})", c.id()));
  const RxQueue& q = *find_rx(ep, c.id());
  return rx_flits_[q.buf + q.head];
}

void Mesh::pop(std::uint32_t ep, hw::Color color, sim::Cycle now) {
  const std::uint32_t c = color.id();
  if (!((ep_visible_[ep] >> c) & 1u))
    throw std::logic_error(fmt::format("fabric: pop() on an empty receive queue (color {})", c));
  const std::uint32_t eb = ep_block_[ep];
  if (ep_last_pop_[eb] == now.count() + 1)
    throw std::logic_error(fmt::format("fabric: endpoint {} popped twice in cycle {}", ep, now.count()));
  ep_last_pop_[eb] = now.count() + 1;
  RxQueue& q = rx_[std::size_t{eb} * colors_ + c];
  q.head = static_cast<std::uint16_t>(q.head + 1u == depth_ ? 0u : q.head + 1u);
  if (--q.count == 0) ep_visible_[ep] &= ~(std::uint64_t{1} << c);
  ep_returns_.push_back(Return{ep, c});
  wake_self(now + sim::Cycle(1));
}

// ---- the cycle -----------------------------------------------------------------------

template <bool kXY>
void Mesh::request(Block& k, std::uint32_t r, std::uint32_t p, std::uint32_t c, const Slot& q, std::uint32_t payload) {
  const std::uint64_t cb = std::uint64_t{1} << c;
  if constexpr (kXY) {
    const std::uint32_t o = q.route ? q.route - 1u : index(xy_output(k.xy & 0xffffu, k.xy >> 16, payload));
    k.out[o].req[p] |= cb;
    k.out_flags |= 1u << o;
  } else {
    const RouteEntry e = options_.routes ? options_.routes->at(r, c) : RouteEntry{};
    if (!(e.accept & (1u << p))) route_error(r, p, c, Flit{payload, 0});
    const std::uint32_t outs = e.forward & ~q.route;
    for (std::uint32_t m = outs; m; m &= m - 1) k.out[lowest(m)].req[p] |= cb;
    k.out_flags |= outs;
  }
}

void Mesh::push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f) {
  const std::uint32_t b = block_[r];  // allocated when the wavelet was sent
  Slot& q = slots_[slot_index(b, p, c)];
  ensure_buffer(q);
  std::uint32_t pos = q.head + q.count;
  if (pos >= depth_) pos -= depth_;
  flits_[q.buf + pos] = f;
  Block& k = blocks_[b];
  ++k.queued[p];
  ++k.total;
  ++color_queued_[c];
  if (q.count++ == 0) {
    k.nonempty[p] |= std::uint64_t{1} << c;
    if (xy_)
      request<true>(k, r, p, c, q, f.payload);
    else
      request<false>(k, r, p, c, q, f.payload);
  }
  active_.insert(r);
}

void Mesh::read(sim::Cycle now) {
  for (const Return& ret : input_returns_) {
    const std::uint32_t r = ret.target / kPorts, p = ret.target % kPorts;
    --slots_[slot_index(block_[r], p, ret.color)].occ;
  }
  input_returns_.clear();
  for (const Return& ret : ep_returns_) return_credit(ep_router_[ret.target], ep_port_[ret.target], ret.color);
  ep_returns_.clear();

  auto& bucket = wheel_[now.count() % wheel_.size()];
  if (!bucket.empty()) {
    last_progress_ = now;
    for (const Transit& t : bucket) {
      if (t.to_endpoint) {
        const std::uint32_t ep = t.target;
        RxQueue& q = rx_[std::size_t{ep_block_[ep]} * colors_ + t.color];
        if (q.buf == kNone) {
          q.buf = static_cast<std::uint32_t>(rx_flits_.size());
          rx_flits_.resize(rx_flits_.size() + depth_);
        }
        std::uint32_t pos = q.head + q.count;
        if (pos >= depth_) pos -= depth_;
        rx_flits_[q.buf + pos] = t.flit;
        ++q.count;
        ep_visible_[ep] |= std::uint64_t{1} << t.color;
        ++delivered_;
      } else {
        push_visible(t.target / kPorts, t.target % kPorts, t.color, t.flit);
      }
    }
    wheel_count_ -= bucket.size();
    bucket.clear();
  }
}

// Routers change state only in write(): evaluate() just notes that the cycle has begun.
void Mesh::evaluate(sim::Cycle now) { evaluated_ = now.count() + 1; }

template <bool kXY>
void Mesh::deliver(std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f, std::uint64_t now) {
  if (o != index(Port::Ramp) && !(boundary_[r] >> o & 1u)) {
    const std::uint32_t n = next_router(r, o);
    const std::uint32_t pp = o ^ 2u;  // the facing port
    mark_used(n);
    ++in_network_;
    if (hop_ != 1) {
      wheel_[(now + hop_) % wheel_.size()].push_back(Transit{n * kPorts + pp, 0, static_cast<std::uint16_t>(c), f});
      ++wheel_count_;
      return;
    }
    if constexpr (!kXY)  // the wavelet is the head of its queue there if the route is wrong
      if (!((options_.routes ? options_.routes->at(n, c).accept : 0u) & (1u << pp))) route_error(n, pp, c, f);
    ++color_queued_[c];
    Arrivals& a = blocks_[block_[n]].in[now & 1u];
    a.ports |= (std::uint64_t{1} << pp) | (std::uint64_t{c} << (kArrivingColor + 8 * pp));
    a.flit[pp] = f;
    active_.insert(n);
    return;
  }
  const std::uint32_t ep = endpoint_beyond(r, port_at(o));
  if (ep == kNone)
    throw std::logic_error(fmt::format("fabric: router {} forwarded color {} {} where nothing is connected",
                                       geometry_.name(r), c, port_name(port_at(o))));
  ensure_ep_block(ep);
  wheel_[(now + ramp_) % wheel_.size()].push_back(Transit{ep, 1, static_cast<std::uint16_t>(c), f});
  ++wheel_count_;
  notify_arrival(ep, c, sim::Cycle(now + ramp_));
}

template <bool kXY>
std::uint32_t Mesh::process(std::uint32_t r, std::uint64_t now, std::uint64_t* dir) {
  const std::uint32_t b = block_[r];
  Block& k = blocks_[b];
  const std::uint32_t C = colors_, D = depth_;
  Slot* const slots = &slots_[std::size_t{b} * kPorts * C];

  // Take in what the neighbours sent last cycle.
  Arrivals& in = k.in[(now + 1) & 1u];
  if (const std::uint64_t a = in.ports) {
    in.ports = 0;
    for (std::uint32_t m = static_cast<std::uint32_t>(a) & 31u; m; m &= m - 1) {
      const std::uint32_t p = lowest(m);
      const auto c = static_cast<std::uint32_t>(a >> (kArrivingColor + 8 * p)) & 63u;
      const Flit f = in.flit[p];
      Slot& q = slots[p * C + c];
      ensure_buffer(q);
      std::uint32_t pos = q.head + q.count;
      if (pos >= D) pos -= D;
      flits_[q.buf + pos] = f;
      ++k.queued[p];
      ++k.total;
      if (q.count++ == 0) {
        k.nonempty[p] |= std::uint64_t{1} << c;
        request<kXY>(k, r, p, c, q, f.payload);
      }
    }
  }

  // Occupancy integrals count the wavelets queued in this cycle, before grants.
  for (std::uint32_t p = 0; p < kPorts; ++p) dir[p] += k.queued[p];
  if (per_router_) {
    for (std::uint32_t p = 0; p < kPorts; ++p) k.occupancy[p] += k.queued[p];
    if (link_stats_)
      for (std::uint32_t p = 0; p < kPorts; ++p)
        for (std::uint64_t m = k.nonempty[p]; m; m &= m - 1) {
          const std::uint32_t si = slot_index(b, p, lowest(m));
          link_occupancy_[si] += slots_[si].count;
        }
  }

  // Arbitrate every output from the state at the start of the cycle.
  std::uint32_t picks[kPorts];  // output | input << 8 | color << 16
  std::uint32_t granted = 0;
  for (std::uint32_t outs = k.out_flags; outs; outs &= outs - 1) {
    const std::uint32_t o = lowest(outs);
    Output& out = k.out[o];
    const std::uint64_t* want = out.req;
    const std::uint64_t any = want[0] | want[1] | want[2] | want[3] | want[4];
    if (!any) {
      k.out_flags &= ~(1u << o);
      continue;
    }
    const std::uint64_t credit = ~out.full;
    if (any & ~credit) stall(k, b, o, any & ~credit);
    if (!(any & credit)) continue;
    std::uint64_t open[kPorts] = {want[0] & credit, want[1] & credit, want[2] & credit, want[3] & credit,
                                  want[4] & credit};
    if (kXY && (k.owned_outs >> o & 1u)) {
      // A color of this output held by a packet from input q is open only to q.
      const std::uint64_t* own = &owned_by_[(std::size_t{b} * kPorts + o) * kPorts];
      const std::uint64_t held = own[0] | own[1] | own[2] | own[3] | own[4];
      for (std::uint32_t p = 0; p < kPorts; ++p) open[p] &= ~(held & ~own[p]);
    }
    // Round robin over (input, color), starting after the last grant.
    std::uint32_t start = out.rr + 1u;
    if (start == kRrSpan) start = 0;
    const std::uint32_t sp = start >> 6, sc = start & 63u;
    std::uint32_t pick = kNone;
    if (const std::uint64_t m = open[sp] & (~std::uint64_t{0} << sc)) {
      pick = sp * 64 + lowest(m);
    } else {
      for (std::uint32_t j = 1, p = sp; j <= kPorts; ++j) {
        if (++p == kPorts) p = 0;
        std::uint64_t m2 = open[p];
        if (j == kPorts) m2 &= (std::uint64_t{1} << sc) - 1;
        if (m2) {
          pick = p * 64 + lowest(m2);
          break;
        }
      }
    }
    if (pick == kNone) continue;
    out.rr = static_cast<std::uint16_t>(pick);
    picks[granted++] = o | (pick >> 6) << 8 | (pick & 63u) << 16;
  }
  if (!granted) {
    if (k.total) active_.insert(r);
    return 0;
  }
  // The neighbours' state must exist before move() takes references into the arrays.
  for (std::uint32_t i = 0; i < granted; ++i) {
    const std::uint32_t o = picks[i] & 0xffu;
    if (o != index(Port::Ramp) && !(boundary_[r] >> o & 1u) && block_[next_router(r, o)] == kNone)
      new_chunk(next_router(r, o));
  }
  move<kXY>(r, picks, granted, now);
  return granted;
}

template <bool kXY>
void Mesh::move(std::uint32_t r, const std::uint32_t* picks, std::uint32_t granted, std::uint64_t now) {
  const std::uint32_t b = block_[r];
  Block& k = blocks_[b];
  const std::uint32_t C = colors_, D = depth_;
  Slot* const slots = &slots_[std::size_t{b} * kPorts * C];
  std::uint16_t* const cred = credits(b);
  for (std::uint32_t i = 0; i < granted; ++i) {
    const std::uint32_t o = picks[i] & 0xffu, p = (picks[i] >> 8) & 0xffu, c = picks[i] >> 16;
    const std::uint64_t cb = std::uint64_t{1} << c;
    Slot& q = slots[p * C + c];
    const Flit f = flits_[q.buf + q.head];
    Output& out = k.out[o];
    if (--cred[c * kPorts + o] == 0) out.full |= cb;
    deliver<kXY>(r, o, c, f, now);
    ++out.forwarded;
    ++color_forwarded_[c];
    if (link_stats_) ++link_forwarded_[slot_index(b, o, c)];
    out.req[p] &= ~cb;
    if constexpr (kXY) {
      if (f.head() != f.tail()) {
        std::uint64_t* own = &owned_by_[(std::size_t{b} * kPorts + o) * kPorts];
        if (f.head()) {
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
      if (options_.routes->at(r, c).forward & ~q.route) continue;  // copies still to send
      q.route = 0;
    }

    // Pop the head; its slot is a credit for the sender from the next cycle.
    q.head = static_cast<std::uint16_t>(q.head + 1u == D ? 0u : q.head + 1u);
    --k.queued[p];
    --k.total;
    --color_queued_[c];
    --in_network_;
    if (--q.count == 0)
      k.nonempty[p] &= ~cb;
    else
      request<kXY>(k, r, p, c, q, flits_[q.buf + q.head].payload);
    if (p != index(Port::Ramp) && !(boundary_[r] >> p & 1u)) {
      link_returns_.push_back(Return{next_router(r, p) * kPorts + (p ^ 2u), c});
    } else {
      input_returns_.push_back(Return{r * kPorts + p, c});  // fed by an endpoint: read() returns it
      const std::uint32_t ep = endpoint_beyond(r, port_at(p));
      if (ep != kNone) notify_credit(ep, c, sim::Cycle(now + 1));
    }
  }
  if (k.total) active_.insert(r);
}

void Mesh::stall(Block& k, std::uint32_t b, std::uint32_t o, std::uint64_t colors) {
  const std::uint32_t n = popcount(colors);
  k.stalled[o] += n;
  stalled_ += n;
  for (; colors; colors &= colors - 1) {
    const std::uint32_t c = lowest(colors);
    ++color_stalled_[c];
    if (link_stats_) ++link_stalled_[slot_index(b, o, c)];
  }
}

sim::Cycle Mesh::write(sim::Cycle now) {
  const std::uint64_t t = now.count();
  processed_ = t + 1;
  work_.swap(active_);  // active_ collects the routers with work next cycle
  std::uint64_t granted = 0;
  if (!work_.empty()) {
    for (std::uint32_t c = 0; c < colors_; ++c) color_occupancy_[c] += color_queued_[c];
    std::uint64_t dir[kPorts] = {};
    auto one = [&](std::uint32_t r) { granted += xy_ ? process<true>(r, t, dir) : process<false>(r, t, dir); };
    // In router order, so that neighbours' state is still in cache.
    if (idle_skip_) {
      router_evaluations_ += work_.size();
      work_.drain(one);
    } else {
      router_evaluations_ += geometry_.routers();
      work_.drain([](std::uint32_t) {});
      for (std::uint32_t r = 0, n = geometry_.routers(); r < n; ++r)
        if (block_[r] != kNone) one(r);
    }
    for (std::uint32_t p = 0; p < kPorts; ++p) dir_occupancy_[p] += dir[p];
  }
  for (const Return& ret : link_returns_) return_credit(ret.target / kPorts, ret.target % kPorts, ret.color);
  link_returns_.clear();
  if (granted) {
    forwarded_ += granted;
    last_progress_ = now;
  }
  check_deadlock(now);

  if (!active_.empty() || !input_returns_.empty() || !ep_returns_.empty()) return now + sim::Cycle(1);
  if (wheel_count_)
    for (std::uint64_t j = 1; j < wheel_.size(); ++j)
      if (!wheel_[(t + j) % wheel_.size()].empty()) return now + sim::Cycle(j);
  return sim::Cycle::never();
}

void Mesh::check_deadlock(sim::Cycle now) {
  if (in_network_ == 0) {
    last_progress_ = now;
    return;
  }
  if (now - last_progress_ >= config_.deadlock_timeout) throw sim::SimulationError(deadlock_report(now));
}

// The cycle evaluated last, t = evaluated_ - 1, takes in the arrivals of cycle t - 1 (parity evaluated_).
std::uint64_t Mesh::unfinished_queued(std::uint32_t b, std::uint32_t p) const {
  return blocks_[b].queued[p] + ((blocks_[b].in[evaluated_ & 1u].ports >> p) & 1u);
}

std::uint64_t Mesh::unfinished_queued(std::uint32_t b, std::uint32_t p, std::uint32_t c) const {
  const std::uint64_t a = blocks_[b].in[evaluated_ & 1u].ports;
  const bool arriving = ((a >> p) & 1u) && ((a >> (kArrivingColor + 8 * p)) & 63u) == c;
  return slots_[slot_index(b, p, c)].count + (arriving ? 1u : 0u);
}

std::uint64_t Mesh::occupancy_integral() const {
  std::uint64_t sum = 0;
  for (std::uint64_t v : dir_occupancy_) sum += v;
  if (cycle_unfinished())
    for (std::uint32_t b = 0; b < blocks_.size(); ++b)
      for (std::uint32_t p = 0; p < kPorts; ++p) sum += unfinished_queued(b, p);
  return sum;
}

std::string Mesh::describe() const {
  return fmt::format("fabric mesh {} x {} ({} routers busy, {} wavelets in flight)", geometry_.width(),
                     geometry_.height(), active_.size(), in_network_);
}

}  // namespace wafersim::fabric
