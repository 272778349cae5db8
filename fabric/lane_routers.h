#pragma once
// The routers of a mesh that carries only single-wavelet XY packets on a few colors over
// 1-cycle hops and ramps, swept eight at a time in vector lanes (docs/performance.md,
// "Routers in vector lanes"): the same model as BlockRouters::process, state kept as one array per field and
// router, so that a neighbour's arrival register or returned credit is the same array shifted
// by one router or one row.

#include <cstdint>
#include <vector>

#include "fabric/flit.h"
#include "fabric/port.h"

namespace wafersim::fabric {

class LaneRouters {
 public:
  static constexpr std::uint32_t kColors = 4;      // colors a lane router queues (0 .. 3)
  static constexpr std::uint32_t kMaxDepth = 127;  // credits are counted in bytes
  // Meshes up to 64 x 64 routers: a sweep streams about 500 bytes of state a router (2 KB are
  // allocated with the rings behind the heads), and past the caches that costs more than the
  // lanes save (docs/performance.md, "Routers in vector lanes").
  static constexpr std::uint32_t kMaxRouters = 4096;
  // Rows of at most 240 routers: the arrays are padded by a row and a group on either side.
  static constexpr std::uint32_t kMaxWidth = 240;
  static constexpr std::uint32_t kQueues = kPorts * kColors;  // per router, queue q = port * kColors + color
  // Whether this build has them: with AVX2 (WAFERSIM_ARCH x86-64-v3 or later). Without, the
  // same code in SSE pairs runs at a fraction of the routers' own sweep, so it is not offered.
#if defined(__AVX2__)
  static constexpr bool kAvailable = true;
#else
  static constexpr bool kAvailable = false;
#endif

  // What the sweep reports to the mesh, per event (rare ones: the common path stays in lanes).
  class Ends {
   public:
    virtual ~Ends() = default;
    // Router r granted its ramp output a wavelet of color c in cycle t.
    virtual void eject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) = 0;
    // Router r freed a slot of its ramp input, color c, in cycle t (the endpoint's credit).
    virtual void ramp_freed(std::uint32_t r, std::uint32_t c, std::uint64_t t) = 0;
  };
  // Counters the sweep adds to (the mesh's own).
  struct Totals {
    std::uint64_t* forwarded;
    std::uint64_t* stalled;
    std::uint64_t* color_forwarded;  // [color]
    std::uint64_t* color_stalled;    // [color]
    std::uint64_t* dir_queued;       // [input direction]: wavelets queued or arriving
  };

  LaneRouters(std::uint32_t width, std::uint32_t height, std::uint32_t depth);

  // The wavelet f router r's ramp sent on color c in cycle t (taken in in cycle t + 1; the
  // mesh keeps the ramp input's credits). The endpoint took a wavelet of color c that router r
  // ejected (a credit for its ramp output, from the next sweep on).
  void inject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t);
  void ramp_output_freed(std::uint32_t r, std::uint32_t c) { base(kCredits + index(Port::Ramp))[r] += 1u << (8 * c); }

  // One cycle of every router with work (of every router without `skip_idle`): takes in what
  // arrived, counts occupancy, grants each output round robin over (input, color), moves the
  // granted wavelets. Returns the grants.
  std::uint64_t sweep(std::uint64_t t, bool skip_idle, Ends& ends, const Totals& totals);
  // The same in parts: begin_sweep() once, then sweep_groups() over the groups of eight routers
  // [first, end) (the parts of a job may sweep disjoint ranges at once: a group writes only its
  // own routers' state and its neighbours' registers of the other parity), then end_sweep()
  // with the parts' results in any order.
  struct Swept {
    std::uint64_t granted = 0, visits = 0;
    bool busy = false;
  };
  void begin_sweep();
  Swept sweep_groups(std::uint64_t t, std::uint32_t first, std::uint32_t end, bool skip_idle, Ends& ends,
                     const Totals& totals);
  void end_sweep(bool busy, std::uint64_t visits) {
    busy_ = busy;
    visits_ += visits;
  }
  [[nodiscard]] std::uint32_t groups() const { return groups_; }
  // Whether any router holds or is sent a wavelet or owes a credit (the mesh stays awake).
  [[nodiscard]] bool busy() const { return busy_; }
  [[nodiscard]] std::uint64_t group_visits() const { return visits_; }

  // Counters per router r and port p: wavelets sent through output p, its output-color-cycles
  // without credit, the occupancy integral of input p (through the last cycle swept).
  [[nodiscard]] std::uint64_t forwarded(std::uint32_t r, std::uint32_t p) const { return counter(kForwarded + p, r); }
  [[nodiscard]] std::uint64_t stalled(std::uint32_t r, std::uint32_t p) const { return counter(kStalled + p, r); }
  [[nodiscard]] std::uint64_t occupancy(std::uint32_t r, std::uint32_t p) const { return counter(kOccupancy + p, r); }
  // Wavelets in input p's queues (of color c), and the i-th of queue (p, c) (0: the head).
  [[nodiscard]] std::uint32_t queued(std::uint32_t r, std::uint32_t p) const {
    std::uint32_t n = 0;
    for (std::uint32_t c = 0; c < kColors; ++c) n += queued(r, p, c);
    return n;
  }
  [[nodiscard]] std::uint32_t queued(std::uint32_t r, std::uint32_t p, std::uint32_t c) const {
    return at(kCount + p, r) >> (8 * c) & 0xffu;
  }
  [[nodiscard]] Flit queued_flit(std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint32_t i) const;
  // Credits of color c left on output o of router r (a link's returned ones from the next cycle;
  // the ramp's: what its endpoint can still take).
  [[nodiscard]] std::uint32_t credits(std::uint32_t r, std::uint32_t o, std::uint32_t c) const {
    return at(kCredits + o, r) >> (8 * c) & 0xffu;
  }
  // Whether a wavelet for input p of router r is in its arrival register of `parity`.
  [[nodiscard]] bool arriving(std::uint32_t r, std::uint32_t p, std::uint32_t parity) const {
    return at(arrival(parity, p, kValid), r) != 0;
  }
  // Whether router r was ever sent a wavelet (by its ramp or a neighbour) that it took in.
  [[nodiscard]] bool took_in(std::uint32_t r) const;
  [[nodiscard]] bool injected_at(std::uint32_t r) const { return injected_[r] != 0; }
  [[nodiscard]] std::uint64_t allocated_bytes() const;

 private:
  // The per-router arrays, by field (each kStride words: padding, then routers, then padding,
  // so that stores shifted by a row stay inside). The stride is fixed, so that a field is a
  // constant offset from a group's first router; 16 words more than the padded routers, so that
  // the fields of a group fall into different cache sets.
  static constexpr std::uint32_t kPad = kMaxWidth + 16;
  static constexpr std::size_t kStride = kMaxRouters + 2 * kPad + 16;
  enum Field : std::uint32_t {
    kX = 0,
    kY,
    kArrivals,                            // [parity][input][valid, color, payload, info]
    kCount = kArrivals + 2 * kPorts * 4,  // [input]: wavelets queued, a byte per color
    kRequests = kCount + kPorts,          // [output]: bit q, the head of queue q requests it
    kAfter = kRequests + kPorts,          // [output]: bits of the queues after the one granted last
    kCredits = kAfter + kPorts,           // [output]: credits, a byte per color
    kReturned = kCredits + kPorts,        // [parity][output 0 .. 3]: credits returned in that cycle
    kForwarded = kReturned + 2 * 4,       // [output]: counted since the last fold (see fold())
    kStalled = kForwarded + kPorts,       // [output]: likewise
    kOccupancy = kStalled + kPorts,       // [input]: likewise
    kFields = kOccupancy + kPorts,
  };
  static constexpr std::uint32_t kCounters = 3 * kPorts;  // kForwarded .. kOccupancy
  // Counters run in 32-bit lanes and are added to 64-bit ones every 2^16 sweeps (a lane adds at
  // most 4 x 127 a sweep to an occupancy counter).
  static constexpr std::uint64_t kFoldEvery = std::uint64_t{1} << 16;
  void fold();
  [[nodiscard]] std::uint64_t counter(std::uint32_t field, std::uint32_t r) const {
    return wide_[std::size_t{field - kForwarded} * routers_ + r] + at(field, r);
  }
  enum ArrivalWord : std::uint32_t { kValid = 0, kColor, kPayload, kInfo };
  static constexpr std::uint32_t arrival(std::uint32_t parity, std::uint32_t p, ArrivalWord w) {
    return kArrivals + (parity * kPorts + p) * 4 + w;
  }
  [[nodiscard]] std::uint32_t at(std::uint32_t field, std::uint32_t r) const { return base(field)[r]; }
  [[nodiscard]] const std::uint32_t* base(std::uint32_t field) const { return words_.data() + field * kStride + kPad; }
  std::uint32_t* base(std::uint32_t field) { return words_.data() + field * kStride + kPad; }
  struct Acc;
  void visit(std::uint32_t r0, std::uint64_t t, Ends& ends, const Totals& totals, Acc& acc);
  [[nodiscard]] std::uint64_t head(std::uint32_t q, std::uint32_t r) const { return heads_[head_index(q, r)]; }
  // Heads are 64-bit (payload | info << 32), eight routers in the order 0 1 4 5 2 3 6 7 (as
  // two interleaving unpacks of payloads and infos leave them).
  [[nodiscard]] std::size_t head_index(std::uint32_t q, std::uint32_t r) const {
    const std::uint32_t l = r & 7u;
    return q * kStride + kPad + ((r & ~7u) | (l & 1u) | (l >> 1 & 1u) << 2 | (l >> 2 & 1u) << 1);
  }

  std::uint32_t width_, routers_, groups_, depth_;
  std::vector<std::uint32_t> words_;     // kFields arrays
  std::vector<std::uint64_t> heads_;     // [queue] arrays: the head wavelet
  std::vector<std::uint8_t> injected_;   // [router]: its ramp sent a wavelet
  std::vector<std::uint8_t> ring_head_;  // [queue * routers + router]
  std::vector<Flit> ring_;               // [(queue * routers + router) * depth]: wavelets behind the head
  std::vector<std::uint64_t> wide_;      // [counter field - kForwarded][router]: folded counts
  std::uint64_t sweeps_since_fold_ = 0;
  bool busy_ = false;
  std::uint64_t visits_ = 0;
};

}  // namespace wafersim::fabric
