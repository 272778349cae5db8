#pragma once
// The core's side of its router's ramp port: how a PE core sends wavelets into the fabric
// and receives the wavelets routed to it.

#include <cstdint>

#include "hw/types.h"
#include "sim/types.h"

namespace wafersim::hw {

// Contract (implemented by the fabric, used by the core; both ticked by the same engine):
// - Receive side: the router delivers wavelets routed to the ramp into a per-color queue
//   (fabric.queue_depth deep) for the core. A wavelet the router sends down the ramp in
//   cycle t is visible to the core (has()/front()) from cycle t + ramp_latency (1 by
//   default). The core pops at most one wavelet per cycle in total (the ramp carries one
//   wavelet per cycle into the core); a pop frees a credit that the router sees from the
//   next cycle.
// - Send side: the core sends at most one wavelet per cycle, only when can_send(color) is
//   true (a credit for that color's ramp input queue at the router); the router sees it
//   from cycle t + ramp_latency. A slot the router frees in cycle t is a credit the core
//   sees from cycle t + 1. Sending without a credit, or twice in a cycle, is a logic error
//   (std::logic_error), never a silent drop.
// - Calls happen only from the core's evaluate() or write() phase, so the order in which
//   the engine ticks routers and cores cannot change results.
// - The fabric tells the listener given to Mesh::set_arrival_listener, from its write
//   phase, when a wavelet will become visible (`at`) and when a credit will become usable
//   (`at`), so a sleeping core can be woken for exactly that cycle.
class RampPort {
 public:
  virtual ~RampPort() = default;

  [[nodiscard]] virtual bool has(Color c) const = 0;
  // Colors with a visible wavelet (bit c), and those whose visible front wavelet is a control
  // wavelet (a subset): what has() and front().control say, for every color at once.
  [[nodiscard]] virtual std::uint64_t visible() const = 0;
  [[nodiscard]] virtual std::uint64_t control_fronts() const = 0;
  [[nodiscard]] virtual Wavelet front(Color c) const = 0;
  virtual void pop(Color c, sim::Cycle now) = 0;

  [[nodiscard]] virtual bool can_send(Color c) const = 0;
  virtual void send(const Wavelet& w, sim::Cycle now) = 0;
};

// Called by the fabric when a wavelet is on its way into a PE's ramp queue (the PE may be
// asleep): it is visible from cycle `at`, later than the current cycle.
class RampListener {
 public:
  virtual ~RampListener() = default;
  virtual void on_arrival(PeCoord pe, Color c, sim::Cycle at) = 0;
  // A credit comes back on the send side, usable from cycle `at` (the PE may be stalled
  // on a full queue).
  virtual void on_credit(PeCoord pe, Color c, sim::Cycle at) = 0;

  // For a fabric swept in bands of rows: on_arrival and on_credit in two parts, when
  // splits_arrivals(). arrived_in_band() and credited_in_band() touch only the PE's own state
  // and what the listener keeps for the PE's band of rows, and are called by the thread
  // sweeping the PE's row, during its band's part; when they
  // return true, wake_after_band() follows after the job, in band order, serially. Together
  // they do what on_arrival() and on_credit() do; the defaults do all of it in the first part.
  [[nodiscard]] virtual bool splits_arrivals() const { return false; }
  virtual bool arrived_in_band(PeCoord pe, Color c, sim::Cycle at) {
    on_arrival(pe, c, at);
    return false;
  }
  virtual bool credited_in_band(PeCoord pe, Color c, sim::Cycle at) {
    on_credit(pe, c, at);
    return false;
  }
  virtual void wake_after_band(PeCoord /*pe*/, sim::Cycle /*at*/) {}
};

}  // namespace wafersim::hw
