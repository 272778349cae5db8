#pragma once
// The routers' own sweep (fabric/router_sweep.h): every router's state in a block of its own,
// allocated for a tile of 8 x 8 routers when one of them first holds a wavelet, and only the
// routers with work visited, one at a time. Any routing (static color routes or XY packets),
// hop and ramp latency and counters; the mesh uses it unless the lanes fit its traffic.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/cache_aligned.h"
#include "fabric/fabric_config.h"
#include "fabric/flit.h"
#include "fabric/geometry.h"
#include "fabric/port.h"
#include "fabric/router_sweep.h"
#include "sim/engine/index_set.h"

namespace wafersim::fabric {

class Mesh;
class RouteTable;

class BlockRouters final : public RouterSweep {
 public:
  explicit BlockRouters(Mesh& mesh);

  // The wavelet f that router r's ramp sent on color c in cycle t over a 1-cycle ramp: in the
  // router's arrival register, taken in in cycle t + 1.
  void from_ramp(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) {
    const std::uint32_t b = reserve(r);
    blocks_[b].in[t & 1u].put(index(Port::Ramp), c, f);
    ramp_sent_blocks_[t & 1u].push_back(b);
  }
  // Router r is sent a wavelet by an endpoint (over the wheel, or through from_ramp): its state
  // is allocated and it counts as used. Returns its block.
  std::uint32_t reserve(std::uint32_t r) {
    const std::uint32_t b = ensure_block(r);
    blocks_[b].used = 1;
    return b;
  }

  // Mesh::read_phase's steps: endpoint ep popped a wavelet of color c from its receive queue
  // (a slot frees for the router output beyond it); router r's ramp sent wavelets in a cycle
  // of `parity`; a wavelet f for input p of router r, color c, is due now (off the wheel).
  void popped(std::uint32_t ep, std::uint32_t c);
  void ramps_sent(std::uint32_t parity) {
    for (std::uint32_t b : ramp_sent_blocks_[parity]) active_.insert(b);
    ramp_sent_blocks_[parity].clear();
  }
  void push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f, std::uint64_t now);

  // RouterSweep
  void read(std::uint64_t t) override;
  std::uint64_t write(std::uint64_t t) override;
  [[nodiscard]] bool busy() const override { return !active_.empty() || sleepers_; }
  [[nodiscard]] std::uint64_t port_forwarded(std::uint32_t r, std::uint32_t p) const override;
  [[nodiscard]] std::uint64_t port_stalled(std::uint32_t r, std::uint32_t p) const override;
  [[nodiscard]] std::uint64_t port_occupancy(std::uint32_t r, std::uint32_t p) const override;
  [[nodiscard]] bool arriving(std::uint32_t r, std::uint32_t p, std::uint32_t parity) const override;
  [[nodiscard]] LinkCounters link_color_counters(std::uint32_t r, std::uint32_t p, std::uint32_t c,
                                                 std::uint64_t evaluated) const override;
  [[nodiscard]] std::uint64_t queued_colors(std::uint32_t r, std::uint32_t p) const override;
  [[nodiscard]] std::uint32_t queued(std::uint32_t r, std::uint32_t p, std::uint32_t c) const override;
  [[nodiscard]] Flit queued_flit(std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint32_t i) const override;
  [[nodiscard]] std::uint32_t head_route(std::uint32_t r, std::uint32_t p, std::uint32_t c) const override;
  [[nodiscard]] bool out_of_credit(std::uint32_t r, std::uint32_t o, std::uint32_t c) const override;
  [[nodiscard]] std::uint32_t holder(std::uint32_t r, std::uint32_t o, std::uint32_t c) const override;
  [[nodiscard]] std::uint32_t touched_routers() const override;
  [[nodiscard]] const std::vector<std::uint32_t>& counted_routers() const override { return counted_; }
  [[nodiscard]] std::uint64_t allocated_bytes() const override;
  [[nodiscard]] bool vector_lanes() const override { return false; }
  [[nodiscard]] std::string describe() const override;

 private:
  // One (port, color) input queue of a router. Its head wavelet is held in the slot (most
  // queues never hold more than one), those behind it in a ring of `depth` flits in flits_.
  struct Slot {
    Flit front;                 // the head wavelet (when count > 0)
    std::uint32_t buf = kNone;  // offset of the ring in flits_, allocated when a second wavelet queues
    std::uint16_t head = 0;     // ring position of the wavelet behind the head
    std::uint16_t count = 0;    // wavelets visible
    std::uint16_t route = 0;    // Static: outputs the head was already sent to; XY: locked output + 1
    std::uint16_t want = 0;     // outputs the head still requests (set when the head changes)
  };
  // Wavelets a neighbour sent into a router's queues over 1-cycle links in one cycle, and the
  // one its ramp sent over a 1-cycle ramp (port Ramp), taken in by the router the next cycle
  // (so a router reads the other parity than is written).
  struct alignas(64) Arrivals {
    std::uint32_t ports = 0;  // bit p: a wavelet for input p
    std::uint32_t color[kPorts] = {};
    Flit flit[kPorts];
    void put(std::uint32_t p, std::uint32_t c, Flit f) {
      ports |= 1u << p;
      color[p] = c;
      flit[p] = f;
    }
  };
  struct alignas(64) Outputs {
    std::uint64_t forwarded[kPorts] = {};
    std::uint16_t rr[kPorts] = {};  // last granted input * 64 + color
  };
  // The state of one router, allocated for a tile of kTile x kTile routers (so neighbours'
  // state is close in memory) when one of them first holds a wavelet; fields grouped by
  // cache line in the order a busy router touches them. (No char-typed fields are written
  // on the hot path: they would alias every pointer and force reloads.)
  static constexpr std::uint32_t kTile = 8;
  struct alignas(64) Block {
    std::uint32_t xy = 0;          // x | y << 16
    std::uint32_t links = 0;       // bit o: a neighbouring router beyond port o
    std::uint32_t busy = 0;        // static routes: bit p: nonempty[p] != 0; XY: see Requests
    std::uint32_t owned_outs = 0;  // XY: outputs with a color held by a packet
    std::uint32_t used = 0;        // 1 once a wavelet was sent to it (the arriving ones count too)
    std::uint32_t ready = 0;       // 1 once its neighbours' tiles are allocated
    std::uint32_t asleep = 0;      // 1 while it sleeps blocked (see Sleep)
    std::uint32_t next[4] = {};    // [output 0 .. 3]: the neighbour's block (set with `ready`)
    // [input]: occupancy integral, kept as the sum over the wavelets that left the queues of
    // (cycle left + 1) less the sum over those queued of the cycle they were queued (so the
    // integral up to now adds the queued ones times now: port_occupancy(); sleeping costs nothing).
    std::uint64_t occupancy[kPorts] = {};
    std::uint64_t nonempty[kPorts] = {};  // [input]: colors with a visible wavelet
    Arrivals in[2];                       // by cycle parity
    Outputs out;
    std::uint64_t stalled[kPorts] = {};  // [output]: output-color-cycles without credit
  };
  // XY: the outputs the visible heads of a router's queues request, kept across cycles (a
  // head's request is added when it becomes visible and removed when it is granted). The
  // outputs requested are bits of Block::busy, so a visit reads these only when one is.
  struct Requests {
    struct alignas(64) Output {  // one line, so that adding a request writes one
      // The heads requesting it << 32 | the sum of their input | color << 3 (so the requester
      // itself when there is one).
      std::uint64_t heads = 0;
      std::uint64_t colors[kPorts] = {};  // [input]: colors whose head requests it
    };
    Output out[kPorts];
  };
  // A router whose visit granted nothing while it held wavelets: every request was blocked
  // for lack of credit (or by a packet holding the output), and its state cannot change
  // until a credit returns to one of its outputs or a wavelet arrives, which wake it. Until
  // then it is not visited; the counters its visits would have added (credit stalls, and
  // per-color occupancy integrals when kept, all constant while it sleeps) are added when
  // it is next visited, and readers add those still owed.
  struct Sleep {
    std::uint64_t since = 0;             // the first cycle its counters do not include
    std::uint64_t stalled[kPorts] = {};  // [output]: colors stalled in each cycle it sleeps
  };
  // A full mark to clear when the cycle ends (the slot freed in a full queue): full_[target], color.
  struct Unfull {
    std::uint32_t target;
    std::uint32_t color;
  };

  // One cycle of the router of block b: takes in the wavelets that arrived, counts
  // occupancy, grants each output round robin and moves the granted wavelets (counted in
  // counters_.forwarded). (Specialised on the routing, 1-cycle hops and per-link color counters.)
  template <bool kXY, bool kHop1, bool kLinkStats>
  void process(std::uint32_t b, std::uint64_t now);
  // Processes the routers with work this cycle (all of them without idle skipping); returns the grants.
  template <bool kXY, bool kHop1, bool kLinkStats>
  std::uint64_t run_routers(std::uint64_t t);
  using Sweep = std::uint64_t (BlockRouters::*)(std::uint64_t);
  // The run_routers specialisation for this mesh's routing, hop latency and link counters.
  [[nodiscard]] Sweep pick_sweep() const;
  // Router r's output o (the ramp, or an edge channel) sends f on color c to the endpoint beyond
  // it in cycle `now`: under XY routing the wavelet leaves the network here (static routes count
  // it out when its queue pops), over 1-cycle hops with its color's queue count, which it keeps
  // while it moves from router to router.
  template <bool kXY, bool kHop1>
  void eject(std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f, std::uint64_t now);
  // Router r (block k) freed a slot of input p, color c, fed by the router beyond p: that
  // router's credit, which it sees from the next cycle (a full mark goes when the cycle ends).
  void free_credit(const Block& k, std::uint32_t r, std::uint32_t p, std::uint32_t c) {
    if (credits_[credit_index(k.next[p], p ^ 2u, c)]++ == 0)
      unfull_.push_back(Unfull{(r + step_[p]) * kPorts + (p ^ 2u), c});
  }
  // A wavelet sent over a 1-cycle hop in cycle `now` into input pp, color c, of block nb (kn):
  // in its arrival register, taken in next cycle.
  void arrive(Block& kn, std::uint32_t nb, std::uint32_t pp, std::uint32_t c, Flit f, std::uint64_t now) {
    ++counters_.dir_queued[pp];
    active_.insert(nb);
    kn.in[now & 1u].put(pp, c, f);
  }
  // Per-input occupancy by stamps (Block::occupancy): a wavelet queued at input p in cycle
  // `now` is counted from `now`; one that leaves it in cycle `now` is counted through `now`.
  void stamp_queued(Block& k, std::uint32_t p, std::uint64_t now) const {
    if (per_router_) k.occupancy[p] -= now;
  }
  void stamp_left(Block& k, std::uint32_t p, std::uint64_t now) const {
    if (per_router_) k.occupancy[p] += now + 1;
  }
  // A wavelet taken in at input p and granted in the same cycle: both stamps at once.
  void stamp_passed(Block& k, std::uint32_t p) const {
    if (per_router_) ++k.occupancy[p];
  }
  // The head of queue (r, p, c) changed to a wavelet with `payload`: the outputs it requests.
  template <bool kXY>
  std::uint16_t head_wants(const Block& k, std::uint32_t r, std::uint32_t p, std::uint32_t c, const Slot& q,
                           std::uint32_t payload) const;
  // XY: the output the head of queue q (of the router at k.xy) requests.
  [[nodiscard]] std::uint32_t xy_request(const Block& k, const Slot& q, std::uint32_t payload) const;
  void stall(Block& k, std::uint32_t b, std::uint32_t o, std::uint64_t colors);
  // Router block b, which granted nothing in cycle `now`, stalls on `stalls[o]` (outputs
  // `outs`) in every cycle until something wakes it.
  [[gnu::noinline]] void fall_asleep(std::uint32_t b, std::uint64_t now, const std::uint64_t* stalls,
                                     std::uint32_t outs);
  // Ends block b's sleep: adds the counters of the cycles slept before `upto` (visited: in
  // cycle `upto`, for which write() already counted its stalls; else before its queues change).
  [[gnu::noinline]] void wake_up(std::uint32_t b, std::uint64_t upto, bool visited);
  // Puts a sleeping router (by router index) on the list for the next cycle.
  void rouse(std::uint32_t r) {
    const std::uint32_t b = block_[r];
    if (b != kNone && blocks_[b].asleep) active_.insert(b);
  }
  // Cycles block b slept through that its counters do not include yet.
  [[nodiscard]] std::uint64_t owed(std::uint32_t b) const {
    return blocks_[b].asleep ? processed_ - sleep_[b].since : 0;
  }
  // Wavelets visible in the queues of input p of block b.
  [[nodiscard]] std::uint32_t queued_in(std::uint32_t b, std::uint32_t p) const;
  // Allocates the tile of router r; returns r's block.
  std::uint32_t new_tile(std::uint32_t r);
  // Allocates the tiles of router r's neighbours.
  void prepare_neighbours(std::uint32_t r);
  // Router r's block, allocated if need be.
  std::uint32_t ensure_block(std::uint32_t r) { return block_[r] != kNone ? block_[r] : new_tile(r); }
  // The router beyond output o (0 .. 3) of r, or kNone at the mesh boundary.
  [[nodiscard]] std::uint32_t next_router(std::uint32_t r, std::uint32_t o) const;
  // Colors with no credit beyond output o of router r (all, if nothing is connected).
  [[nodiscard]] std::uint64_t downstream_full(std::uint32_t r, std::uint32_t o) const {
    return full_[down_[r * kPorts + o]];
  }
  // The index in full_ of endpoint ep's receive queue.
  [[nodiscard]] std::uint32_t ep_full(std::uint32_t ep) const {
    return ep < routers_ ? ep * kPorts + index(Port::Ramp) : ep_full_base_ + ep;
  }
  // Queues of a router are [color][port]: the few colors in use share cache lines.
  [[nodiscard]] std::uint32_t slot_index(std::uint32_t block, std::uint32_t p, std::uint32_t c) const {
    return (block * colors_ + c) * kPorts + p;
  }
  // credits_ as slots_, but each block's from a cache line (credit_stride_ a multiple of 32
  // entries), so that the credits of a router's first six colors are one line.
  [[nodiscard]] std::uint32_t credit_index(std::uint32_t block, std::uint32_t p, std::uint32_t c) const {
    return block * credit_stride_ + c * kPorts + p;
  }
  // The i-th wavelet of q (0: the head; i < q.count).
  [[nodiscard]] Flit queued_flit(const Slot& q, std::uint32_t i) const;
  // Cache hints for the sweep of a large busy region (IndexSet::drain_ahead): a router's
  // block and output table, then (with the block in) its heads' queues and its outputs'
  // credit words.
  void prefetch_block(std::uint32_t b) const {
    for (std::size_t o = 0; o < sizeof(Block); o += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(&blocks_[b]) + o);
    __builtin_prefetch(&down_[std::size_t{block_router_[b]} * kPorts]);
  }
  void prefetch_visit(std::uint32_t b, std::uint64_t now) const;

  Mesh& mesh_;
  const MeshGeometry& geometry_;
  const RouteTable* routes_;  // static routes (none: no color is routed)
  std::uint32_t routers_, colors_, depth_, hop_;
  std::uint32_t credit_stride_;  // entries of credits_ per block
  std::uint32_t step_[4];        // router index offset to the neighbour beyond output 0 .. 3 (mod 2^32)
  bool link_stats_;
  bool per_router_;  // per router and port occupancy integrals
  bool idle_skip_;
  bool xy_;
  Sweep sweep_;                  // pick_sweep(), fixed at construction
  std::uint64_t processed_ = 0;  // last cycle written + 1

  // Per router (always allocated, small).
  // Colors with no credit: [router * 5 + output] for an output to a neighbouring router or
  // to the router's ramp (kept with the sender, so that checking and spending a credit touches
  // only its own state), then [ep_full_base_ + endpoint] for the edge channels' receive
  // queues, then ~0 for "nothing connected".
  std::vector<std::uint64_t> full_;
  std::uint32_t ep_full_base_ = 0;
  std::vector<std::uint32_t> down_;     // [router * 5 + output]: index in full_ of what it feeds
  std::vector<std::uint32_t> block_;    // router -> block, or kNone before its chunk is allocated
  std::vector<std::uint8_t> boundary_;  // router -> bit o set: no neighbour beyond output o
  // Per block (the routers of allocated tiles).
  std::vector<std::uint32_t> block_router_;  // block -> router (kNone beyond the mesh edge)
  std::vector<std::uint32_t> counted_;       // the routers of the allocated tiles
  std::vector<Block> blocks_;
  std::vector<Slot, CacheAligned<Slot>> slots_;  // [block][color][port]
  // Credits left on color c through output o to a neighbouring router, by credit_index() (the
  // queue depth less this router's sends out of o not yet freed there). Counted down, so the
  // last-credit test compares with zero. Apart from the queues: every move touches two of
  // them (the sender's and, when the wavelet leaves the queue, its upstream router's), and
  // this small array stays in cache where the queues do not.
  std::vector<std::uint16_t, CacheAligned<std::uint16_t>> credits_;
  std::vector<std::uint64_t> owned_by_;  // XY: [block][output][input]: colors of the output held by a packet
  std::vector<Requests> requests_;       // XY: [block]
  std::vector<Sleep> sleep_;             // [block]
  std::vector<std::uint64_t> link_forwarded_, link_stalled_, link_occupancy_;  // as slots_
  std::vector<Flit, CacheAligned<Flit>> flits_;
  std::vector<Unfull> unfull_;  // full_ bits to clear when the cycle ends (slots freed in full queues)
  // The blocks whose ramps sent a wavelet in a cycle of each parity (to run in the next).
  std::vector<std::uint32_t> ramp_sent_blocks_[2];
  // The sleeping routers: how many, and the credit stalls they add in each cycle (in total and
  // per color; the colors with any in sleep_colors_).
  std::uint32_t sleepers_ = 0;
  std::uint64_t sleep_stalls_ = 0, sleep_colors_ = 0;
  std::uint32_t sleep_color_stalls_[64] = {};
  sim::IndexSet active_;                    // blocks with work in the coming cycle
  sim::IndexSet work_;                      // those of the current cycle
  std::vector<std::uint32_t> visit_order_;  // scratch for work_.drain_ahead
  std::uint32_t tiles_x_ = 0;
};

}  // namespace wafersim::fabric
