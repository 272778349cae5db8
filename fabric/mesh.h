#pragma once
// The 2D mesh of five-port routers of one wafer, as a single clocked component: per input
// port and color queues with credit flow control, round-robin output arbitration, static
// color routes or packet-switched XY routing, and the ramps and edge I/O channels.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/cache_aligned.h"
#include "fabric/edge_listener.h"
#include "fabric/fabric_config.h"
#include "fabric/flit.h"
#include "fabric/geometry.h"
#include "fabric/lane_routers.h"
#include "fabric/port.h"
#include "fabric/route_table.h"
#include "hw/ramp.h"
#include "sim/engine/clocked.h"
#include "sim/engine/index_set.h"
#include "sim/stats/stats.h"

namespace wafersim::sim {
class Engine;
}

namespace wafersim::fabric {

enum class Routing : std::uint8_t {
  Static,  // per (router, color) routes from a RouteTable; multicast allowed
  XY,      // packet-switched: a head wavelet carries its destination; wormhole, X then Y
};

struct MeshOptions {
  Routing routing = Routing::Static;
  std::shared_ptr<const RouteTable> routes;  // Static: the routes (none: no color is routed)
  bool idle_skip = true;                     // without an engine; with one, the engine's option
  // Tracing (fabric/trace): keep per-link (Routers) or per-link and color (Links) counters
  // whatever the stats detail, without adding them to the statistics.
  StatsDetail trace_counters = StatsDetail::Totals;
};

// Cumulative counters of one router port, for tracing (mesh_trace.cpp).
struct LinkCounters {
  std::uint64_t forwarded = 0;  // wavelets sent through the output
  std::uint64_t stalled = 0;    // output-color-cycles without credit downstream
  std::uint64_t occupancy = 0;  // occupancy integral of the input queues (wavelet-cycles)
  std::uint32_t queued = 0;     // wavelets visible in the input queues now
};

class Endpoint;

// Hears of every wavelet on its way into an endpoint's receive queue, by endpoint index
// (Mesh::endpoints()): for one component that serves all the endpoints (synthetic traffic),
// without the ramp and edge listeners' conversions. While one is set, those hear nothing,
// credits included (its owner polls can_send()).
class EndpointListener {
 public:
  virtual ~EndpointListener() = default;
  // A wavelet of color c is on its way into endpoint ep's receive queue, visible from cycle `at`.
  virtual void on_arrival(std::uint32_t ep, std::uint32_t c, sim::Cycle at) = 0;
};

// Timing (docs/fabric.md): a wavelet granted an output in cycle t is in the next router's
// input queue, visible to its arbitration, from t + hop_latency, and in an endpoint's
// receive queue from t + ramp_latency; one sent by an endpoint in cycle t is in its
// router's input queue from t + ramp_latency. A slot freed in cycle t is a credit the
// sender can use from t + 1. Each output sends at most one wavelet per cycle; each input
// queue (port, color) sends its head to at most one output per cycle, several queues of
// one port may send in the same cycle (to different outputs).
//
// Contract: the mesh changes state only in read() (arrivals and credits due this cycle)
// and write() (grants computed in evaluate()), and endpoints are used only from other
// components' evaluate() or write(), so the order of ticking cannot change results.
// Routers with empty queues cost nothing, and so do routers whose every wavelet waits for a
// credit (until one returns); the mesh sleeps when no router holds a wavelet.
class Mesh final : public sim::Clocked {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // `engine` may be null: the owner then ticks the mesh itself every cycle (benchmarks,
  // stand-alone traffic runs); otherwise the mesh registers with it.
  Mesh(const FabricConfig& config, const MeshGeometry& geometry, MeshOptions options, sim::Engine* engine);
  ~Mesh() override;
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  [[nodiscard]] const MeshGeometry& geometry() const { return geometry_; }
  [[nodiscard]] const FabricConfig& config() const { return config_; }
  [[nodiscard]] Routing routing() const { return options_.routing; }
  [[nodiscard]] const RouteTable* routes() const { return options_.routes.get(); }
  [[nodiscard]] std::uint32_t colors() const { return colors_; }
  [[nodiscard]] std::uint32_t depth() const { return depth_; }
  [[nodiscard]] StatsDetail stats_detail() const { return detail_; }

  // The ramp of PE `pe` (the core's side of its router's ramp port), per hw/ramp.h.
  hw::RampPort& ramp(hw::PeCoord pe);
  // An edge I/O channel (the same operations, for host, MemoryX or SwarmX traffic).
  hw::RampPort& edge_channel(EdgeSide side, std::uint32_t channel);
  void set_arrival_listener(hw::RampListener* listener) { ramp_listener_ = listener; }
  void set_edge_listener(EdgeListener* listener) { edge_listener_ = listener; }
  void set_endpoint_listener(EndpointListener* listener) { endpoint_listener_ = listener; }

  // Endpoint-level access used by the ramps, the edge channels and synthetic traffic.
  // Endpoint e < routers() is router e's ramp; then the west channels, then the east ones.
  [[nodiscard]] std::uint32_t endpoints() const { return static_cast<std::uint32_t>(ep_router_.size()); }
  [[nodiscard]] std::uint32_t edge_endpoint(EdgeSide side, std::uint32_t channel) const;
  [[nodiscard]] bool can_send(std::uint32_t ep, hw::Color c) const {
    if (lanes_) return ep < geometry_.routers() && c.id() < lane_colors_ && lanes_->ramp_credit(ep, c.id());
    const std::uint32_t b = block_[ep_router_[ep]];
    return b == kNone || credits_[credit_index(b, ep_port_[ep], c.id())] != 0;
  }
  // Sends `f` on color c into the endpoint's router (requires can_send; at most once per
  // cycle per endpoint).
  void send(std::uint32_t ep, hw::Color c, Flit f, sim::Cycle now);
  // Colors with a wavelet visible in the endpoint's receive queue (bit c).
  [[nodiscard]] std::uint64_t visible(std::uint32_t ep) const { return ep_fronts_[ep].visible; }
  // Colors whose visible front wavelet is a control wavelet (a subset of visible()).
  [[nodiscard]] std::uint64_t control_fronts(std::uint32_t ep) const { return ep_fronts_[ep].control; }
  [[nodiscard]] Flit front(std::uint32_t ep, hw::Color c) const {
    if (!((ep_fronts_[ep].visible >> c.id()) & 1u)) empty_receive_queue("front", c.id());
    return rx_[std::size_t{ep_block_[ep]} * colors_ + c.id()].front;
  }
  // Pops the head of color c and returns it (at most one pop per cycle per endpoint).
  Flit pop(std::uint32_t ep, hw::Color c, sim::Cycle now);

  // A promise that from now on only the ramps send, and only single-wavelet XY packets on
  // colors 0 .. colors - 1 (0: no promise): lets the mesh sweep its routers eight at a time in
  // vector lanes (fabric/lane_routers.h; the same results, faster under load). Only before
  // the first wavelet is sent; returns whether the lanes are used: in builds with AVX2, with XY
  // routing, 1-cycle hops and ramps, no per-color link counters or tracing counters, at most
  // LaneRouters::kColors colors, queues of at most LaneRouters::kMaxDepth and meshes of at
  // most LaneRouters::kMaxRouters routers in rows of at most LaneRouters::kMaxWidth.
  bool use_lanes(std::uint32_t colors);
  [[nodiscard]] bool lanes() const { return lanes_ != nullptr; }

  // sim::Clocked
  void read(sim::Cycle now) override;
  void evaluate(sim::Cycle now) override;
  sim::Cycle write(sim::Cycle now) override;
  [[nodiscard]] std::string describe() const override;

  // Registers the fabric statistics in `g` (units and descriptions; mesh_stats.cpp).
  void add_stats(sim::stats::Group& g);

  // Wavelets in router queues or on links between routers.
  [[nodiscard]] std::uint64_t in_network() const { return in_network_; }
  // Nothing in router queues, on links or on the way to an endpoint.
  [[nodiscard]] bool idle() const { return in_network_ == 0 && wheel_count_ == 0; }
  // Wavelets sent by endpoints, and delivered into endpoint receive queues.
  [[nodiscard]] std::uint64_t injected() const { return injected_; }
  [[nodiscard]] std::uint64_t delivered() const { return delivered_; }
  // Grants over all router outputs (router-to-router, ramp and edge).
  [[nodiscard]] std::uint64_t forwarded() const { return forwarded_; }
  // Output-color-cycles without credit downstream (the credit_stalls statistic).
  [[nodiscard]] std::uint64_t credit_stalls() const { return stalled_; }
  // Work counters (not model statistics): router visits (fewer with idle skipping), and
  // wavelets granted on arrival without passing through a queue (XY, 1-cycle hops, no
  // per-link color counters).
  [[nodiscard]] std::uint64_t router_evaluations() const { return router_evaluations_; }
  [[nodiscard]] std::uint64_t bypassed() const { return bypassed_; }
  // Routers that ever held a wavelet (their queue state is allocated).
  [[nodiscard]] std::uint32_t touched_routers() const;
  // Bytes of dynamic state allocated so far (queues, counters), for the benchmarks.
  [[nodiscard]] std::uint64_t allocated_bytes() const;

  // Occupancy integral over all router input queues, in wavelet-cycles.
  [[nodiscard]] std::uint64_t occupancy_integral() const;

  // Tracing (mesh_trace.cpp). Counters of port p of router r (forwarded and stalled count
  // the output, occupancy and queued the input); per color when link counters are kept.
  [[nodiscard]] LinkCounters link_counters(std::uint32_t r, std::uint32_t p) const;
  [[nodiscard]] LinkCounters link_counters(std::uint32_t r, std::uint32_t p, std::uint32_t c) const;
  [[nodiscard]] bool keeps_link_counters() const { return per_router_; }
  [[nodiscard]] bool keeps_color_counters() const { return link_stats_; }
  // Routers whose counters are allocated (a superset of those that ever held a wavelet; the
  // others' counters are zero), in allocation order.
  [[nodiscard]] const std::vector<std::uint32_t>& counted_routers() const { return counted_; }

  // The deadlock report (deadlock_report.cpp): stuck routers, ports, colors, contents.
  [[nodiscard]] std::string deadlock_report(sim::Cycle now) const;

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
    // integral up to now adds the queued ones times now: occupancy_of(); sleeping costs nothing).
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
  // An endpoint's receive queue for one color, held as a Slot is: the head wavelet here, those
  // behind it in a ring of `depth` flits in rx_flits_ (sinks pop every cycle, so the ring is
  // seldom used and a delivery writes this record only).
  struct RxQueue {
    Flit front;                 // the head wavelet (when count > 0)
    std::uint32_t buf = kNone;  // offset of the ring in rx_flits_, allocated when a second wavelet queues
    std::uint16_t head = 0;     // ring position of the wavelet behind the head
    std::uint16_t count = 0;    // wavelets visible
    std::uint16_t occ = 0;      // wavelets visible or on the way
  };
  struct Transit {         // a wavelet on a link, due at the start of a later cycle
    std::uint32_t target;  // router * 5 + port, or endpoint
    std::uint16_t to_endpoint;
    std::uint16_t color;
    Flit flit;
  };
  struct Return {
    std::uint32_t target;  // router * 5 + port, or endpoint
    std::uint32_t color;
  };

  // One cycle of the router of block b: takes in the wavelets that arrived, counts
  // occupancy, grants each output round robin and moves the granted wavelets (counted in
  // forwarded_). (Specialised on the routing, 1-cycle hops and per-link color counters.)
  template <bool kXY, bool kHop1, bool kLinkStats>
  void process(std::uint32_t b, std::uint64_t now);
  // Processes the routers with work this cycle (all of them without idle skipping); returns the grants.
  template <bool kXY, bool kHop1, bool kLinkStats>
  std::uint64_t run_routers(std::uint64_t t);
  using Sweep = std::uint64_t (Mesh::*)(std::uint64_t);
  // The run_routers specialisation for this mesh's routing, hop latency and link counters.
  [[nodiscard]] Sweep pick_sweep() const;
  // Sends `f` on color c from router r's output o to the endpoint beyond it.
  void to_endpoint(std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f, std::uint64_t now);
  // to_endpoint() from a grant: under XY routing the wavelet leaves the network here (static
  // routes count it out when its queue pops), over 1-cycle hops with its color's queue count,
  // which it keeps while it moves from router to router.
  template <bool kXY, bool kHop1>
  void eject(std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f, std::uint64_t now);
  // Router r freed a slot of input p (fed by an endpoint), color c.
  void return_to_endpoint(std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint64_t now);
  // Router r (block k) freed a slot of input p, color c, fed by the router beyond p: that
  // router's credit, which it sees from the next cycle (a full mark goes when the cycle ends).
  void free_credit(const Block& k, std::uint32_t r, std::uint32_t p, std::uint32_t c) {
    if (credits_[credit_index(k.next[p], p ^ 2u, c)]++ == 0)
      unfull_.push_back(Return{(r + step_[p]) * kPorts + (p ^ 2u), c});
  }
  // A wavelet sent over a 1-cycle hop in cycle `now` into input pp, color c, of block nb (kn):
  // in its arrival register, taken in next cycle.
  void arrive(Block& kn, std::uint32_t nb, std::uint32_t pp, std::uint32_t c, Flit f, std::uint64_t now) {
    ++dir_queued_[pp];
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
  [[nodiscard]] std::uint32_t xy_request(const Block& k, const Slot& q, std::uint32_t payload) const {
    return q.route ? q.route - 1u : index(xy_output(k.xy & 0xffffu, k.xy >> 16, payload));
  }
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
  // Counters of block b up to now (with the cycles owed): credit stalls of output o (per
  // color c), the occupancy integral of input p (per color c).
  [[nodiscard]] std::uint64_t stalled_of(std::uint32_t b, std::uint32_t o) const;
  [[nodiscard]] std::uint64_t link_stalled_of(std::uint32_t b, std::uint32_t o, std::uint32_t c) const;
  [[nodiscard]] std::uint64_t occupancy_of(std::uint32_t b, std::uint32_t p) const;
  [[nodiscard]] std::uint64_t link_occupancy_of(std::uint32_t b, std::uint32_t p, std::uint32_t c) const;
  // Takes a wavelet off the wheel (a ramp or edge channel, or a hop longer than one cycle) in
  // cycle `now`.
  void push_visible(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f, std::uint64_t now);
  // Wavelets visible in the queues of input p of block b.
  [[nodiscard]] std::uint32_t queued_in(std::uint32_t b, std::uint32_t p) const;
  // Allocates the tile of router r; returns r's block.
  std::uint32_t new_tile(std::uint32_t r);
  // Allocates the tiles of router r's neighbours.
  void prepare_neighbours(std::uint32_t r);
  // Router r's block, allocated if need be.
  std::uint32_t ensure_block(std::uint32_t r) { return block_[r] != kNone ? block_[r] : new_tile(r); }
  // Queues `f` at the tail of q, a Slot (ring in flits_) or an RxQueue (ring in rx_flits_):
  // the head in q.front, those behind it in q's ring, allocated when a second wavelet queues.
  template <class Queue, class Ring>
  void enqueue(Queue& q, Flit f, Ring& ring) {
    if (q.count == 0) {
      q.front = f;
    } else {
      if (q.buf == kNone) {
        q.buf = static_cast<std::uint32_t>(ring.size());
        ring.resize(ring.size() + depth_);
      }
      ring[q.buf + ring_position(q, q.count)] = f;
    }
    ++q.count;
  }
  // After a pop that left q nonempty (its count already lowered): the wavelet behind the old head
  // moves from the ring (of `depth` flits at `ring` + q.buf) to q.front.
  template <class Queue>
  static void advance(Queue& q, const Flit* ring, std::uint32_t depth) {
    q.front = ring[q.buf + q.head];
    q.head = static_cast<std::uint16_t>(q.head + 1u == depth ? 0u : q.head + 1u);
  }
  // Where in q's ring the i-th wavelet of q is (i >= 1; 0 is the head, in q.front).
  template <class Queue>
  [[nodiscard]] std::uint32_t ring_position(const Queue& q, std::uint32_t i) const {
    const std::uint32_t pos = q.head + i - 1u;
    return pos >= depth_ ? pos - depth_ : pos;
  }
  // The i-th wavelet of q (0: the head; i < q.count).
  [[nodiscard]] Flit queued_flit(const Slot& q, std::uint32_t i) const {
    return i == 0 ? q.front : flits_[q.buf + ring_position(q, i)];
  }
  // Endpoint ep's block (its receive queues and cycle stamps), allocated if need be.
  std::uint32_t ensure_ep_block(std::uint32_t ep) { return ep_block_[ep] != kNone ? ep_block_[ep] : new_ep_block(ep); }
  std::uint32_t new_ep_block(std::uint32_t ep);
  // The router beyond output o (0 .. 3) of r, or kNone at the mesh boundary.
  [[nodiscard]] std::uint32_t next_router(std::uint32_t r, std::uint32_t o) const {
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
  // Colors with no credit beyond output o of router r (all, if nothing is connected).
  [[nodiscard]] std::uint64_t downstream_full(std::uint32_t r, std::uint32_t o) const {
    return full_[down_[r * kPorts + o]];
  }
  [[nodiscard]] std::uint32_t endpoint_beyond(std::uint32_t r, Port o) const;
  [[nodiscard]] Port xy_output(std::uint32_t x, std::uint32_t y, std::uint32_t payload) const;
  // Queues of a router are [color][port]: the few colors in use share cache lines.
  [[nodiscard]] std::uint32_t slot_index(std::uint32_t block, std::uint32_t p, std::uint32_t c) const {
    return (block * colors_ + c) * kPorts + p;
  }
  // credits_ as slots_, but each block's from a cache line (credit_stride_ a multiple of 32
  // entries), so that the credits of a router's first six colors are one line.
  [[nodiscard]] std::uint32_t credit_index(std::uint32_t block, std::uint32_t p, std::uint32_t c) const {
    return block * credit_stride_ + c * kPorts + p;
  }
  // Whether write() has not yet run for the last cycle evaluate() saw (a component ticked
  // before the mesh stopped the cycle): its occupancy is then counted from the current state.
  [[nodiscard]] bool cycle_unfinished() const { return evaluated_ > processed_; }
  // Wavelets queued in that cycle in input p (and color c) of block b.
  [[nodiscard]] std::uint64_t unfinished_queued(std::uint32_t b, std::uint32_t p, std::uint32_t c) const;
  // Tells the listeners that a wavelet is on its way into endpoint ep, visible from `at`, or
  // that a credit comes back to it, usable from `at`.
  void notify_arrival(std::uint32_t ep, std::uint32_t c, sim::Cycle at) {
    if (endpoint_listener_)
      endpoint_listener_->on_arrival(ep, c, at);
    else
      tell_arrival(ep, c, at);
  }
  void notify_credit(std::uint32_t ep, std::uint32_t c, sim::Cycle at) {
    if (!endpoint_listener_) tell_credit(ep, c, at);
  }
  // The ramp or edge listener's side of those.
  void tell_arrival(std::uint32_t ep, std::uint32_t c, sim::Cycle at);
  void tell_credit(std::uint32_t ep, std::uint32_t c, sim::Cycle at);
  void wake_self(sim::Cycle at);
  // Counts a wavelet sent by a ramp in cycle t on color c (see ramp_sent_).
  void count_ramp_send(std::uint64_t t, std::uint32_t c) {
    ++ramp_sent_[t & 1u];
    ++ramp_sent_colors_[t & 1u][c];
  }
  // send()'s checks: one send per endpoint and cycle (stamped), a head's destination in the mesh.
  void stamp_send(std::uint32_t ep, std::uint64_t now) {
    std::uint64_t& last = ep_last_send_[ensure_ep_block(ep)];
    if (last == now + 1) sent_twice(ep, now);
    last = now + 1;
  }
  void check_head(Flit f) const {
    if (f.head() && !geometry_.contains(destination_x(f.payload), destination_y(f.payload))) head_outside(f);
  }
  [[noreturn]] void outside_promise(std::uint32_t ep, std::uint32_t c) const;
  [[noreturn]] void no_credit(std::uint32_t ep, std::uint32_t c) const;
  [[noreturn]] void sent_twice(std::uint32_t ep, std::uint64_t now) const;
  [[noreturn]] void head_outside(Flit f) const;
  [[noreturn]] void popped_twice(std::uint32_t ep, std::uint64_t now) const;
  [[noreturn]] void unconnected(std::uint32_t r, std::uint32_t o, std::uint32_t c) const;
  [[noreturn]] void empty_receive_queue(const char* what, std::uint32_t c) const;
  [[noreturn]] void route_error(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f) const;
  void check_deadlock(sim::Cycle now);
  // The lane routers' reports (ejections and ramp credits) into the mesh's endpoint side.
  class LaneEnds final : public LaneRouters::Ends {
   public:
    explicit LaneEnds(Mesh& mesh) : mesh_(mesh) {}
    void eject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) override;
    void ramp_freed(std::uint32_t r, std::uint32_t c, std::uint64_t t) override;

   private:
    Mesh& mesh_;
  };
  std::uint64_t sweep_lanes(std::uint64_t t);
  // Counters of router r's port p, whichever sweep keeps them.
  [[nodiscard]] std::uint64_t port_forwarded(std::uint32_t r, std::uint32_t p) const;
  [[nodiscard]] std::uint64_t port_stalled(std::uint32_t r, std::uint32_t p) const;
  [[nodiscard]] std::uint64_t port_occupancy(std::uint32_t r, std::uint32_t p) const;
  // Wavelets in input p's queues; whether one for input p is in the arrival register of
  // `parity`; those queued in the cycle evaluated but not yet written (cycle_unfinished()).
  [[nodiscard]] std::uint32_t port_queued(std::uint32_t r, std::uint32_t p) const;
  [[nodiscard]] bool port_arriving(std::uint32_t r, std::uint32_t p, std::uint32_t parity) const;
  [[nodiscard]] std::uint64_t port_unfinished(std::uint32_t r, std::uint32_t p) const;
  [[nodiscard]] std::string describe_queue(std::uint32_t r, std::uint32_t p, std::uint32_t c) const;

  friend class Endpoint;

  FabricConfig config_;
  MeshGeometry geometry_;
  MeshOptions options_;
  sim::Engine* engine_;
  std::uint32_t colors_, depth_, hop_, ramp_;
  std::uint32_t credit_stride_;  // entries of credits_ per block
  std::uint32_t step_[4];        // router index offset to the neighbour beyond output 0 .. 3 (mod 2^32)
  StatsDetail detail_;
  bool link_stats_;
  bool per_router_;  // per router and port occupancy integrals
  bool idle_skip_;
  bool xy_;
  Sweep sweep_;  // pick_sweep(), fixed at construction

  // Per router (always allocated, small).
  // Colors with no credit: [router * 5 + output] for an output to a neighbouring router or
  // to the router's ramp (kept with the sender, so that checking and spending a credit touches
  // only its own state), then [ep_full_base_ + endpoint] for the edge channels' receive
  // queues, then ~0 for "nothing connected".
  std::vector<std::uint64_t> full_;
  std::uint32_t ep_full_base_ = 0;
  // The index in full_ of endpoint ep's receive queue.
  [[nodiscard]] std::uint32_t ep_full(std::uint32_t ep) const {
    return ep < geometry_.routers() ? ep * kPorts + index(Port::Ramp) : ep_full_base_ + ep;
  }
  std::vector<std::uint32_t> down_;     // [router * 5 + output]: index in full_ of what it feeds
  std::vector<std::uint32_t> block_;    // router -> block, or kNone before its chunk is allocated
  std::vector<std::uint8_t> boundary_;  // router -> bit o set: no neighbour beyond output o
  // Per block (the routers of allocated tiles).
  std::vector<std::uint32_t> block_router_;  // block -> router (kNone beyond the mesh edge)
  std::vector<std::uint32_t> counted_;       // the routers of the allocated tiles
  std::vector<Block> blocks_;
  std::vector<Slot, CacheAligned<Slot>> slots_;  // [block][color][port]
  // Credits left on color c through port p, by credit_index() (the queue depth less those in use),
  // kept by the side that spends them: for a port facing a router, less this router's sends
  // out of p not yet freed there; for a port fed by an endpoint, less the endpoint's sends
  // into the queue (visible, on the way, or freed but not yet returned). Counted down, so the
  // last-credit test compares with zero. Apart from the queues: every move touches two of
  // them (the sender's and, when the wavelet leaves the queue, its upstream router's), and
  // this small array stays in cache where the queues do not.
  std::vector<std::uint16_t, CacheAligned<std::uint16_t>> credits_;
  std::vector<std::uint64_t> owned_by_;  // XY: [block][output][input]: colors of the output held by a packet
  std::vector<Requests> requests_;       // XY: [block]
  std::vector<Sleep> sleep_;             // [block]
  std::vector<std::uint64_t> link_forwarded_, link_stalled_, link_occupancy_;  // as slots_
  std::vector<Flit, CacheAligned<Flit>> flits_;
  // Per endpoint.
  std::vector<std::unique_ptr<Endpoint>> ports_;  // RampPort adapters, created on request
  std::vector<std::uint32_t> ep_router_;
  std::vector<std::uint8_t> ep_port_;
  std::vector<std::uint32_t> ep_block_;
  // What a core checks before it reads a queue: bit c of `visible`, a wavelet of color c is
  // visible; of `control`, it is a control wavelet (kept so that the check reads no queue).
  struct Fronts {
    std::uint64_t visible = 0, control = 0;
  };
  std::vector<Fronts> ep_fronts_;
  std::vector<RxQueue> rx_;                                // [ep block][color]
  std::vector<std::uint64_t> ep_last_send_, ep_last_pop_;  // [ep block]: cycle + 1 (0 never)
  std::vector<Flit> rx_flits_;
  // Per color totals (colors 0 .. colors_ - 1; arrays in the mesh, not vectors, so the
  // router loop reaches them without loading a base pointer).
  std::uint64_t color_forwarded_[64] = {}, color_stalled_[64] = {}, color_occupancy_[64] = {}, color_queued_[64] = {};
  std::uint64_t dir_occupancy_[kPorts] = {};
  std::uint64_t dir_queued_[kPorts] = {};  // [input direction]: wavelets queued or arriving over 1-cycle links

  std::vector<std::vector<Transit>> wheel_;  // [cycle & wheel_mask_]
  std::uint64_t wheel_mask_ = 0;
  std::vector<Return> input_returns_, ep_returns_;  // credits freed this cycle, usable from the next
  std::vector<Return> unfull_;  // full_ bits to clear when the cycle ends (slots freed in full queues)
  // Over a 1-cycle ramp an endpoint's wavelet goes into its router's arrival register (port
  // Ramp) when sent, not through the wheel, and counts as queued from the next cycle (read()).
  // [cycle parity]: those sent in a cycle, in total and per color, and (the routers' own sweep)
  // the blocks whose routers are to run.
  std::uint32_t ramp_sent_[2] = {};
  std::uint32_t ramp_sent_colors_[2][64] = {};
  std::vector<std::uint32_t> ramp_sent_blocks_[2];
  // The sleeping routers: how many, and the credit stalls they add in each cycle (in total and
  // per color; the colors with any in sleep_colors_).
  std::uint32_t sleepers_ = 0;
  std::uint64_t sleep_stalls_ = 0, sleep_colors_ = 0;
  std::uint32_t sleep_color_stalls_[64] = {};
  sim::IndexSet active_;                    // blocks with work in the coming cycle
  sim::IndexSet work_;                      // those of the current cycle
  std::vector<std::uint32_t> visit_order_;  // scratch for work_.drain_ahead
  // Cache hints for the sweep of a large busy region (IndexSet::drain_ahead): a router's
  // block and output table, then (with the block in) its heads' queues and its outputs'
  // credit words.
  void prefetch_block(std::uint32_t b) const {
    for (std::size_t o = 0; o < sizeof(Block); o += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(&blocks_[b]) + o);
    __builtin_prefetch(&down_[std::size_t{block_router_[b]} * kPorts]);
  }
  void prefetch_visit(std::uint32_t b, std::uint64_t now) const;
  std::uint32_t tiles_x_ = 0;
  std::uint64_t wheel_count_ = 0;

  hw::RampListener* ramp_listener_ = nullptr;
  EdgeListener* edge_listener_ = nullptr;
  EndpointListener* endpoint_listener_ = nullptr;
  sim::Cycle last_wake_request_ = sim::Cycle::never();

  std::uint64_t in_network_ = 0;
  std::uint64_t injected_ = 0, delivered_ = 0, forwarded_ = 0, stalled_ = 0;

  std::uint64_t router_evaluations_ = 0, bypassed_ = 0;
  std::uint64_t evaluated_ = 0, processed_ = 0;  // last cycle + 1 of evaluate() and write()
  sim::Cycle last_progress_{0};

  std::unique_ptr<LaneRouters> lanes_;  // use_lanes(): the routers' state and sweep instead of the blocks
  std::uint32_t lane_colors_ = 0;
  LaneEnds lane_ends_{*this};
};

}  // namespace wafersim::fabric
