#pragma once
// Synthetic traffic on the ramps of a mesh: a source and a sink on every PE's ramp, in the
// way NoC studies characterise a network (Bernoulli injection into unbounded source
// queues, warm-up, measurement and drain phases).

#include <cstdint>
#include <functional>
#include <vector>

#include "fabric/mesh.h"
#include "fabric/traffic/bernoulli.h"
#include "fabric/traffic/measurement.h"
#include "fabric/traffic/pattern.h"
#include "fabric/traffic/rng.h"
#include "fabric/traffic/traffic_options.h"
#include "sim/engine/clocked.h"
#include "sim/stats/stats.h"

namespace wafersim::sim {
class Engine;
}

namespace wafersim::fabric::traffic {

// Two modes, after the mesh's routing:
// - XY (packet switched): packets of `packet_size` wavelets to destinations from the
//   pattern; a packet takes the first of colors 0 .. colors-1 (round robin from the last
//   one used) whose ramp queue has a credit when its head is sent, and keeps it; latency
//   runs from the packet's creation to the ejection of its tail. Injection continues
//   through the drain phase; the run ends when every packet created in the measurement
//   window has been delivered (or the drain limit is reached).
// - Static color routes: every PE whose route accepts a color from its ramp sends single
//   wavelets on those colors (round robin among those with a credit); each copy a
//   multicast delivers counts as ejected, with its own latency. Injection stops at the end
//   of the window; the run ends when the fabric is empty (or the drain limit is reached).
// Sinks pop one wavelet per cycle per ramp (round robin over colors), as a core would;
// with static routes, edge channels a route ends in are drained the same way.
//
// Contract: uses the mesh only from evaluate(); with an engine, ends the simulation
// (sc_stop) in the cycle it finishes; without one, the owner ticks it after the mesh in
// every phase and stops when finished() is true.
class TrafficGenerator final : public sim::Clocked, public EndpointListener {
 public:
  TrafficGenerator(Mesh& mesh, TrafficOptions options, sim::Engine* engine);

  // What a mesh that is to carry this traffic should be told to expect (MeshOptions::traffic):
  // under XY routing with single-wavelet packets, the wavelet moves per router and cycle the
  // offered load asks for (grants over every output, the ejection included, from the
  // pattern's mean distance) and the promise of single-wavelet packets on the colors used;
  // nothing otherwise. Scripted packets of several wavelets (add_packet) break that promise.
  [[nodiscard]] static ExpectedTraffic expected_traffic(const TrafficOptions& options, const MeshGeometry& geometry,
                                                        Routing routing);

  // One packet of `size` wavelets from `src` to `dst` created at cycle `at` (XY routing;
  // measured whatever the window). For tests and examples, with or without random traffic.
  // Several wavelets on a mesh that holds its senders to single-wavelet packets (Mesh::lanes)
  // are a std::logic_error.
  void add_packet(hw::PeCoord src, hw::PeCoord dst, std::uint32_t size, sim::Cycle at);

  struct Delivery {
    std::uint32_t src = 0, dst = 0;  // routers (dst: the mesh endpoint, an edge channel's above the routers)
    std::uint32_t color = 0;
    std::uint32_t size = 1;
    std::uint64_t seq = 0;  // per source, in creation order (XY routing)
    std::uint64_t created = 0, ejected = 0;
  };
  // Called for every packet delivered (XY) or wavelet copy delivered (static routes). Set it
  // before the first packet is created (std::logic_error after).
  void set_observer(std::function<void(const Delivery&)> observer);
  // Called with (cycle, source router, destination router, size) for every packet created,
  // random or scripted, in creation order (XY routing; `wafersim traffic --capture`).
  using CreationObserver = std::function<void(std::uint64_t, std::uint32_t, std::uint32_t, std::uint32_t)>;
  void set_creation_observer(CreationObserver observer) { creation_observer_ = std::move(observer); }

  [[nodiscard]] bool finished() const { return finished_; }
  [[nodiscard]] TrafficResult result() const;
  [[nodiscard]] const Pattern& pattern() const { return pattern_; }
  // The load counts and the latency histogram of the measured packets.
  [[nodiscard]] const Measurement& measurement() const { return measurement_; }
  [[nodiscard]] std::uint32_t sources() const { return sources_count_; }
  // Packets (XY) or wavelets (static) created and delivered so far, and still queued at sources.
  [[nodiscard]] std::uint64_t generated_wavelets() const { return generated_wavelets_; }
  [[nodiscard]] std::uint64_t ejected_wavelets() const { return ejected_wavelets_; }
  [[nodiscard]] std::uint64_t queued_wavelets() const { return queued_wavelets_; }
  void add_stats(sim::stats::Group& g);

  // sim::Clocked
  void evaluate(sim::Cycle now) override;
  sim::Cycle write(sim::Cycle now) override;
  [[nodiscard]] std::string describe() const override;

  // EndpointListener: the ramps' sinks, and the edge channels' (static routes may end in one).
  void on_arrival(std::uint32_t ep, std::uint32_t c, sim::Cycle at) override;

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  struct Packet {
    std::uint64_t created = 0;
    std::uint64_t seq = 0;
    std::uint32_t src = 0, dst = 0;
    std::uint32_t next = kNone;  // source FIFO link
    std::uint32_t size = 1, sent = 0, received = 0;
    std::uint8_t color = 0;
    bool measured = false;
  };
  struct Source {
    std::uint64_t next_packet = BernoulliProcess::kNever;  // cycle of its next random packet
    SplitMix64 rng;
    // Its queue: a packet created into an empty queue without a record (see by_cycle) is held
    // as its wavelet in `first`; the others, behind it, in a FIFO of records not yet fully sent.
    Flit first;
    std::uint32_t head = kNone, tail = kNone;
    std::uint64_t colors = 0;  // colors it may send on
    std::uint64_t seq = 0;
    std::uint8_t rr = 0;
    bool has_first = false;
    bool active = false;  // its queue is not empty (it is in active_sources_)
  };
  struct Scripted {
    std::uint64_t at;
    std::uint32_t src, dst, size;
  };

  // XY: whether a packet of `size` wavelets travels without a record from its injection on:
  // one of a single wavelet, unless an observer wants each delivery's source and sequence
  // number. Its tag then holds its creation cycle (modulo 2^28) and whether it is measured
  // (cycle_tag), so the sink reads no record (latencies under 2^28 cycles). Static routes'
  // wavelets always carry such a tag.
  [[nodiscard]] bool carries_cycle(std::uint32_t size) const { return size == 1 && !observer_; }
  // Whether a packet of `size` wavelets needs no record once sent: XY's that carry their cycle,
  // and every static route's.
  [[nodiscard]] bool by_cycle(std::uint32_t size) const { return !xy_ || carries_cycle(size); }
  static constexpr std::uint32_t kMeasuredTag = 1u << (Flit::kTagBits - 1);
  static constexpr std::uint32_t kCycleTagMask = kMeasuredTag - 1;
  static std::uint32_t cycle_tag(std::uint64_t created, bool measured) {
    return (static_cast<std::uint32_t>(created) & kCycleTagMask) | (measured ? kMeasuredTag : 0u);
  }
  // Cycles from the creation a cycle tag holds to `now`.
  static std::uint64_t tag_latency(Flit f, std::uint64_t now) {
    return (static_cast<std::uint32_t>(now) - f.tag()) & kCycleTagMask;
  }
  // Puts source s's next random packet at cycle `at` in the calendar (seen from `now`).
  void schedule(std::uint32_t s, std::uint64_t at, std::uint64_t now);
  // Queues a new packet at source src.
  void create(std::uint32_t src, std::uint32_t dst, std::uint32_t size, std::uint64_t now, bool measured);
  // The wavelet of a single-wavelet packet without a record, from src to dst.
  [[nodiscard]] Flit tagged_wavelet(std::uint32_t src, std::uint32_t dst, std::uint64_t created, bool measured) const;
  std::uint32_t new_packet(std::uint32_t src, std::uint32_t dst, std::uint32_t size, std::uint64_t now, bool measured);
  void enqueue(std::uint32_t src, std::uint32_t id);
  // The first of source s's colors, round robin from the one after the last used, with a credit
  // at its ramp (kNone: none has).
  [[nodiscard]] std::uint32_t open_color(std::uint32_t src, const Source& s) const;
  void inject(std::uint32_t src, sim::Cycle now);
  void eject(std::uint32_t sink, sim::Cycle now);
  // eject()'s for a static route's wavelet `f` of color c popped in cycle t, and for a wavelet
  // of a packet with a record.
  void receive_static(std::uint32_t sink, std::uint32_t c, Flit f, std::uint64_t t);
  void receive_record(std::uint32_t sink, std::uint32_t c, Flit f, std::uint64_t t);
  [[noreturn]] void inside_packet(std::uint32_t sink, std::uint32_t c) const;
  [[noreturn]] void misdelivered(std::uint32_t to, std::uint32_t sink, std::uint32_t c) const;
  [[noreturn]] void out_of_order(std::uint32_t id, std::uint32_t sink, std::uint32_t c) const;
  void finish(sim::Cycle now);
  void wake(sim::Cycle at);

  Mesh& mesh_;
  TrafficOptions options_;
  sim::Engine* engine_;
  Pattern pattern_;
  BernoulliProcess process_;
  Measurement measurement_;
  bool xy_;
  std::uint32_t routers_;
  std::uint32_t sources_count_ = 0;
  std::uint64_t window_end_, drain_end_;

  std::vector<Source> sources_;
  // Sources by the cycle of their next random packet, so a cycle costs only the packets it
  // creates: a wheel for the next kCalendar cycles, a list for later ones.
  static constexpr std::uint64_t kCalendar = 1024;
  std::vector<std::vector<std::uint32_t>> calendar_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> far_;
  std::uint64_t far_min_ = BernoulliProcess::kNever;
  std::uint64_t calendar_count_ = 0;
  // The lists below are sized for their longest and hold their first *_count_ entries (appending
  // never reallocates: code that might would make the hot paths that append spill registers).
  // Sources with packets queued (each listed once).
  std::vector<std::uint32_t> active_sources_;
  std::uint32_t active_count_ = 0;
  std::vector<Packet> packets_;
  // Ids of delivered packets, reused last-freed first. (Not linked through the packets: taking
  // one would read a record the fabric's sweep has pushed out of the caches.)
  std::vector<std::uint32_t> free_packets_;
  std::uint32_t free_count_ = 0;
  std::vector<Scripted> scripted_;  // sorted by cycle when the run starts
  std::size_t next_scripted_ = 0;
  bool scripted_sorted_ = true;

  std::vector<std::uint32_t> sinks_;  // endpoints with wavelets visible or on the way (each listed once)
  std::uint32_t sink_count_ = 0;
  std::vector<std::uint32_t> sink_pending_;  // per endpoint: wavelets on the way or visible
  std::vector<std::uint8_t> sink_rr_;
  std::vector<std::uint32_t> sink_packet_;  // XY: [router * colors + color] packet in progress

  std::function<void(const Delivery&)> observer_;
  CreationObserver creation_observer_;
  std::uint64_t generated_packets_ = 0, generated_wavelets_ = 0;
  std::uint64_t delivered_packets_ = 0, ejected_wavelets_ = 0;
  std::uint64_t queued_wavelets_ = 0;
  std::uint64_t measured_outstanding_ = 0;  // XY: measured packets not delivered
  std::uint64_t measured_created_ = 0;
  bool finished_ = false;
  bool multi_ = false;  // packets of several wavelets may be created (their order at the sinks is checked)
  bool drained_ = false;
  std::uint64_t end_cycle_ = 0;
  sim::Cycle last_wake_ = sim::Cycle::never();
};

}  // namespace wafersim::fabric::traffic
