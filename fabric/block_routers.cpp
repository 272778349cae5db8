#include "fabric/block_routers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "fabric/link_delays.h"
#include "fabric/link_take.h"
#include "fabric/mesh.h"
#include "fabric/reroute.h"
#include "fabric/route_table.h"

namespace wafersim::fabric {
namespace {

inline std::uint32_t lowest(std::uint64_t m) { return static_cast<std::uint32_t>(__builtin_ctzll(m)); }
constexpr std::uint16_t kRrSpan = kPorts * 64;

// XY requests (BlockRouters::Requests, and the outputs requested in `outs`, Block::busy): head
// (p, c) requests output o, or no longer does.
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

}  // namespace

BlockRouters::BlockRouters(Mesh& mesh, sim::parallel::RowBands* bands)
    : mesh_(mesh),
      partition_(bands && bands->parallel() ? bands : nullptr),
      geometry_(mesh.geometry_),
      routes_(mesh.options_.routes.get()),
      routers_(mesh.geometry_.routers()),
      colors_(mesh.colors_),
      depth_(mesh.depth_),
      hop_(mesh.hop_),
      credit_stride_((mesh.colors_ * kPorts + 31u) & ~31u),
      link_extra_(mesh.uniform_links() ? nullptr : mesh.options_.link_delays->data()),
      step_{0u - geometry_.width(), 1u, geometry_.width(), 0u - 1u},
      link_stats_(mesh.link_stats_),
      per_router_(mesh.per_router_),
      idle_skip_(mesh.idle_skip_),
      xy_(mesh.xy_),
      sweep_(pick_sweep()) {
  const std::uint32_t n = routers_;
  boundary_.resize(n);
  for (std::uint32_t r = 0; r < n; ++r) {
    std::uint8_t b = 0;
    for (std::uint32_t o = 0; o < 4; ++o)
      if (geometry_.neighbour(r, port_at(o)) == MeshGeometry::kNone) b = static_cast<std::uint8_t>(b | (1u << o));
    boundary_[r] = b;
  }
  const std::uint32_t e = geometry_.edge_channels();
  ep_full_base_ = n * kPorts - n;  // + an edge channel's endpoint (>= n)
  full_.resize(std::size_t{n} * kPorts + 2 * std::size_t{e} + 1, 0);
  full_.back() = ~std::uint64_t{0};
  down_.resize(std::size_t{n} * kPorts);
  for (std::uint32_t r = 0; r < n; ++r)
    for (std::uint32_t o = 0; o < kPorts; ++o) {
      const std::uint32_t nb = o == index(Port::Ramp) ? kNone : next_router(r, o);
      const std::uint32_t ep = nb == kNone ? mesh.endpoint_beyond(r, port_at(o)) : kNone;
      down_[r * kPorts + o] = nb != kNone   ? r * kPorts + o  // the sender keeps the link's credits
                              : ep != kNone ? ep_full(ep)
                                            : static_cast<std::uint32_t>(full_.size() - 1);
    }

  // Every router's block at a fixed place, tile by tile.
  const std::uint32_t w = geometry_.width(), h = geometry_.height();
  tiles_x_ = (w + kTile - 1) / kTile;
  tiles_y_ = (h + kTile - 1) / kTile;
  const std::size_t tiles = std::size_t{tiles_x_} * tiles_y_, blocks = tiles * kTileBlocks;
  block_.resize(n);
  block_router_.assign(blocks, kNone);
  for (std::uint32_t y = 0; y < h; ++y)
    for (std::uint32_t x = 0; x < w; ++x) {
      const std::uint32_t b = ((y / kTile) * tiles_x_ + x / kTile) * kTileBlocks + (y % kTile) * kTile + x % kTile;
      block_[geometry_.router(x, y)] = b;
      block_router_[b] = geometry_.router(x, y);
    }
  blocks_ = LazyArray<Block>(blocks);
  slots_ = LazyArray<Slot>(blocks * kPorts * colors_);
  credits_ = LazyArray<std::uint16_t>(blocks * credit_stride_);
  sleep_ = LazyArray<Sleep>(blocks);
  if (xy_) {
    owned_by_ = LazyArray<std::uint64_t>(blocks * kPorts * kPorts);
    requests_ = LazyArray<Requests>(blocks);
  }
  if (link_stats_) {
    link_forwarded_ = LazyArray<std::uint64_t>(slots_.size());
    link_stalled_ = LazyArray<std::uint64_t>(slots_.size());
    link_occupancy_ = LazyArray<std::uint64_t>(slots_.size());
  }
  tile_flits_.resize(tiles);
  tile_built_.assign(tiles, 0);
  tile_touched_.assign(tiles, 0);
  tile_band_.assign(tiles, 0);
  bands_.resize(partition_ ? partition_->count() : 1);
  for (Band& band : bands_) {
    band.active = sim::IndexSet(static_cast<std::uint32_t>(blocks));
    band.work = sim::IndexSet(static_cast<std::uint32_t>(blocks));
  }
  place_bands();
}

std::uint32_t BlockRouters::next_router(std::uint32_t r, std::uint32_t o) const {
  if (boundary_[r] & (1u << o)) return kNone;
  switch (o) {
    case 0:
      return r - geometry_.width();
    case 1:
      return r + 1;
    case 2:
      return r + geometry_.width();
    default:
      return r - 1;
  }
}

// ---- dynamic state -------------------------------------------------------------------

void BlockRouters::place_bands() {
  const std::uint32_t row_blocks = tiles_x_ * kTileBlocks;
  for (std::size_t i = 0; i < bands_.size(); ++i) {
    Band& band = bands_[i];
    const auto bi = static_cast<std::uint32_t>(i);
    const std::uint32_t first = partition_ ? partition_->first_row(bi) : 0;
    const std::uint32_t end = partition_ ? partition_->end_row(bi) : geometry_.height();
    band.first_block = first / kTile * row_blocks;
    band.end_block = (end + kTile - 1) / kTile * row_blocks;
    for (std::uint32_t t = band.first_block / kTileBlocks; t < band.end_block / kTileBlocks; ++t)
      tile_band_[t] = static_cast<std::uint16_t>(i);
    band.stage = partition_ ? &mesh_.stages_[i] : nullptr;
    band.counts = partition_ ? &mesh_.stages_[i].counts : &counters_;
  }
}

std::uint32_t BlockRouters::fast_links(std::uint32_t b) const {
  const std::uint32_t r = block_router_[b];
  std::uint32_t links = ~boundary_[r] & 15u;
  for (std::uint32_t o = 0; o < 4; ++o)
    if ((links >> o & 1u) && tile_band_[block_[r + step_[o]] / kTileBlocks] != tile_band_[b / kTileBlocks])
      links &= ~(1u << o);
  return links;
}

void BlockRouters::build_tile(std::uint32_t t) {
  const std::uint32_t first = t * kTileBlocks;
  for (std::uint32_t b = first; b < first + kTileBlocks; ++b) {
    const std::uint32_t r = block_router_[b];
    if (r == kNone) continue;
    Block& k = blocks_[b];
    const hw::PeCoord pc = geometry_.coord(r);
    k.xy = pc.x | (std::uint32_t{pc.y} << 16);
    k.neighbours = ~boundary_[r] & 15u;
    k.links = fast_links(b);
    for (std::uint32_t o = 0; o < 4; ++o) k.next[o] = boundary_[r] >> o & 1u ? kNone : block_[r + step_[o]];
    for (std::uint16_t& v : k.out.rr) v = kRrSpan - 1;
    k.ready = 1;
  }
  for (std::size_t i = std::size_t{first} * kPorts * colors_; i < std::size_t{first + kTileBlocks} * kPorts * colors_;
       ++i)
    slots_[i].buf = kNone;
  std::fill(&credits_[std::size_t{first} * credit_stride_],
            &credits_[0] + std::size_t{first + kTileBlocks} * credit_stride_, static_cast<std::uint16_t>(depth_));
  tile_built_[t] = 1;
  ++owner(first).built;
}

// ---- the cycle -----------------------------------------------------------------------

void BlockRouters::read(std::uint64_t t) { mesh_.read_phase(*this, t); }

void BlockRouters::popped(std::uint32_t band, std::uint32_t ep, std::uint32_t c) {
  full_[ep_full(ep)] &= ~(std::uint64_t{1} << c);
  if (bands_[band].sleep.sleepers) rouse(mesh_.ep_router_[ep]);
}

inline std::uint32_t BlockRouters::xy_request(const Block& k, const Slot& q, std::uint32_t payload) const {
  return q.route ? q.route - 1u : xy_route(k.xy & 0xffffu, k.xy >> 16, payload);
}

template <bool kXY, bool kHop1>
inline void BlockRouters::eject(Band& band, std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f,
                                std::uint64_t now) {
  if (mesh_.to_endpoint(band.stage, r, o, c, f, now)) full_[down_[r * kPorts + o]] |= std::uint64_t{1} << c;
  if constexpr (kXY) {
    --band.counts->in_network;
    if constexpr (kHop1) --band.counts->color_queued[c];
  }
}

template <bool kXY, bool kHop1>
void BlockRouters::cross(Band& band, Block& k, std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f,
                         std::uint64_t now) {
  const std::uint32_t n = r + step_[o], pp = o ^ 2u, nb = k.next[o];
  if (--credits_[credit_index(block_[r], o, c)] == 0) full_[r * kPorts + o] |= std::uint64_t{1} << c;
  Counters& counts = *band.counts;
  if (!kXY) ++counts.in_network;
  if (kHop1) {
    if constexpr (!kXY) {
      if (!((routes_ ? routes_->at(n, c).accept : 0u) & (1u << pp))) mesh_.route_error(n, pp, c, f);
      ++counts.color_queued[c];
    }
    ++counts.dir_queued[pp];
    band.crossings.push_back(Crossing{nb, pp, c, static_cast<std::uint32_t>(now & 1u), f, true});
  } else {
    band.crossings.push_back(Crossing{nb, pp, c, 0, f, false});
    to_wheel(band, n * kPorts + pp, c, f, now + hop_ + (link_extra_ ? link_extra_[r * 4 + o] : 0u));
  }
}

void BlockRouters::to_wheel(Band& band, std::uint32_t target, std::uint32_t c, Flit f, std::uint64_t at) {
  if (band.stage)
    band.stage->transits.push_back(BandStage::Due{at, Transit{target, 0, static_cast<std::uint16_t>(c), f}});
  else
    mesh_.to_wheel(target, c, f, at);
}

void BlockRouters::credit_back(Band& band, const Block& k, std::uint32_t r, std::uint32_t p, std::uint32_t c,
                               std::uint64_t now) {
  if (k.neighbours >> p & 1u)
    band.credits_back.push_back(CreditBack{k.next[p], p ^ 2u, c, (r + step_[p]) * kPorts + (p ^ 2u)});
  else
    mesh_.return_to_endpoint(band.stage, r, p, c, now);
}

template <bool kXY>
inline std::uint16_t BlockRouters::head_wants(const Block& k, std::uint32_t r, std::uint32_t p, std::uint32_t c,
                                              const Slot& q, std::uint32_t payload) const {
  if constexpr (kXY) {
    return static_cast<std::uint16_t>(1u << (q.route ? q.route - 1u : xy_route(k.xy & 0xffffu, k.xy >> 16, payload)));
  } else {
    const RouteEntry e = routes_ ? routes_->at(r, c) : RouteEntry{};
    if (!(e.accept & (1u << p))) mesh_.route_error(r, p, c, Flit{payload, 0});
    return static_cast<std::uint16_t>(e.forward & ~q.route);
  }
}

void BlockRouters::push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f, std::uint64_t now,
                                Counters& n) {
  const std::uint32_t b = block_[r];
  Band& band = owner(b);
  if (!tile_built_[b / kTileBlocks]) build_tile(b / kTileBlocks);
  // Its counters up to here, with the queues as they were.
  if (blocks_[b].asleep) wake_up(band, n, b, processed_, false);
  Slot& q = slots_[slot_index(b, p, c)];
  ring_queue::enqueue(q, f, tile_flits_[b / kTileBlocks], depth_);
  Block& k = blocks_[b];
  stamp_queued(k, p, now);
  if (link_stats_) link_occupancy_[slot_index(b, p, c)] -= now;
  ++n.color_queued[c];
  ++n.dir_queued[p];
  if (q.count == 1) {
    k.nonempty[p] |= std::uint64_t{1} << c;
    if (xy_) {
      add_request(requests_[b], k.busy, xy_request(k, q, f.payload), p, c);
    } else {
      k.busy |= 1u << p;
      q.want = head_wants<false>(k, r, p, c, q, f.payload);
    }
  }
  band.active.insert(b);
}

void BlockRouters::stall(Counters& counts, Block& k, std::uint32_t b, std::uint32_t o, std::uint64_t colors) {
  // (Counted in the loop: without POPCNT in the baseline ISA, __builtin_popcountll is a call.)
  std::uint32_t n = 0;
  for (; colors; colors &= colors - 1) {
    const std::uint32_t c = lowest(colors);
    ++n;
    ++counts.color_stalled[c];
    if (link_stats_) ++link_stalled_[slot_index(b, o, c)];
  }
  k.stalled[o] += n;
  counts.stalled += n;
}

void BlockRouters::fall_asleep(Band& band, std::uint32_t b, std::uint64_t now, const std::uint64_t* stalls,
                               std::uint32_t outs) {
  Sleep& s = sleep_[b];
  SleepTally& tally = band.sleep;
  s.since = now + 1;
  for (std::uint32_t o = 0; o < kPorts; ++o) {
    s.stalled[o] = outs >> o & 1u ? stalls[o] : 0;
    for (std::uint64_t m = s.stalled[o]; m; m &= m - 1) {
      ++tally.stalls;
      ++tally.color_stalls[lowest(m)];
      tally.colors |= m & -m;
    }
  }
  blocks_[b].asleep = 1;
  ++tally.sleepers;
}

void BlockRouters::wake_up(Band& band, Counters& counts, std::uint32_t b, std::uint64_t upto, bool visited) {
  Sleep& s = sleep_[b];
  Block& k = blocks_[b];
  const std::uint64_t n = upto - s.since;
  for (std::uint32_t o = 0; o < kPorts; ++o)
    for (std::uint64_t m = s.stalled[o]; m; m &= m - 1) {
      const std::uint32_t c = lowest(m);
      k.stalled[o] += n;
      if (link_stats_) link_stalled_[slot_index(b, o, c)] += n;
      if (visited) {  // write() counted this cycle for it as asleep; the visit counts it again
        --counts.stalled;
        --counts.color_stalled[c];
      }
      --band.sleep.stalls;
      if (--band.sleep.color_stalls[c] == 0) band.sleep.colors &= ~(std::uint64_t{1} << c);
    }
  k.asleep = 0;
  --band.sleep.sleepers;
}

template <bool kXY, bool kHop1, bool kLinkStats>
inline __attribute__((always_inline)) void BlockRouters::process(std::uint32_t b, std::uint64_t now, Band& band) {
  const std::uint32_t r = block_router_[b];
  if (!blocks_[b].ready) build_tile(b / kTileBlocks);
  Block& k = blocks_[b];
  Counters& counters = *band.counts;
  if (k.asleep) wake_up(band, counters, b, now, true);
  const std::uint64_t forwarded_before = counters.forwarded;
  const std::uint32_t D = depth_;
  Slot* const slots = &slots_[slot_index(b, 0, 0)];
  std::uint16_t* const credits = &credits_[credit_index(b, 0, 0)];
  // Per-link statistics, indexed as `slots`.
  std::uint64_t* const link_occupancy = kLinkStats ? &link_occupancy_[slot_index(b, 0, 0)] : nullptr;
  std::uint64_t* const link_forwarded = kLinkStats ? &link_forwarded_[slot_index(b, 0, 0)] : nullptr;
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
    // Occupancy integrals count the wavelets queued in this cycle, before grants: the totals
    // per direction and color in write(); per input and per input queue, each wavelet's cycle
    // in, stamped here, and out, at its grant below.
    for (; m; m &= m - 1) {
      const std::uint32_t p = lowest(m), c = in.color[p];
      const Flit f = in.flit[p];
      stamp_queued(k, p, now);
      if constexpr (kLinkStats) link_occupancy[c * kPorts + p] -= now;
      Slot& q = slots[c * kPorts + p];
      if (q.count) {
        ring_queue::enqueue(q, f, tile_flits_[b / kTileBlocks], depth_);
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
      ++counters.forwarded;
      ++counters.bypassed;
      if (o == index(Port::Ramp)) {
        eject<kXY, kHop1>(band, r, o, c, f, now);
      } else if (k.links >> o & 1u) {
        const std::uint32_t pp = o ^ 2u, nb = k.next[o];
        if (--credits[c * kPorts + o] == 0) no_credit[o] |= cb;
        arrive(band, blocks_[nb], nb, pp, c, f, now);
      } else {
        cross<kXY, kHop1>(band, k, r, o, c, f, now);
      }
      ++k.out.forwarded[o];
      ++counters.color_forwarded[c];
      stamp_passed(k, p);
      --counters.dir_queued[p];
      // (As the output loop's `links >> p` below; one helper for both cost 1.7% instructions.)
      if (k.links >> p & 1u)
        free_credit(band, k, r, p, c);
      else
        credit_back(band, k, r, p, c, now);
    }
  }

  // The requests of the heads at the start of the cycle. Grants below change heads but not
  // these, so each output is arbitrated from the start-of-cycle state whatever the order.
  // Under XY routing (a head requests one output) they are kept across cycles in `rq`: a
  // granted head's request goes at once (its output is not visited again), the request of
  // the head behind it is added after the outputs are done. For static routes they are
  // built here from the heads: most outputs are wanted by one head; masks per input matter
  // only for the others (built by a second loop over the heads).
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
  Flit* const flits = tile_flits_[b / kTileBlocks].data();
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
        stall(counters, k, b, o, want);
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
        stall(counters, k, b, o, any & blocked);
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
    ++counters.forwarded;

    // Send it.
    const std::uint64_t cb = std::uint64_t{1} << c;
    Slot& q = slots[c * kPorts + p];
    const bool link = links >> o & 1u;
    if (link) {
      const std::uint32_t n = r + step_[o];
      const std::uint32_t pp = o ^ 2u;  // the facing port
      const std::uint32_t nb = k.next[o];
      if (--credits[c * kPorts + o] == 0) full[r * kPorts + o] |= cb;
      if (!kXY) ++counters.in_network;
      Block& kn = blocks_[nb];
      if (kHop1) {
        if constexpr (!kXY) {  // the wavelet is the head of its queue there if the route is wrong
          if (!((routes_ ? routes_->at(n, c).accept : 0u) & (1u << pp))) mesh_.route_error(n, pp, c, q.front);
          ++counters.color_queued[c];
        }
        arrive(band, kn, nb, pp, c, q.front, now);
      } else {
        kn.used = 1;
        to_wheel(band, n * kPorts + pp, c, q.front, now + hop_ + (link_extra_ ? link_extra_[r * 4 + o] : 0u));
      }
    } else if (k.neighbours >> o & 1u) {
      cross<kXY, kHop1>(band, k, r, o, c, q.front, now);
    } else {
      eject<kXY, kHop1>(band, r, o, c, q.front, now);
    }
    ++k.out.forwarded[o];
    ++counters.color_forwarded[c];
    if constexpr (kLinkStats) ++link_forwarded[c * kPorts + o];
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
    if constexpr (kLinkStats) link_occupancy[c * kPorts + p] += now + 1;
    --counters.dir_queued[p];
    if (!kXY) --counters.in_network;
    if (!kXY || !kHop1) --counters.color_queued[c];
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
      ring_queue::advance(q, flits, D);
      if constexpr (kXY)
        behind[n_behind++] = p | c << 8;
      else
        q.want = head_wants<kXY>(k, r, p, c, q, q.front.payload);
    } else if (!(k.nonempty[p] &= ~cb) && !kXY) {
      k.busy &= ~(1u << p);
    }
    if (links >> p & 1u) {
      free_credit(band, k, r, p, c);
    } else {
      credit_back(band, k, r, p, c, now);
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
    if (counters.forwarded == forwarded_before && idle_skip_)
      fall_asleep(band, b, now, stalls, stall_outs);  // (if a sender already put it on the list, it is visited)
    else
      band.active.insert(b);
  }
}

void BlockRouters::prefetch_visit(std::uint32_t b, std::uint64_t now) const {
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
std::uint64_t BlockRouters::run_routers(std::uint64_t t, Band& band) {
  Counters& counters = *band.counts;
  const std::uint64_t before = counters.forwarded;
  auto one = [ this, t, &band ](std::uint32_t b) __attribute__((always_inline)) {
    process<kXY, kHop1, kLinkStats>(b, t, band);
  };
  // In block order, so that neighbours' state is still in cache.
  if (idle_skip_) {
    counters.evaluations += band.work.drain_ahead(
        band.visit_order, [this](std::uint32_t b) { prefetch_block(b); },
        [this, t](std::uint32_t b) { prefetch_visit(b, t); }, one);
  } else {
    // Every router of the band's built tiles, and those with work in tiles not built yet.
    band.work.drain([this](std::uint32_t b) {
      if (!tile_built_[b / kTileBlocks]) build_tile(b / kTileBlocks);
    });
    for (std::uint32_t b = band.first_block; b < band.end_block; ++b) {
      if (!tile_built_[b / kTileBlocks]) {
        b += kTileBlocks - 1;
        continue;
      }
      if (block_router_[b] != kNone) one(b);
    }
    const std::uint32_t rows_of = (band.end_block - band.first_block) / (tiles_x_ * kTileBlocks) * kTile;
    const std::uint32_t first_row = band.first_block / (tiles_x_ * kTileBlocks) * kTile;
    counters.evaluations += std::uint64_t{std::min(rows_of, geometry_.height() - first_row)} * geometry_.width();
  }
  return counters.forwarded - before;
}

BlockRouters::Sweep BlockRouters::pick_sweep() const {
  static constexpr Sweep kSweeps[8] = {
      &BlockRouters::run_routers<false, false, false>, &BlockRouters::run_routers<false, false, true>,
      &BlockRouters::run_routers<false, true, false>,  &BlockRouters::run_routers<false, true, true>,
      &BlockRouters::run_routers<true, false, false>,  &BlockRouters::run_routers<true, false, true>,
      &BlockRouters::run_routers<true, true, false>,   &BlockRouters::run_routers<true, true, true>};
  return kSweeps[(xy_ ? 4u : 0u) | (hop_ == 1 && !link_extra_ ? 2u : 0u) | (link_stats_ ? 1u : 0u)];
}

bool BlockRouters::any_asleep() const {
  for (const Band& band : bands_)
    if (band.sleep.sleepers) return true;
  return false;
}

bool BlockRouters::busy() const {
  for (const Band& band : bands_)
    if (!band.active.empty() || band.sleep.sleepers) return true;
  return false;
}

std::uint64_t BlockRouters::write(std::uint64_t t) {
  processed_ = t + 1;
  bool work = false;
  for (Band& band : bands_) {
    band.work.swap(band.active);  // active collects the routers with work next cycle
    work = work || !band.work.empty() || band.sleep.sleepers;
  }
  std::uint64_t granted = 0;
  if (work) {
    for (std::uint32_t c = 0; c < colors_; ++c) counters_.color_occupancy[c] += counters_.color_queued[c];
    for (std::uint32_t p = 0; p < kPorts; ++p) counters_.dir_occupancy[p] += counters_.dir_queued[p];
    // This cycle's credit stalls of the sleeping routers (wake_up() takes back those visited).
    for (const Band& band : bands_) {
      counters_.stalled += band.sleep.stalls;
      for (std::uint64_t m = band.sleep.colors; m; m &= m - 1)
        counters_.color_stalled[lowest(m)] += band.sleep.color_stalls[lowest(m)];
    }
    if (!partition_) {
      granted = (this->*sweep_)(t, bands_[0]);
    } else {
      partition_->run([this, t](std::size_t b) { sweep_band(t, bands_[b]); });
      for (std::uint32_t b = 0; b < bands_.size(); ++b) {
        granted += bands_[b].granted;
        partition_->add_work(b, bands_[b].visited * sim::parallel::kRouterVisitUnits);
      }
    }
  }
  const bool asleep = any_asleep();
  for (Band& band : bands_) {
    for (const Unfull& u : band.unfull) {
      full_[u.target] &= ~(std::uint64_t{1} << u.color);
      if (asleep) rouse(u.target / kPorts);  // the sender
    }
    band.unfull.clear();
  }
  return granted;
}

void BlockRouters::routes_changed(const RouteTable* table, const std::vector<RouteChange>& changes) {
  routes_ = table;
  for (const RouteChange& ch : changes) {
    const std::uint32_t b = block_[ch.router];
    if (b == kNone) continue;
    for (std::uint32_t p = 0; p < kPorts; ++p) {
      Slot& q = slots_[slot_index(b, p, ch.color)];
      if (!q.count) continue;
      if (q.route & ch.dropped) q.route = static_cast<std::uint16_t>(q.route | ch.added);
      q.want = head_wants<false>(blocks_[b], ch.router, p, ch.color, q, q.front.payload);
    }
    rouse(ch.router);
  }
}

void BlockRouters::repartitioned(const std::vector<std::uint32_t>& /*old_first*/) {
  if (!partition_) return;
  // The sets and tallies by band: gathered, then dealt out to the new owners.
  std::vector<std::uint32_t> active, ramp_sent[2];
  for (Band& band : bands_) {
    band.active.drain([&active](std::uint32_t b) { active.push_back(b); });
    band.sleep = SleepTally{};
    for (std::uint32_t parity = 0; parity < 2; ++parity) {
      ramp_sent[parity].insert(ramp_sent[parity].end(), band.ramp_sent[parity].begin(), band.ramp_sent[parity].end());
      band.ramp_sent[parity].clear();
    }
  }
  place_bands();
  for (const std::uint32_t b : active) owner(b).active.insert(b);
  for (std::uint32_t parity = 0; parity < 2; ++parity)
    for (const std::uint32_t b : ramp_sent[parity]) owner(b).ramp_sent[parity].push_back(b);
  for (std::uint32_t t = 0; t < tile_built_.size(); ++t) {
    if (!tile_built_[t]) continue;
    for (std::uint32_t b = t * kTileBlocks; b < (t + 1) * kTileBlocks; ++b) {
      if (block_router_[b] == kNone) continue;
      Block& k = blocks_[b];
      k.links = fast_links(b);
      if (!k.asleep) continue;
      SleepTally& tally = owner(b).sleep;
      ++tally.sleepers;
      for (std::uint32_t o = 0; o < kPorts; ++o)
        for (std::uint64_t m = sleep_[b].stalled[o]; m; m &= m - 1) {
          ++tally.stalls;
          ++tally.color_stalls[lowest(m)];
          tally.colors |= m & -m;
        }
    }
  }
}

void BlockRouters::joined() {
  // In band order: the serial sweep's order of these moves and credits.
  for (Band& band : bands_) {
    for (const Crossing& x : band.crossings) {
      Block& kn = blocks_[x.block];
      if (x.hop1) {
        kn.in[x.parity].put(x.port, x.color, x.flit);
        owner(x.block).active.insert(x.block);
      } else {
        kn.used = 1;
      }
    }
    band.crossings.clear();
    for (const CreditBack& cb : band.credits_back)
      if (credits_[credit_index(cb.block, cb.output, cb.color)]++ == 0)
        band.unfull.push_back(Unfull{cb.full, cb.color});
    band.credits_back.clear();
  }
}

// ---- readers -------------------------------------------------------------------------

// (A router whose tile is not built reads as zero bytes: no wavelet, no count.)
std::uint64_t BlockRouters::port_forwarded(std::uint32_t r, std::uint32_t p) const {
  return blocks_[block_[r]].out.forwarded[p];
}

std::uint64_t BlockRouters::port_stalled(std::uint32_t r, std::uint32_t p) const {
  const std::uint32_t b = block_[r];
  std::uint64_t v = blocks_[b].stalled[p];
  if (const std::uint64_t n = owed(b))
    for (std::uint64_t m = sleep_[b].stalled[p]; m; m &= m - 1) v += n;
  return v;
}

std::uint64_t BlockRouters::port_occupancy(std::uint32_t r, std::uint32_t p) const {
  const std::uint32_t b = block_[r];
  return blocks_[b].occupancy[p] + std::uint64_t{queued_in(b, p)} * processed_;
}

bool BlockRouters::arriving(std::uint32_t r, std::uint32_t p, std::uint32_t parity) const {
  return (blocks_[block_[r]].in[parity].ports >> p & 1u) != 0;
}

std::uint32_t BlockRouters::queued_in(std::uint32_t b, std::uint32_t p) const {
  std::uint32_t n = 0;
  for (std::uint64_t m = blocks_[b].nonempty[p]; m; m &= m - 1) n += slots_[slot_index(b, p, lowest(m))].count;
  return n;
}

// Wavelets sent over 1-cycle links in the last cycle written are still in the receiving
// router's arrival register (parity processed_ + 1), taken in next cycle: they are queued. (A
// ramp's wavelet there is on its way over the ramp, not yet queued.) The cycle evaluated last,
// evaluated - 1, takes in the arrivals of the cycle before it (parity `evaluated`).
LinkCounters BlockRouters::link_color_counters(std::uint32_t r, std::uint32_t p, std::uint32_t c,
                                               std::uint64_t evaluated) const {
  LinkCounters out;
  const std::uint32_t b = block_[r];
  const std::uint32_t si = slot_index(b, p, c);
  auto arrives = [&](std::uint64_t parity, std::uint32_t ports) {
    const Arrivals& a = blocks_[b].in[parity & 1u];
    return ((a.ports & ports) >> p & 1u) && a.color[p] == c;
  };
  constexpr std::uint32_t kLinkInputs = kAllPorts & ~bit(Port::Ramp);
  out.forwarded = link_forwarded_[si];
  out.stalled = link_stalled_[slot_index(b, p, c)] + ((sleep_[b].stalled[p] >> c & 1u) ? owed(b) : 0);
  out.occupancy = link_occupancy_[si] + std::uint64_t{slots_[si].count} * processed_ +
                  (evaluated > processed_ ? slots_[si].count + (arrives(evaluated, kAllPorts) ? 1u : 0u) : 0);
  out.queued = slots_[si].count + (arrives(processed_ + 1, kLinkInputs) ? 1u : 0u);
  return out;
}

std::uint64_t BlockRouters::queued_colors(std::uint32_t r, std::uint32_t p) const {
  return blocks_[block_[r]].nonempty[p];
}

std::uint32_t BlockRouters::queued(std::uint32_t r, std::uint32_t p, std::uint32_t c) const {
  return slots_[slot_index(block_[r], p, c)].count;
}

Flit BlockRouters::queued_flit(std::uint32_t b, const Slot& q, std::uint32_t i) const {
  return i == 0 ? q.front : tile_flits_[b / kTileBlocks][q.buf + ring_queue::position(q, i, depth_)];
}

Flit BlockRouters::queued_flit(std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint32_t i) const {
  return queued_flit(block_[r], slots_[slot_index(block_[r], p, c)], i);
}

std::uint32_t BlockRouters::head_route(std::uint32_t r, std::uint32_t p, std::uint32_t c) const {
  return slots_[slot_index(block_[r], p, c)].route;
}

bool BlockRouters::out_of_credit(std::uint32_t r, std::uint32_t o, std::uint32_t c) const {
  return ((downstream_full(r, o) >> c) & 1u) != 0;
}

std::uint32_t BlockRouters::holder(std::uint32_t r, std::uint32_t o, std::uint32_t c) const {
  std::uint32_t owner = kNone;
  if (xy_)
    for (std::uint32_t i = 0; i < kPorts; ++i)
      if ((owned_by_[(std::size_t{block_[r]} * kPorts + o) * kPorts + i] >> c) & 1u) owner = i;
  return owner;
}

bool BlockRouters::tile_in_use(std::uint32_t t) const {
  if (tile_built_[t] || tile_touched_[t]) return true;
  // A built neighbour may have sent into its arrival registers.
  const std::uint32_t tx = t % tiles_x_, ty = t / tiles_x_;
  return (tx > 0 && tile_built_[t - 1]) || (tx + 1 < tiles_x_ && tile_built_[t + 1]) ||
         (ty > 0 && tile_built_[t - tiles_x_]) || (ty + 1 < tiles_y_ && tile_built_[t + tiles_x_]);
}

std::uint32_t BlockRouters::touched_routers() const {
  // Routers sent a wavelet: marked when they took it in, or still arriving from the last cycle written.
  const std::uint32_t parity = (processed_ + 1) & 1u;
  std::uint32_t n = 0;
  for (std::uint32_t t = 0; t < tile_built_.size(); ++t) {
    if (!tile_in_use(t)) continue;
    for (std::uint32_t b = t * kTileBlocks; b < (t + 1) * kTileBlocks; ++b) {
      const Block& k = blocks_[b];
      n += (block_router_[b] != kNone && (k.used || (processed_ && k.in[parity].ports))) ? 1u : 0u;
    }
  }
  return n;
}

const std::vector<std::uint32_t>& BlockRouters::counted_routers() const {
  std::uint64_t built = 0;
  for (const Band& band : bands_) built += band.built;
  if (counted_at_ == std::pair<std::uint64_t, std::uint64_t>{processed_, built}) return counted_;
  counted_.clear();
  for (std::uint32_t t = 0; t < tile_built_.size(); ++t)
    if (tile_in_use(t))
      for (std::uint32_t b = t * kTileBlocks; b < (t + 1) * kTileBlocks; ++b)
        if (block_router_[b] != kNone) counted_.push_back(block_router_[b]);
  counted_at_ = {processed_, built};
  return counted_;
}

std::uint64_t BlockRouters::allocated_bytes() const {
  auto v = [](const auto& vec) { return static_cast<std::uint64_t>(vec.capacity() * sizeof(vec[0])); };
  std::uint64_t tiles = 0, flits = 0, sets = 0;
  for (std::uint32_t t = 0; t < tile_built_.size(); ++t) {
    tiles += tile_built_[t];
    flits += v(tile_flits_[t]);
  }
  for (const Band& band : bands_) sets += band.active.allocated_bytes() + band.work.allocated_bytes();
  // A built tile's state: blocks, queues, credits, sleep records, and the XY and per-link ones.
  std::uint64_t per_block = sizeof(Block) + sizeof(Slot) * kPorts * colors_ + 2u * credit_stride_ + sizeof(Sleep);
  if (xy_) per_block += sizeof(std::uint64_t) * kPorts * kPorts + sizeof(Requests);
  if (link_stats_) per_block += 3 * sizeof(std::uint64_t) * kPorts * colors_;
  return v(full_) + v(down_) + v(block_) + v(boundary_) + v(block_router_) + v(counted_) + v(tile_flits_) +
         v(tile_built_) + v(tile_touched_) + v(tile_band_) + tiles * kTileBlocks * per_block + flits + sets;
}

std::string BlockRouters::describe() const {
  std::uint32_t busy = 0;
  for (const Band& band : bands_) busy += band.active.size();
  return fmt::format("{} routers busy", busy);
}

}  // namespace wafersim::fabric
