#pragma once
// The routers' own sweep (fabric/router_sweep.h): every router's state in a block of its own,
// blocks laid out by tiles of 8 x 8 routers (a tile's state is touched, and built, when one of
// them first holds a wavelet), and only the routers with work visited, one at a time. Any
// routing (static color routes or XY packets), hop and ramp latency and counters; the mesh uses
// it unless the lanes fit its traffic. Swept in bands of tile rows on a thread team when the
// mesh is given more than one band (sim/parallel/row_bands.h), with the same results.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fabric/band_stage.h"
#include "fabric/cache_aligned.h"
#include "fabric/fabric_config.h"
#include "fabric/flit.h"
#include "fabric/geometry.h"
#include "fabric/lazy_array.h"
#include "fabric/port.h"
#include "fabric/router_sweep.h"
#include "sim/engine/index_set.h"
#include "sim/parallel/row_bands.h"

namespace wafersim::fabric {

class Mesh;
class RouteTable;

class BlockRouters final : public RouterSweep {
 public:
  // `bands`: the mesh's partition into bands (null: one band, swept on the caller's thread).
  BlockRouters(Mesh& mesh, sim::parallel::RowBands* bands);

  // The wavelet f that router r's ramp sent on color c in cycle t over a 1-cycle ramp: in the
  // router's arrival register, taken in in cycle t + 1. (Called by the cores of r's band.)
  void from_ramp(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) {
    const std::uint32_t b = reserve(r);
    blocks_[b].in[t & 1u].put(index(Port::Ramp), c, f);
    bands_[tile_band_[b / kTileBlocks]].ramp_sent[t & 1u].push_back(b);
  }
  // Router r is sent a wavelet by an endpoint (over the wheel, or through from_ramp): it counts
  // as used. Returns its block.
  std::uint32_t reserve(std::uint32_t r) {
    const std::uint32_t b = block_[r];
    blocks_[b].used = 1;
    tile_touched_[b / kTileBlocks] = 1;
    return b;
  }

  // Mesh::read_band's steps, each for a router of band `band` (in a part of its job when there
  // are several): endpoint ep popped a wavelet of color c from its receive queue (a slot frees
  // for the router output beyond it); the band's ramps sent wavelets in a cycle of `parity`; a
  // wavelet f for input p of router r, color c, is due now (off the wheel), counted into `n`.
  static constexpr bool kReadsInBands = true;
  void popped(std::uint32_t band, std::uint32_t ep, std::uint32_t c);
  void ramps_sent(std::uint32_t band, std::uint32_t parity) {
    for (std::uint32_t b : bands_[band].ramp_sent[parity]) bands_[band].active.insert(b);
    bands_[band].ramp_sent[parity].clear();
  }
  void push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f, std::uint64_t now, Counters& n);

  // RouterSweep
  void read(std::uint64_t t) override;
  std::uint64_t write(std::uint64_t t) override;
  [[nodiscard]] bool busy() const override;
  void routes_changed(const RouteTable* table, const std::vector<RouteChange>& changes) override;
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
  [[nodiscard]] const std::vector<std::uint32_t>& counted_routers() const override;
  [[nodiscard]] std::uint64_t allocated_bytes() const override;
  [[nodiscard]] bool vector_lanes() const override { return false; }
  [[nodiscard]] std::string describe() const override;
  void joined() override;
  void repartitioned(const std::vector<std::uint32_t>& old_first) override;

 private:
  // One (port, color) input queue of a router. Its head wavelet is held in the slot (most
  // queues never hold more than one), those behind it in a ring of `depth` flits in its tile's
  // flits (tile_flits_).
  struct Slot {
    Flit front;                 // the head wavelet (when count > 0)
    std::uint32_t buf = kNone;  // offset of the ring in the tile's flits, allocated when a second wavelet queues
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
  // The state of one router, at a fixed place by tiles of kTile x kTile routers (so neighbours'
  // state is close in memory), in memory the OS commits when first touched; fields grouped by
  // cache line in the order a busy router touches them. Zero bytes are a valid state for
  // the arrival registers and `used` (a neighbour or a ramp may send to a router whose tile is
  // not built yet); the rest is set when the tile is built, before its first visit. (No
  // char-typed fields are written on the hot path: they would alias every pointer and force
  // reloads.)
  static constexpr std::uint32_t kTile = 8;
  static constexpr std::uint32_t kTileBlocks = kTile * kTile;
  struct alignas(64) Block {
    std::uint32_t xy = 0;          // x | y << 16
    std::uint32_t links = 0;       // bit o: a neighbouring router beyond port o, in the same band
    std::uint32_t busy = 0;        // static routes: bit p: nonempty[p] != 0; XY: see Requests
    std::uint32_t owned_outs = 0;  // XY: outputs with a color held by a packet
    std::uint32_t used = 0;        // 1 once a wavelet was sent to it (the arriving ones count too)
    std::uint32_t ready = 0;       // 1 once its tile is built
    std::uint32_t asleep = 0;      // 1 while it sleeps blocked (see Sleep)
    std::uint32_t next[4] = {};    // [output 0 .. 3]: the neighbour's block
    std::uint32_t neighbours = 0;  // bit o: a neighbouring router beyond port o, in any band
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
  // A wavelet sent over a link into another band: put into the arrival register of parity
  // `parity` (1-cycle hops), or only marking the router used (longer hops: the wheel carries it).
  struct Crossing {
    std::uint32_t block, port, color, parity;
    Flit flit;
    bool hop1;
  };
  // A slot freed at input p of a router whose upstream neighbour is in another band: that
  // router's credit (block, output, color) and its full mark (full_ index).
  struct CreditBack {
    std::uint32_t block, output, color, full;
  };
  // The sleeping routers of a band: how many, and the credit stalls they add in each cycle (in
  // total and per color; the colors with any in `colors`).
  struct SleepTally {
    std::uint32_t sleepers = 0;
    std::uint64_t stalls = 0, colors = 0;
    std::uint32_t color_stalls[64] = {};
  };
  // One band: the routers of a range of tile rows, swept by one part of a job. Its sets and
  // tallies persist (repartitioned() moves them); its lists are emptied at each join.
  struct alignas(64) Band {
    Counters* counts = nullptr;  // the fabric's (one band) or this band's stage's deltas
    BandStage* stage = nullptr;  // null: one band, effects go straight into the mesh
    std::uint32_t first_block = 0, end_block = 0;
    sim::IndexSet active;                    // blocks with work in the coming cycle
    sim::IndexSet work;                      // those of the current cycle
    std::vector<std::uint32_t> visit_order;  // scratch for work.drain_ahead
    std::vector<Unfull> unfull;
    std::vector<Crossing> crossings;
    std::vector<CreditBack> credits_back;
    std::vector<std::uint32_t> ramp_sent[2];  // blocks whose ramps sent in a cycle of each parity
    SleepTally sleep;
    std::uint64_t granted = 0, visited = 0;  // in the last sweep
    std::uint64_t built = 0;                 // tiles it built
  };

  // One cycle of the router of block b: takes in the wavelets that arrived, counts
  // occupancy, grants each output round robin and moves the granted wavelets (counted in
  // counters_.forwarded). (Specialised on the routing, 1-cycle hops and per-link color counters.)
  template <bool kXY, bool kHop1, bool kLinkStats>
  void process(std::uint32_t b, std::uint64_t now, Band& band);
  // Processes the routers of `band` with work this cycle (all of them without idle skipping);
  // returns the grants.
  template <bool kXY, bool kHop1, bool kLinkStats>
  std::uint64_t run_routers(std::uint64_t t, Band& band);
  using Sweep = std::uint64_t (BlockRouters::*)(std::uint64_t, Band&);
  // The run_routers specialisation for this mesh's routing, hop latency and link counters.
  [[nodiscard]] Sweep pick_sweep() const;
  // Router r's output o (the ramp, or an edge channel) sends f on color c to the endpoint beyond
  // it in cycle `now`: under XY routing the wavelet leaves the network here (static routes count
  // it out when its queue pops), over 1-cycle hops with its color's queue count, which it keeps
  // while it moves from router to router.
  template <bool kXY, bool kHop1>
  void eject(Band& band, std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f, std::uint64_t now);
  // Router r (block k) sends f on color c through output o to its neighbour in another band:
  // what eject is to an endpoint, the output loop's send for a link whose far end another
  // part sweeps (the neighbour's arrival waits for the join).
  template <bool kXY, bool kHop1>
  [[gnu::noinline]] void cross(Band& band, Block& k, std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f,
                               std::uint64_t now);
  // Router r (block k) freed a slot of input p, color c, fed by the router beyond p: that
  // router's credit, which it sees from the next cycle (a full mark goes when the cycle ends).
  void free_credit(Band& band, const Block& k, std::uint32_t r, std::uint32_t p, std::uint32_t c) {
    if (credits_[credit_index(k.next[p], p ^ 2u, c)]++ == 0)
      band.unfull.push_back(Unfull{(r + step_[p]) * kPorts + (p ^ 2u), c});
  }
  // The same for an upstream router in another band (its credit comes back at the join), or an
  // endpoint.
  void credit_back(Band& band, const Block& k, std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint64_t now);
  // A wavelet sent over a 1-cycle hop in cycle `now` into input pp, color c, of block nb (kn),
  // in the same band: in its arrival register, taken in next cycle.
  void arrive(Band& band, Block& kn, std::uint32_t nb, std::uint32_t pp, std::uint32_t c, Flit f, std::uint64_t now) {
    ++band.counts->dir_queued[pp];
    band.active.insert(nb);
    kn.in[now & 1u].put(pp, c, f);
  }
  // A wavelet due at router input `target` in cycle `at` over a hop longer than one cycle.
  void to_wheel(Band& band, std::uint32_t target, std::uint32_t c, Flit f, std::uint64_t at);
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
  void stall(Counters& n, Block& k, std::uint32_t b, std::uint32_t o, std::uint64_t colors);
  // Router block b, which granted nothing in cycle `now`, stalls on `stalls[o]` (outputs
  // `outs`) in every cycle until something wakes it.
  [[gnu::noinline]] void fall_asleep(Band& band, std::uint32_t b, std::uint64_t now, const std::uint64_t* stalls,
                                     std::uint32_t outs);
  // Ends block b's sleep: adds the counters of the cycles slept before `upto` (visited: in
  // cycle `upto`, for which write() already counted its stalls into `n`; else before its
  // queues change).
  [[gnu::noinline]] void wake_up(Band& band, Counters& n, std::uint32_t b, std::uint64_t upto, bool visited);
  // Puts a sleeping router (by router index) on the list for the next cycle.
  void rouse(std::uint32_t r) {
    const std::uint32_t b = block_[r];
    if (blocks_[b].asleep) owner(b).active.insert(b);
  }
  // The band that sweeps block b now.
  Band& owner(std::uint32_t b) { return bands_[tile_band_[b / kTileBlocks]]; }
  [[nodiscard]] const Band& owner(std::uint32_t b) const { return bands_[tile_band_[b / kTileBlocks]]; }
  // Cycles block b slept through that its counters do not include yet.
  [[nodiscard]] std::uint64_t owed(std::uint32_t b) const {
    return blocks_[b].asleep ? processed_ - sleep_[b].since : 0;
  }
  // Wavelets visible in the queues of input p of block b.
  [[nodiscard]] std::uint32_t queued_in(std::uint32_t b, std::uint32_t p) const;
  // Builds tile t (its blocks' fields that are not zero, its queues and credits) before its
  // first visit. Called by the part that sweeps the tile, or at a serial point.
  void build_tile(std::uint32_t t);
  // The links of block b that its own band sweeps to (Block::links), for the current bands.
  [[nodiscard]] std::uint32_t fast_links(std::uint32_t b) const;
  // Sweeps one band (the job's part `band`); the grants and visits go into its Band.
  void sweep_band(std::uint64_t t, Band& band) {
    const std::uint64_t before = band.counts->evaluations;
    band.granted = (this->*sweep_)(t, band);
    band.visited = band.counts->evaluations - before;
  }
  // Whether a router of any band sleeps.
  [[nodiscard]] bool any_asleep() const;
  // Whether tile t's routers may have counts or wavelets: built, sent to by an endpoint, or
  // beside a built tile.
  [[nodiscard]] bool tile_in_use(std::uint32_t t) const;
  // Sets each band's block range and counters for the current partition.
  void place_bands();
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
  // The i-th wavelet of q (0: the head; i < q.count), a queue of block b.
  [[nodiscard]] Flit queued_flit(std::uint32_t b, const Slot& q, std::uint32_t i) const;
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
  sim::parallel::RowBands* partition_;  // null: one band
  const MeshGeometry& geometry_;
  const RouteTable* routes_;  // static routes (none: no color is routed)
  std::uint32_t routers_, colors_, depth_, hop_;
  std::uint32_t credit_stride_;  // entries of credits_ per block
  // [router * 4 + output]: a link's cycles beyond hop_ (a detour), or null when all links take hop_.
  const std::uint16_t* link_extra_;
  std::uint32_t step_[4];  // router index offset to the neighbour beyond output 0 .. 3 (mod 2^32)
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
  std::vector<std::uint32_t> block_;    // router -> block
  std::vector<std::uint8_t> boundary_;  // router -> bit o set: no neighbour beyond output o
  // Per block: blocks are tile * kTileBlocks + (y % kTile) * kTile + x % kTile, tiles row by row.
  std::vector<std::uint32_t> block_router_;  // block -> router (kNone beyond the mesh edge)
  LazyArray<Block> blocks_;
  LazyArray<Slot> slots_;  // [block][color][port]
  // Credits left on color c through output o to a neighbouring router, by credit_index() (the
  // queue depth less this router's sends out of o not yet freed there). Counted down, so the
  // last-credit test compares with zero. Apart from the queues: every move touches two of
  // them (the sender's and, when the wavelet leaves the queue, its upstream router's), and
  // this small array stays in cache where the queues do not.
  LazyArray<std::uint16_t> credits_;
  LazyArray<std::uint64_t> owned_by_;  // XY: [block][output][input]: colors of the output held by a packet
  LazyArray<Requests> requests_;       // XY: [block]
  LazyArray<Sleep> sleep_;             // [block]
  // As slots_. link_occupancy_ is stamped as Block::occupancy: less the cycle a wavelet queued,
  // plus the cycle after it left (a queue's count times the cycles written adds those queued).
  LazyArray<std::uint64_t> link_forwarded_, link_stalled_, link_occupancy_;
  // Per tile: the rings of its queues (grown only by the part that sweeps it, or at serial
  // points), whether it is built, whether an endpoint sent to one of its routers, its band.
  std::vector<std::vector<Flit, CacheAligned<Flit>>> tile_flits_;
  std::vector<std::uint8_t> tile_built_, tile_touched_;
  std::vector<std::uint16_t> tile_band_;
  std::uint32_t tiles_x_ = 0, tiles_y_ = 0;
  mutable std::vector<std::uint32_t> counted_;  // counted_routers(), rebuilt when the tiles or the cycle change
  mutable std::pair<std::uint64_t, std::uint64_t> counted_at_{~std::uint64_t{0}, 0};  // (processed_, tiles built)
  std::vector<Band> bands_;
};

}  // namespace wafersim::fabric
