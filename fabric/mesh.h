#pragma once
// The 2D mesh of five-port routers of one wafer, as a single clocked component: per input
// port and color queues with credit flow control, round-robin output arbitration, static
// color routes or packet-switched XY routing, and the ramps and edge I/O channels.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fabric/band_stage.h"
#include "fabric/edge_listener.h"
#include "fabric/expected_traffic.h"
#include "fabric/fabric_config.h"
#include "fabric/flit.h"
#include "fabric/geometry.h"
#include "fabric/lazy_array.h"
#include "fabric/outage.h"
#include "fabric/port.h"
#include "fabric/ramp_inlet.h"
#include "fabric/ring_queue.h"
#include "fabric/route_table.h"
#include "fabric/router_sweep.h"
#include "hw/ramp.h"
#include "sim/engine/clocked.h"
#include "sim/parallel/row_bands.h"
#include "sim/stats/stats.h"

namespace wafersim::sim {
class Engine;
}

namespace wafersim::fabric {

class LinkDelays;
struct BrokenRoute;

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
  // The traffic to expect, from which the mesh picks the sweep of its routers (unset: nothing
  // is known, the routers' own sweep).
  std::optional<ExpectedTraffic> traffic;
  // Links longer than fabric.hop_latency (a defective wafer's detours; null: none), not owned:
  // it outlives the mesh. Such a mesh sweeps its routers one at a time (the lanes have 1-cycle
  // links). (A plain pointer: the options' copies stay as cheap as before.)
  const LinkDelays* link_delays = nullptr;
  // The wafer's rows in bands (not owned; null or one band: the routers swept on the caller's
  // thread). Their granule must be kBandRows.
  sim::parallel::RowBands* bands = nullptr;
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
// The routers are swept by one of two implementations of fabric/router_sweep.h, chosen when the
// mesh is built (MeshOptions::traffic); both give the same results.
//
// Contract: the mesh changes state only in read() (arrivals and credits due this cycle)
// and write() (grants computed in evaluate()), and endpoints are used only from other
// components' evaluate() or write(), so the order of ticking cannot change results.
// Routers with empty queues cost nothing, and so do routers whose every wavelet waits for a
// credit (until one returns); the mesh sleeps when no router holds a wavelet.
// With bands (MeshOptions::bands), write() sweeps the routers band by band on the team, and
// the endpoints of a band's rows may be used from that band's part of another component's
// job (the cores' evaluate): what they share is staged and folded in at the join, so the
// results are those of one thread.
class Mesh final : public sim::Clocked, public sim::parallel::BandClient {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  // The rows a band holds are whole multiples of this (the routers' own sweep keeps its state
  // in tiles of that many rows).
  static constexpr std::uint32_t kBandRows = 8;

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
  // The latency of link output o (0 .. 3) of router r: fabric.hop_latency plus its detour.
  [[nodiscard]] std::uint32_t link_latency(std::uint32_t r, std::uint32_t o) const;
  // Whether every link takes fabric.hop_latency.
  [[nodiscard]] bool uniform_links() const;

  // The ramp of PE `pe` (the core's side of its router's ramp port), per hw/ramp.h.
  hw::RampPort& ramp(hw::PeCoord pe);
  // An edge I/O channel (the same operations, for host, MemoryX or SwarmX traffic).
  hw::RampPort& edge_channel(EdgeSide side, std::uint32_t channel);
  void set_arrival_listener(hw::RampListener* listener) {
    ramp_listener_ = listener;
    split_arrivals_ = listener && listener->splits_arrivals();
  }
  void set_edge_listener(EdgeListener* listener) { edge_listener_ = listener; }
  void set_endpoint_listener(EndpointListener* listener) { endpoint_listener_ = listener; }

  // Endpoint-level access used by the ramps, the edge channels and synthetic traffic.
  // Endpoint e < routers() is router e's ramp; then the west channels, then the east ones.
  [[nodiscard]] std::uint32_t endpoints() const { return static_cast<std::uint32_t>(ep_router_.size()); }
  [[nodiscard]] std::uint32_t edge_endpoint(EdgeSide side, std::uint32_t channel) const;
  [[nodiscard]] bool can_send(std::uint32_t ep, hw::Color c) const {
    return ep_spent_[std::size_t{ep} * colors_ + c.id()] < depth_;
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
    return rx_[std::size_t{ep} * colors_ + c.id()].front;
  }
  // Pops the head of color c and returns it (at most one pop per cycle per endpoint).
  Flit pop(std::uint32_t ep, hw::Color c, sim::Cycle now);

  // Whether the mesh sweeps its routers in vector lanes (fabric/lane_sweep.h), chosen when it
  // was built from MeshOptions::traffic. Such a mesh holds its senders to the promise of that
  // ExpectedTraffic: a send outside it is a std::logic_error.
  [[nodiscard]] bool lanes() const { return routers_->vector_lanes(); }

  // sim::Clocked
  void read(sim::Cycle now) override;
  void evaluate(sim::Cycle now) override;
  sim::Cycle write(sim::Cycle now) override;
  [[nodiscard]] std::string describe() const override;

  // sim::parallel::BandClient: fold the bands' stages in band order; follow a new partition.
  void joined() override;
  void repartitioned(const std::vector<std::uint32_t>& old_first) override;

  // Registers the fabric statistics in `g` (units and descriptions; mesh_stats.cpp).
  void add_stats(sim::stats::Group& g);

  // Wavelets in router queues or on links between routers.
  [[nodiscard]] std::uint64_t in_network() const { return counts_->in_network; }
  // Nothing in router queues, on links or on the way to an endpoint.
  [[nodiscard]] bool idle() const { return counts_->in_network == 0 && wheel_count_ == 0; }
  // Wavelets sent by endpoints, and delivered into endpoint receive queues.
  [[nodiscard]] std::uint64_t injected() const { return injected_; }
  [[nodiscard]] std::uint64_t delivered() const { return delivered_; }
  // Grants over all router outputs (router-to-router, ramp and edge).
  [[nodiscard]] std::uint64_t forwarded() const { return counts_->forwarded; }
  // Output-color-cycles without credit downstream (the credit_stalls statistic).
  [[nodiscard]] std::uint64_t credit_stalls() const { return counts_->stalled; }
  // Work counters (not model statistics): router visits (fewer with idle skipping), and
  // wavelets granted on arrival without passing through a queue (XY, 1-cycle hops, no
  // per-link color counters).
  [[nodiscard]] std::uint64_t router_evaluations() const { return counts_->evaluations; }
  [[nodiscard]] std::uint64_t bypassed() const { return counts_->bypassed; }
  // Cycles whose read phase ran as a job of the bands (a work counter, like those above).
  [[nodiscard]] std::uint64_t read_jobs() const { return read_jobs_; }
  // Routers that ever held a wavelet (their queue state is allocated).
  [[nodiscard]] std::uint32_t touched_routers() const { return routers_->touched_routers(); }
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
  [[nodiscard]] const std::vector<std::uint32_t>& counted_routers() const { return routers_->counted_routers(); }

  // The deadlock report (deadlock_report.cpp): stuck routers, ports, colors, contents.
  [[nodiscard]] std::string deadlock_report(sim::Cycle now) const;

  // Failures while running (mesh_outages.cpp, docs/defects.md): links and PEs that stop working
  // at a cycle. Each takes effect in the fabric's first active cycle at or after it (an idle
  // fabric has nothing to lose): a static route over the failed part stops the run with a
  // sim::SimulationError naming the part and the routes, unless `reroute`, in which case the
  // routes are rebuilt around it (fabric/reroute.h) and the run goes on. Static routes only
  // (sim::InputError under XY routing). Call once, before the run.
  void set_outages(std::vector<Outage> outages, bool reroute);
  // What each outage did, in the order they took effect.
  [[nodiscard]] const std::vector<OutageRecord>& outage_records() const;

 private:
  friend class BlockRouters;
  friend class LaneSweep;

  // An endpoint's receive queue for one color, held as a router queue's is: the head wavelet
  // here, those behind it in a ring of `depth` flits in its granule's rx_rings_ (sinks pop every
  // cycle, so the ring is seldom used and a delivery writes this record only).
  // Zero bytes are a valid state but for `buf`, set when the endpoint's first wavelet arrives
  // (ep_built_).
  struct RxQueue {
    Flit front;                 // the head wavelet (when count > 0)
    std::uint32_t buf = kNone;  // offset of the ring in rx_rings_[pool], allocated when a second wavelet queues
    std::uint16_t head = 0;     // ring position of the wavelet behind the head
    std::uint16_t count = 0;    // wavelets visible
    std::uint16_t occ = 0;      // wavelets visible or on the way
    std::uint16_t pool = 0;     // the ring's granule (set with buf)
  };
  using Return = EndpointReturn;

  // Builds the sweep of the routers (routers_, inlet_) from the traffic to expect.
  void choose_sweep(const ExpectedTraffic& traffic);
  // The read phase of cycle t with sweep S's steps inline (RouterSweep::read runs it): credits
  // back to the endpoints, the receive-queue slots they freed (S::popped), the ramps' sends of
  // the last cycle (S::ramps_sent) and what the wheel holds for now: deliveries into receive
  // queues, wavelets into router inputs (S::push_visible). Band by band: as a job of the bands
  // when there are several, S::kReadsInBands and enough is due, else on the caller's thread.
  template <class S>
  void read_phase(S& sweep, std::uint64_t t);
  // Band b's part of it, counting into `n` and `delivered` (the band's stage in a job).
  template <class S>
  void read_band(S& sweep, std::uint32_t b, std::uint64_t t, bool ramps, RouterSweep::Counters& n,
                 std::uint64_t& delivered);
  // Fewer items due than this (returns and transits) are read on the caller's thread: a job's
  // fork and join cost about as much as reading that many.
  static constexpr std::size_t kReadJobFrom = 64;
  // Router r's output o sends f on color c to the endpoint beyond it in cycle `now` (into its
  // receive queue from now + ramp latency). Returns whether that queue is now full (no credit
  // for the color until the endpoint pops). `stage`: the sweeping band's (null: one band).
  bool to_endpoint(BandStage* stage, std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f, std::uint64_t now);
  // Router r freed a slot of input p (fed by an endpoint), color c, in cycle `now`: the
  // endpoint's credit, usable from the next cycle.
  void return_to_endpoint(BandStage* stage, std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint64_t now);
  // A wavelet due at a router input (target router * 5 + port) in cycle `at`: over a hop or a
  // ramp longer than one cycle, or from an edge channel.
  void to_wheel(std::uint32_t target, std::uint32_t c, Flit f, std::uint64_t at) {
    queue_transit(Transit{target, 0, static_cast<std::uint16_t>(c), f}, at);
    ++wheel_count_;
  }
  // The read phase of the band that holds endpoint ep (a router's index is its ramp's endpoint).
  [[nodiscard]] std::uint32_t band_of_ep(std::uint32_t ep) const { return bands_ ? ep_band_[ep] : 0u; }
  // Queues w for the read phase of cycle `at`, in its target's band (wheel_count_ is the
  // caller's to count).
  void queue_transit(const Transit& w, std::uint64_t at) {
    const std::uint32_t ep = w.to_endpoint ? w.target : w.target / kPorts;
    reads_[band_of_ep(ep)].wheel[at & wheel_mask_].push_back(w);
  }
  // Sets endpoint ep's receive queues' rings apart (before its first wavelet queues).
  void build_endpoint(std::uint32_t ep);
  // ep_band_ for the current bands.
  void place_endpoints();
  // The stage of endpoint ep's band when called from a part of a job (null otherwise: effects
  // go straight into the mesh).
  [[nodiscard]] BandStage* stage_of(std::uint32_t ep) {
    return bands_ && bands_->in_parts() ? &stages_[ep_band_[ep]] : nullptr;
  }
  // The endpoint beyond port o of router r (its ramp, or an edge channel), or kNone.
  [[nodiscard]] std::uint32_t endpoint_beyond(std::uint32_t r, Port o) const {
    return o == Port::Ramp ? r : channel_beyond(r, o);
  }
  [[nodiscard]] std::uint32_t channel_beyond(std::uint32_t r, Port o) const;
  [[nodiscard]] Port xy_output(std::uint32_t x, std::uint32_t y, std::uint32_t payload) const;
  // Whether write() has not yet run for the last cycle evaluate() saw (a component ticked
  // before the mesh stopped the cycle): its occupancy is then counted from the current state.
  [[nodiscard]] bool cycle_unfinished() const { return evaluated_ > processed_; }
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
  void count_ramp_send(BandStage* stage, std::uint64_t t, std::uint32_t c) {
    std::uint32_t* sent = stage ? stage->ramp_sent : ramp_sent_;
    std::uint32_t(*colors)[64] = stage ? stage->ramp_sent_colors : ramp_sent_colors_;
    ++sent[t & 1u];
    ++colors[t & 1u][c];
  }
  // send()'s checks: one send per endpoint and cycle (stamped), a head's destination in the mesh.
  void stamp_send(std::uint32_t ep, std::uint64_t now) {
    std::uint64_t& last = ep_last_send_[ep];
    if (last == now + 1) sent_twice(ep, now);
    last = now + 1;
  }
  void check_head(Flit f) const {
    if (f.head() && !geometry_.contains(destination_x(f.payload), destination_y(f.payload))) head_outside(f);
  }
  // A send without a credit: outside what the mesh holds its senders to, or just without one.
  [[noreturn]] void refused(std::uint32_t ep, std::uint32_t c) const;
  [[noreturn]] void outside_promise(std::uint32_t ep, std::uint32_t c) const;
  [[noreturn]] void no_credit(std::uint32_t ep, std::uint32_t c) const;
  [[noreturn]] void sent_twice(std::uint32_t ep, std::uint64_t now) const;
  [[noreturn]] void head_outside(Flit f) const;
  [[noreturn]] void popped_twice(std::uint32_t ep, std::uint64_t now) const;
  [[noreturn]] void unconnected(std::uint32_t r, std::uint32_t o, std::uint32_t c) const;
  [[noreturn]] void empty_receive_queue(const char* what, std::uint32_t c) const;
  [[noreturn]] void route_error(std::uint32_t r, std::uint32_t p, std::uint32_t c, Flit f) const;
  void check_deadlock(sim::Cycle now);
  // Counters of router r's port p up to now (the sweep's, and the cycle evaluated but not yet
  // written); wavelets in input p's queues; those queued in the cycle evaluated but not yet
  // written (cycle_unfinished()).
  [[nodiscard]] std::uint64_t port_occupancy(std::uint32_t r, std::uint32_t p) const;
  [[nodiscard]] std::uint32_t port_queued(std::uint32_t r, std::uint32_t p) const;
  [[nodiscard]] std::uint64_t port_unfinished(std::uint32_t r, std::uint32_t p) const;
  [[nodiscard]] std::string describe_queue(std::uint32_t r, std::uint32_t p, std::uint32_t c) const;

  friend class Endpoint;

  struct Outages;  // the schedule and what it did (mesh_outages.cpp)
  void apply_outages(std::uint64_t t);
  void apply_outage(const Outage& o, std::uint64_t t);
  [[nodiscard]] std::string outage_part(const Outage& o) const;
  [[nodiscard]] bool router_holds_wavelets(std::uint32_t r) const;
  [[nodiscard]] std::string describe_broken(const std::vector<BrokenRoute>& broken) const;
  void add_outage_stats(sim::stats::Group& g);

  FabricConfig config_;
  MeshGeometry geometry_;
  MeshOptions options_;
  sim::Engine* engine_;
  std::uint32_t colors_, depth_, hop_, ramp_;
  StatsDetail detail_;
  bool link_stats_;
  bool per_router_;  // per router and port occupancy integrals
  bool idle_skip_;
  bool xy_;

  // The bands (null: one) and, with more than one, what each stages for the join.
  sim::parallel::RowBands* bands_ = nullptr;
  std::vector<BandStage> stages_;
  std::vector<std::uint16_t> ep_band_;  // endpoint -> band of its router's row
  // The routers: the sweep chosen at construction from options_.traffic, and its ramp inlet.
  std::unique_ptr<RouterSweep> routers_;
  RampInlet inlet_;
  RouterSweep::Counters* counts_;  // routers_->counters()
  // What the sweep holds senders to (ExpectedTraffic::single_wavelet_colors; 0: nothing), and
  // the Flit::info bits every wavelet sent must have (head and tail when it holds them to
  // single-wavelet packets).
  std::uint32_t held_colors_ = 0;
  std::uint32_t whole_packets_ = 0;

  // Per endpoint.
  std::vector<std::unique_ptr<Endpoint>> ports_;  // RampPort adapters, created on request
  std::vector<std::uint32_t> ep_router_;
  std::vector<std::uint8_t> ep_port_;
  std::vector<std::uint8_t> ep_built_;  // build_endpoint() done
  // What a core checks before it reads a queue: bit c of `visible`, a wavelet of color c is
  // visible; of `control`, it is a control wavelet (kept so that the check reads no queue).
  struct Fronts {
    std::uint64_t visible = 0, control = 0;
  };
  std::vector<Fronts> ep_fronts_;
  LazyArray<RxQueue> rx_;  // [endpoint][color]
  // [endpoint][color]: the endpoint's sends into its router's input queue that took a credit
  // (visible, on the way, or freed but not yet returned): it may send while fewer than the depth.
  LazyArray<std::uint16_t> ep_spent_;
  LazyArray<std::uint64_t> ep_last_send_, ep_last_pop_;  // [endpoint]: cycle + 1 (0 never)
  // The receive queues' rings by granule of kBandRows rows (an edge channel's: its router's row),
  // so that a band allocates them only in its own granules.
  std::vector<std::vector<Flit>> rx_rings_;

  // What the read phase of one band's rows takes in (of all rows, without bands): wavelets due at
  // their routers' inputs and endpoints' receive queues, and credits freed this cycle, usable
  // from the next. A band's part of a job queues here only for its own rows (its routers'
  // deliveries, its endpoints' sends and pops); the caller's thread for any.
  struct alignas(64) BandReads {
    std::vector<std::vector<Transit>> wheel;  // [cycle & wheel_mask_]
    std::vector<Return> input_returns, ep_returns;
  };
  std::vector<BandReads> reads_;  // [band]
  std::uint64_t wheel_mask_ = 0;
  // Over a 1-cycle ramp an endpoint's wavelet goes into its router's arrival register (port
  // Ramp) when sent, not through the wheel, and counts as queued from the next cycle (read()).
  // [cycle parity]: those sent in a cycle, in total and per color.
  std::uint32_t ramp_sent_[2] = {};
  std::uint32_t ramp_sent_colors_[2][64] = {};
  std::uint64_t wheel_count_ = 0;

  hw::RampListener* ramp_listener_ = nullptr;
  // ramp_listener_ splits arrivals and credits: a band makes the PE's part of those of its
  // ramps itself (only while no endpoint listener is set, which hears every arrival instead).
  bool split_arrivals_ = false;
  [[nodiscard]] bool splits_for(std::uint32_t ep) const {
    return split_arrivals_ && !endpoint_listener_ && ep < geometry_.routers();
  }
  EdgeListener* edge_listener_ = nullptr;
  EndpointListener* endpoint_listener_ = nullptr;
  sim::Cycle last_wake_request_ = sim::Cycle::never();

  std::uint64_t injected_ = 0, delivered_ = 0;
  std::uint64_t read_jobs_ = 0;
  std::uint64_t evaluated_ = 0, processed_ = 0;  // last cycle + 1 of evaluate() and write()
  sim::Cycle last_progress_{0};
  // Failures while running (none: null, and the next one never).
  std::unique_ptr<Outages> outages_;
  std::uint64_t next_outage_ = ~std::uint64_t{0};
};

template <class S>
void Mesh::read_phase(S& sweep, std::uint64_t t) {
  RouterSweep::Counters& n = *counts_;
  const std::uint32_t parity = (t + 1) & 1u;
  const bool ramps = ramp_sent_[parity] != 0;
  if (ramps) {
    last_progress_ = sim::Cycle(t);
    n.dir_queued[index(Port::Ramp)] += ramp_sent_[parity];
    ramp_sent_[parity] = 0;
    std::uint32_t* const colors = ramp_sent_colors_[parity];
    for (std::uint32_t c = 0; c < colors_; ++c) {
      n.color_queued[c] += colors[c];
      colors[c] = 0;
    }
  }
  const std::uint64_t slot = t & wheel_mask_;
  std::size_t due = 0, returns = 0;
  for (const BandReads& r : reads_) {
    due += r.wheel[slot].size();
    returns += r.input_returns.size() + r.ep_returns.size();
  }
  if (due) {
    last_progress_ = sim::Cycle(t);
    wheel_count_ -= due;
  }
  if (!due && !returns && !ramps) return;
  if (S::kReadsInBands && bands_ && due + returns >= kReadJobFrom) {
    bands_->run([this, &sweep, t, ramps](std::size_t b) {
      BandStage& s = stages_[b];
      read_band(sweep, static_cast<std::uint32_t>(b), t, ramps, s.counts, s.delivered);
    });
    ++read_jobs_;
  } else {
    for (std::uint32_t b = 0; b < reads_.size(); ++b) read_band(sweep, b, t, ramps, n, delivered_);
  }
}

template <class S>
void Mesh::read_band(S& sweep, std::uint32_t b, std::uint64_t t, bool ramps, RouterSweep::Counters& n,
                     std::uint64_t& delivered) {
  BandReads& reads = reads_[b];
  for (const Return& ret : reads.input_returns) --ep_spent_[std::size_t{ret.target} * colors_ + ret.color];
  reads.input_returns.clear();
  for (const Return& ret : reads.ep_returns) {
    --rx_[std::size_t{ret.target} * colors_ + ret.color].occ;
    sweep.popped(b, ret.target, ret.color);
  }
  reads.ep_returns.clear();
  if (ramps) sweep.ramps_sent(b, (t + 1) & 1u);
  auto& bucket = reads.wheel[t & wheel_mask_];
  for (const Transit& w : bucket) {
    if (w.to_endpoint) {
      const std::uint32_t ep = w.target;
      if (!ep_built_[ep]) build_endpoint(ep);
      RxQueue& q = rx_[std::size_t{ep} * colors_ + w.color];
      if (q.count && q.buf == kNone)
        q.pool = static_cast<std::uint16_t>(ep_router_[ep] / geometry_.width() / kBandRows);  // the ring's
      ring_queue::enqueue(q, w.flit, rx_rings_[q.pool], depth_);
      if (q.count == 1) {
        ep_fronts_[ep].visible |= std::uint64_t{1} << w.color;
        if (w.flit.control()) ep_fronts_[ep].control |= std::uint64_t{1} << w.color;
      }
      ++delivered;
    } else {
      sweep.push_visible(w.target / kPorts, w.target % kPorts, w.color, w.flit, t, n);
    }
  }
  bucket.clear();
}

inline bool Mesh::to_endpoint(BandStage* stage, std::uint32_t r, std::uint32_t o, std::uint32_t c, Flit f,
                              std::uint64_t now) {
  const std::uint32_t ep = endpoint_beyond(r, port_at(o));
  if (ep == kNone) unconnected(r, o, c);
  RxQueue& rq = rx_[std::size_t{ep} * colors_ + c];
  const bool full = ++rq.occ >= depth_;
  const Transit w{ep, 1, static_cast<std::uint16_t>(c), f};
  if (stage) {
    reads_[ep_band_[ep]].wheel[(now + ramp_) & wheel_mask_].push_back(w);  // the band's own
    ++stage->wheel_added;
    if (!splits_for(ep))
      stage->notices.push_back(BandStage::Notice{ep, c, now + ramp_, BandStage::Kind::Arrival});
    else if (ramp_listener_->arrived_in_band(geometry_.coord(ep), hw::Color(static_cast<std::uint8_t>(c)),
                                             sim::Cycle(now + ramp_)))
      stage->notices.push_back(BandStage::Notice{ep, c, now + ramp_, BandStage::Kind::Wake});
    return full;
  }
  reads_[band_of_ep(ep)].wheel[(now + ramp_) & wheel_mask_].push_back(w);
  ++wheel_count_;
  notify_arrival(ep, c, sim::Cycle(now + ramp_));
  return full;
}

inline void Mesh::return_to_endpoint(BandStage* stage, std::uint32_t r, std::uint32_t p, std::uint32_t c,
                                     std::uint64_t now) {
  const std::uint32_t ep = endpoint_beyond(r, port_at(p));
  reads_[band_of_ep(ep)].input_returns.push_back(Return{ep, c});  // read() returns it next cycle
  if (stage) {
    if (!splits_for(ep))
      stage->notices.push_back(BandStage::Notice{ep, c, now + 1, BandStage::Kind::Credit});
    else if (ramp_listener_->credited_in_band(geometry_.coord(ep), hw::Color(static_cast<std::uint8_t>(c)),
                                              sim::Cycle(now + 1)))
      stage->notices.push_back(BandStage::Notice{ep, c, now + 1, BandStage::Kind::Wake});
    return;
  }
  notify_credit(ep, c, sim::Cycle(now + 1));
}

}  // namespace wafersim::fabric
