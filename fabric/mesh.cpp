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
      link_stats_(detail_ == StatsDetail::Links || options_.trace_counters == StatsDetail::Links),
      per_router_(detail_ != StatsDetail::Totals || options_.trace_counters == StatsDetail::Routers || link_stats_),
      idle_skip_(engine ? engine->options().idle_skip : options_.idle_skip) {
  if (colors_ == 0 || colors_ > 64) throw std::logic_error("Mesh: colors must be 1 .. 64");
  if (depth_ == 0 || depth_ > 0xffff) throw std::logic_error("Mesh: queue depth must be 1 .. 65535");
  if (hop_ == 0 || ramp_ == 0) throw std::logic_error("Mesh: hop and ramp latencies must be at least 1 cycle");
  if (options_.routes && (options_.routes->width() != geometry_.width() ||
                          options_.routes->height() != geometry_.height() || options_.routes->colors() != colors_))
    throw std::logic_error("Mesh: the route table was built for another mesh shape or color count");
  const std::size_t n = geometry_.routers();
  nonempty_.assign(n * kPorts, 0);
  block_.assign(n, kNone);
  active_flag_.assign(n, 0);
  queued_.assign(n, 0);
  coord_.resize(n);
  boundary_.resize(n);
  for (std::uint32_t r = 0; r < n; ++r) {
    const hw::PeCoord pc = geometry_.coord(r);
    coord_[r] = pc.x | (std::uint32_t{pc.y} << 16);
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
  ep_full_base_ = static_cast<std::uint32_t>(n * kPorts);
  full_.resize(std::size_t{ep_full_base_} + ep_router_.size() + 1, 0);
  full_.back() = ~std::uint64_t{0};
  down_.resize(n * kPorts);
  for (std::uint32_t r = 0; r < n; ++r)
    for (std::uint32_t o = 0; o < kPorts; ++o) {
      const std::uint32_t nb = o == index(Port::Ramp) ? kNone : next_router(r, o);
      const std::uint32_t ep = nb == kNone ? endpoint_beyond(r, port_at(o)) : kNone;
      down_[r * kPorts + o] = nb != kNone   ? nb * kPorts + (o ^ 2u)  // the facing input port
                              : ep != kNone ? ep_full_base_ + ep
                                            : static_cast<std::uint32_t>(full_.size() - 1);
    }
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

std::uint32_t Mesh::new_block(std::uint32_t r) {
  reserve_blocks(1);  // a no-op inside apply_grants, which reserved for all its grants
  const auto b = static_cast<std::uint32_t>(block_router_.size());
  block_router_.push_back(r);
  block_[r] = b;
  slots_.resize(slots_.size() + std::size_t{kPorts} * colors_);
  rr_.resize(rr_.size() + kPorts, kRrSpan - 1);
  req_.resize(req_.size() + kPorts * kPorts, 0);
  out_flags_.push_back(0);
  if (options_.routing == Routing::XY) {
    owned_by_.resize(req_.size(), 0);
    owned_outs_.push_back(0);
  }
  port_forwarded_.resize(port_forwarded_.size() + kPorts, 0);
  port_stalled_.resize(port_stalled_.size() + kPorts, 0);
  port_occupancy_.resize(port_occupancy_.size() + kPorts, 0);
  port_queued_.resize(port_queued_.size() + kPorts, 0);
  if (link_stats_) {
    link_forwarded_.resize(slots_.size(), 0);
    link_stalled_.resize(slots_.size(), 0);
    link_occupancy_.resize(slots_.size(), 0);
  }
  return b;
}

void Mesh::ensure_buffer(std::uint32_t si) {
  if (slots_[si].buf != kNone) return;
  slots_[si].buf = static_cast<std::uint32_t>(flits_.size());
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
  return v(nonempty_) + v(full_) + v(block_) + v(active_flag_) + v(queued_) + v(coord_) + v(boundary_) +
         v(block_router_) + v(slots_) + v(rr_) + v(req_) + v(out_flags_) + v(owned_by_) + v(owned_outs_) +
         v(port_forwarded_) + v(port_stalled_) + v(port_occupancy_) + v(port_queued_) + v(link_forwarded_) +
         v(link_stalled_) + v(link_occupancy_) + v(flits_) + v(ports_) + v(ep_router_) + v(ep_port_) + v(ep_block_) +
         v(ep_visible_) + v(down_) + v(rx_) + v(ep_last_send_) + v(ep_last_pop_) + v(rx_flits_) + v(active_) +
         v(incoming_) + v(grants_);
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
  if (options_.routing == Routing::XY && f.head() &&
      !geometry_.contains(destination_x(f.payload), destination_y(f.payload)))
    throw std::logic_error(fmt::format("fabric: packet head for ({}, {}) outside the mesh", destination_x(f.payload),
                                       destination_y(f.payload)));
  const std::uint32_t r = ep_router_[ep], p = ep_port_[ep];
  const std::uint32_t b = ensure_block(r);
  Slot& q = slots_[slot_index(b, p, c)];
  if (++q.occ >= depth_) full_[r * kPorts + p] |= std::uint64_t{1} << c;
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

// (apply_grants has its own copy of this over local pointers, for speed: keep them alike.)
inline void Mesh::request_head(std::uint32_t r, std::uint32_t b, std::uint32_t p, std::uint32_t c) {
  const Slot& q = slots_[slot_index(b, p, c)];
  std::uint64_t* req = &req_[std::size_t{b} * kPorts * kPorts];
  const std::uint64_t cb = std::uint64_t{1} << c;
  if (options_.routing == Routing::XY) {
    const std::uint32_t o =
        q.route ? q.route - 1u : index(xy_output(coord_[r] & 0xffffu, coord_[r] >> 16, flits_[q.buf + q.head].payload));
    req[o * kPorts + p] |= cb;
    out_flags_[b] |= 1u << o;
    return;
  }
  const RouteEntry e = options_.routes ? options_.routes->at(r, c) : RouteEntry{};
  if (!(e.accept & (1u << p))) route_error(r, p, c, flits_[q.buf + q.head]);
  const std::uint32_t outs = e.forward & ~q.route;
  for (std::uint32_t m = outs; m; m &= m - 1) req[lowest(m) * kPorts + p] |= cb;
  out_flags_[b] |= outs;
}

inline void Mesh::push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f) {
  const std::uint32_t b = block_[r];
  const std::uint32_t si = slot_index(b, p, c);
  ensure_buffer(si);
  Slot& q = slots_[si];
  std::uint32_t pos = q.head + q.count;
  if (pos >= depth_) pos -= depth_;
  flits_[q.buf + pos] = f;
  ++queued_[r];
  ++color_queued_[c];
  ++port_queued_[std::size_t{b} * kPorts + p];
  if (q.count++ == 0) {
    nonempty_[r * kPorts + p] |= std::uint64_t{1} << c;
    request_head(r, b, p, c);
  }
  activate(r);
}

void Mesh::read(sim::Cycle now) {
  for (const Return& ret : input_returns_) {
    const std::uint32_t r = ret.target / kPorts, p = ret.target % kPorts;
    --slots_[slot_index(block_[r], p, ret.color)].occ;
    full_[ret.target] &= ~(std::uint64_t{1} << ret.color);
  }
  input_returns_.clear();
  for (const Return& ret : ep_returns_) {
    --rx_[std::size_t{ep_block_[ret.target]} * colors_ + ret.color].occ;
    full_[ep_full_base_ + ret.target] &= ~(std::uint64_t{1} << ret.color);
  }
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
  active_.insert(active_.end(), incoming_.begin(), incoming_.end());
  incoming_.clear();
}

void Mesh::evaluate(sim::Cycle /*now*/) {
  grant_count_ = 0;
  if (active_.empty()) return;
  // Occupancy integrals count the wavelets queued in this cycle (after arrivals, before
  // grants); per color here, per port and direction with each router below.
  for (std::uint32_t c = 0; c < colors_; ++c) color_occupancy_[c] += color_queued_[c];
  if (grants_.size() < active_.size() * kPorts) grants_.resize(active_.size() * kPorts);
  Grant* out = grants_.data();
  const std::uint32_t* const block = block_.data();
  const std::uint64_t* const req = req_.data();
  std::uint32_t* const out_flags = out_flags_.data();
  std::uint16_t* const rr = rr_.data();
  const std::uint32_t* const port_queued = port_queued_.data();
  std::uint64_t* const port_occupancy = port_occupancy_.data();
  const std::uint64_t* const full = full_.data();
  const std::uint32_t* const down = down_.data();
  const bool xy = options_.routing == Routing::XY;
  const bool per_router = per_router_;
  std::uint64_t dir[kPorts] = {};

  auto evaluate_router = [&](std::uint32_t r) __attribute__((always_inline)) {
    const std::uint32_t b = block[r];
    const std::uint32_t* queued = port_queued + std::size_t{b} * kPorts;
    for (std::uint32_t p = 0; p < kPorts; ++p) dir[p] += queued[p];
    if (per_router) {
      std::uint64_t* acc = port_occupancy + std::size_t{b} * kPorts;
      for (std::uint32_t p = 0; p < kPorts; ++p) acc[p] += queued[p];
      if (link_stats_)
        for (std::uint32_t p = 0; p < kPorts; ++p)
          for (std::uint64_t m = nonempty_[r * kPorts + p]; m; m &= m - 1) {
            const std::uint32_t si = slot_index(b, p, lowest(m));
            link_occupancy_[si] += slots_[si].count;
          }
    }
    const std::uint64_t* rq = req + std::size_t{b} * kPorts * kPorts;
    const std::uint32_t owned = xy ? owned_outs_[b] : 0u;
    for (std::uint32_t outs = out_flags[b]; outs; outs &= outs - 1) {
      const std::uint32_t o = lowest(outs);
      const std::uint64_t* want = rq + o * kPorts;
      const std::uint64_t any = want[0] | want[1] | want[2] | want[3] | want[4];
      if (!any) {
        out_flags[b] &= ~(1u << o);
        continue;
      }
      const std::uint64_t credit = ~full[down[r * kPorts + o]];
      if (any & ~credit) stall(b, o, any & ~credit);
      if (!(any & credit)) continue;
      std::uint64_t open[kPorts] = {want[0] & credit, want[1] & credit, want[2] & credit, want[3] & credit,
                                    want[4] & credit};
      if (owned >> o & 1u) {
        // XY: a color of this output held by a packet from input q is open only to q.
        const std::uint64_t* own = &owned_by_[(std::size_t{b} * kPorts + o) * kPorts];
        const std::uint64_t held = own[0] | own[1] | own[2] | own[3] | own[4];
        for (std::uint32_t p = 0; p < kPorts; ++p) open[p] &= ~(held & ~own[p]);
      }
      // Round robin over (input, color), starting after the last grant.
      std::uint32_t start = rr[std::size_t{b} * kPorts + o] + 1u;
      if (start == kRrSpan) start = 0;
      const std::uint32_t sp = start >> 6, sc = start & 63u;
      std::uint32_t pick = kNone;
      if (const std::uint64_t m = open[sp] & (~std::uint64_t{0} << sc)) {
        pick = sp * 64 + lowest(m);
      } else {
        for (std::uint32_t k = 1, p = sp; k <= kPorts; ++k) {
          if (++p == kPorts) p = 0;
          std::uint64_t m2 = open[p];
          if (k == kPorts) m2 &= (std::uint64_t{1} << sc) - 1;
          if (m2) {
            pick = p * 64 + lowest(m2);
            break;
          }
        }
      }
      if (pick == kNone) continue;
      rr[std::size_t{b} * kPorts + o] = static_cast<std::uint16_t>(pick);
      __builtin_prefetch(&slots_[slot_index(b, pick >> 6, pick & 63u)]);  // apply_grants reads it
      *out++ = Grant{r | std::uint64_t{o} << 32 | std::uint64_t{pick >> 6} << 40 | std::uint64_t{pick & 63u} << 48};
    }
  };

  if (idle_skip_) {
    router_evaluations_ += active_.size();
    const std::size_t n = active_.size();
    const std::uint32_t* const list = active_.data();
    for (std::size_t i = 0; i < n; ++i) {
      if (i + 4 < n) {  // fetch a few routers ahead: their state is scattered over the mesh
        const std::uint32_t b = block[list[i + 4]];
        const std::uint64_t* rq = req + std::size_t{b} * kPorts * kPorts;
        for (std::uint32_t line = 0; line < kPorts * kPorts; line += 8) __builtin_prefetch(rq + line);
        __builtin_prefetch(port_queued + std::size_t{b} * kPorts);
        __builtin_prefetch(port_occupancy + std::size_t{b} * kPorts, 1);
        __builtin_prefetch(out_flags + b);
        __builtin_prefetch(rr + std::size_t{b} * kPorts);
        __builtin_prefetch(down + std::size_t{list[i + 4]} * kPorts);
      }
      evaluate_router(list[i]);
    }
  } else {
    router_evaluations_ += geometry_.routers();
    for (std::uint32_t r = 0, n = geometry_.routers(); r < n; ++r)
      if (queued_[r]) evaluate_router(r);
  }
  for (std::uint32_t p = 0; p < kPorts; ++p) dir_occupancy_[p] += dir[p];
  grant_count_ = static_cast<std::size_t>(out - grants_.data());
}

void Mesh::stall(std::uint32_t b, std::uint32_t o, std::uint64_t colors) {
  const std::uint32_t n = popcount(colors);
  port_stalled_[std::size_t{b} * kPorts + o] += n;
  stalled_ += n;
  for (; colors; colors &= colors - 1) {
    const std::uint32_t c = lowest(colors);
    ++color_stalled_[c];
    if (link_stats_) ++link_stalled_[slot_index(b, o, c)];
  }
}

void Mesh::reserve_blocks(std::size_t more) {
  // Grow geometrically, but never beyond one block per router (a whole wafer in use).
  const std::size_t routers = geometry_.routers();
  const std::size_t blocks = block_router_.size();
  const std::size_t target = std::min(blocks + more, routers);
  auto grow = [&](auto& v, std::size_t per_block) {
    if (v.capacity() >= target * per_block) return;
    v.reserve(std::max(target, std::min(2 * blocks, routers)) * per_block);
  };
  const std::size_t per = std::size_t{kPorts} * colors_;
  grow(block_router_, 1);
  grow(slots_, per);
  grow(rr_, kPorts);
  grow(req_, kPorts * kPorts);
  grow(out_flags_, 1);
  if (options_.routing == Routing::XY) {
    grow(owned_by_, kPorts * kPorts);
    grow(owned_outs_, 1);
  }
  grow(port_forwarded_, kPorts);
  grow(port_stalled_, kPorts);
  grow(port_occupancy_, kPorts);
  grow(port_queued_, kPorts);
  if (link_stats_) {
    grow(link_forwarded_, per);
    grow(link_stalled_, per);
    grow(link_occupancy_, per);
  }
  if (flits_.capacity() < flits_.size() + more * depth_)
    flits_.reserve(std::max(flits_.size() + more * depth_, 2 * flits_.capacity()));
}

// Applies this cycle's grants: each moves the head of an input queue to the next router's
// input queue (or an endpoint), or sends one copy of it (static multicast). Written for
// speed: the arrays are reserved up front so new blocks never move them, and are used
// through local pointers.
void Mesh::apply_grants(sim::Cycle now) {
  reserve_blocks(grant_count_);
  const std::uint32_t C = colors_, D = depth_, PC = kPorts * colors_;
  const bool xy = options_.routing == Routing::XY;
  const bool direct = hop_ == 1;
  const RouteTable* routes = options_.routes.get();
  Slot* const slots = slots_.data();
  std::uint64_t* const req = req_.data();
  std::uint32_t* const out_flags = out_flags_.data();
  std::uint64_t* const full = full_.data();
  std::uint64_t* const nonempty = nonempty_.data();
  std::uint32_t* const queued = queued_.data();
  std::uint32_t* const port_queued = port_queued_.data();
  std::uint64_t* const color_queued = color_queued_.data();
  std::uint64_t* const port_forwarded = port_forwarded_.data();
  std::uint64_t* const color_forwarded = color_forwarded_.data();
  const std::uint32_t* const block = block_.data();
  const std::uint32_t* const coord = coord_.data();
  const std::uint8_t* const boundary = boundary_.data();
  std::uint32_t* const active_flag = active_flag_.data();
  const std::int64_t step[4] = {-static_cast<std::int64_t>(geometry_.width()), 1,
                                static_cast<std::int64_t>(geometry_.width()), -1};

  // The head of queue (r, p, c) in block b changed to a wavelet with `payload`: record the
  // outputs it requests (as request_head()).
  auto request = [&](std::uint32_t r, std::uint32_t b, std::uint32_t p, std::uint32_t c, const Slot& q,
                     std::uint32_t payload) __attribute__((always_inline)) {
    std::uint64_t* rq = req + std::size_t{b} * kPorts * kPorts;
    const std::uint64_t cb = std::uint64_t{1} << c;
    if (xy) {
      const std::uint32_t o = q.route ? q.route - 1u : index(xy_output(coord[r] & 0xffffu, coord[r] >> 16, payload));
      rq[o * kPorts + p] |= cb;
      out_flags[b] |= 1u << o;
      return;
    }
    const RouteEntry e = routes ? routes->at(r, c) : RouteEntry{};
    if (!(e.accept & (1u << p))) route_error(r, p, c, Flit{payload, 0});
    const std::uint32_t outs = e.forward & ~q.route;
    for (std::uint32_t m = outs; m; m &= m - 1) rq[lowest(m) * kPorts + p] |= cb;
    out_flags[b] |= outs;
  };

  const Grant* const end = grants_.data() + grant_count_;
  constexpr std::ptrdiff_t kAhead = 8;  // grants whose wavelet and destination are fetched early
  for (const Grant* g = grants_.data(); g != end; ++g) {
    if (end - g > kAhead) {
      const Grant& a = g[kAhead];
      const Slot& qa = slots[block[a.router()] * PC + a.in() * C + a.color()];
      if (qa.buf != kNone) __builtin_prefetch(&flits_[qa.buf + qa.head]);
      const std::uint32_t da = down_[a.router() * kPorts + a.out()];
      if (da < ep_full_base_ && block[da / kPorts] != kNone)
        __builtin_prefetch(&slots[block[da / kPorts] * PC + (da % kPorts) * C + a.color()], 1);
    }
    const std::uint32_t r = g->router(), o = g->out(), p = g->in(), c = g->color();
    const std::uint64_t cb = std::uint64_t{1} << c;
    const std::uint32_t b = block[r];
    Slot& q = slots[b * PC + p * C + c];
    const Flit f = flits_[q.buf + q.head];

    // Deliver the wavelet (or this copy of it).
    if (o != index(Port::Ramp) && !(boundary[r] >> o & 1u)) {
      const auto n = static_cast<std::uint32_t>(r + step[o]);
      const std::uint32_t pp = o ^ 2u;  // the facing port
      const std::uint32_t nb = block[n] != kNone ? block[n] : new_block(n);
      Slot& d = slots[nb * PC + pp * C + c];
      if (++d.occ >= D) full[n * kPorts + pp] |= cb;
      ++in_network_;
      if (direct) {
        if (d.buf == kNone) {
          d.buf = static_cast<std::uint32_t>(flits_.size());
          flits_.resize(flits_.size() + D);
        }
        std::uint32_t pos = d.head + d.count;
        if (pos >= D) pos -= D;
        flits_[d.buf + pos] = f;
        ++queued[n];
        ++port_queued[nb * kPorts + pp];
        ++color_queued[c];
        if (d.count++ == 0) {
          nonempty[n * kPorts + pp] |= cb;
          request(n, nb, pp, c, d, f.payload);
        }
        if (!active_flag[n]) {
          active_flag[n] = 1;
          incoming_.push_back(n);
        }
      } else {
        wheel_[(now.count() + hop_) % wheel_.size()].push_back(
            Transit{n * kPorts + pp, 0, static_cast<std::uint16_t>(c), f});
        ++wheel_count_;
      }
    } else {
      const std::uint32_t ep = endpoint_beyond(r, port_at(o));
      if (ep == kNone)
        throw std::logic_error(fmt::format("fabric: router {} forwarded color {} {} where nothing is connected",
                                           geometry_.name(r), c, port_name(port_at(o))));
      RxQueue& rq = rx_[std::size_t{ensure_ep_block(ep)} * C + c];
      if (++rq.occ >= D) full[ep_full_base_ + ep] |= cb;
      wheel_[(now.count() + ramp_) % wheel_.size()].push_back(Transit{ep, 1, static_cast<std::uint16_t>(c), f});
      ++wheel_count_;
      notify_arrival(ep, c, now + sim::Cycle(ramp_));
    }

    // Account, and update the output and multicast state.
    ++port_forwarded[b * kPorts + o];
    ++color_forwarded[c];
    if (link_stats_) ++link_forwarded_[b * PC + o * C + c];
    req[(b * kPorts + o) * kPorts + p] &= ~cb;
    if (xy) {
      if (f.head() != f.tail()) {
        std::uint64_t* own = &owned_by_[(std::size_t{b} * kPorts + o) * kPorts];
        if (f.head()) {
          own[p] |= cb;
          owned_outs_[b] |= 1u << o;
          q.route = static_cast<std::uint16_t>(o + 1);
        } else {
          own[p] &= ~cb;
          if (!(own[0] | own[1] | own[2] | own[3] | own[4])) owned_outs_[b] &= ~(1u << o);
          q.route = 0;
        }
      }
    } else {
      q.route = static_cast<std::uint16_t>(q.route | (1u << o));
      if (routes->at(r, c).forward & ~q.route) continue;  // copies still to send
      q.route = 0;
    }

    // Pop the head.
    q.head = static_cast<std::uint16_t>(q.head + 1u == D ? 0u : q.head + 1u);
    --queued[r];
    --port_queued[b * kPorts + p];
    --color_queued[c];
    --in_network_;
    if (--q.count == 0)
      nonempty[r * kPorts + p] &= ~cb;
    else
      request(r, b, p, c, q, flits_[q.buf + q.head].payload);
    if (p == index(Port::Ramp) || ((p & 1u) && (boundary[r] >> p & 1u))) {
      // Fed from outside the mesh: the sender sees the credit from the next cycle (read()).
      input_returns_.push_back(Return{r * kPorts + p, c});
      const std::uint32_t ep = p == index(Port::Ramp) ? r : endpoint_beyond(r, port_at(p));
      if (ep != kNone) notify_credit(ep, c, now + sim::Cycle(1));
    } else {
      --q.occ;
      full[r * kPorts + p] &= ~cb;
    }
  }
  forwarded_ += grant_count_;
}

sim::Cycle Mesh::write(sim::Cycle now) {
  if (grant_count_) {
    apply_grants(now);
    last_progress_ = now;
    grant_count_ = 0;
  }
  std::size_t kept = 0;
  for (std::uint32_t r : active_) {
    if (queued_[r])
      active_[kept++] = r;
    else
      active_flag_[r] = 0;
  }
  active_.resize(kept);
  active_.insert(active_.end(), incoming_.begin(), incoming_.end());
  incoming_.clear();
  check_deadlock(now);

  if (!active_.empty() || !input_returns_.empty() || !ep_returns_.empty()) return now + sim::Cycle(1);
  if (wheel_count_)
    for (std::uint64_t k = 1; k < wheel_.size(); ++k)
      if (!wheel_[(now.count() + k) % wheel_.size()].empty()) return now + sim::Cycle(k);
  return sim::Cycle::never();
}

void Mesh::check_deadlock(sim::Cycle now) {
  if (in_network_ == 0) {
    last_progress_ = now;
    return;
  }
  if (now - last_progress_ >= config_.deadlock_timeout) throw sim::SimulationError(deadlock_report(now));
}

std::string Mesh::describe() const {
  return fmt::format("fabric mesh {} x {} ({} routers busy, {} wavelets in flight)", geometry_.width(),
                     geometry_.height(), active_.size(), in_network_);
}

}  // namespace wafersim::fabric
