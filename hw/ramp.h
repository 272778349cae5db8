#pragma once
// The core's side of its router's ramp port: how a PE core sends wavelets into the fabric
// and receives the wavelets routed to it.

#include <cstdint>

#include "hw/types.h"
#include "sim/types.h"

namespace wafersim::hw {

// Contract (implemented by the fabric, used by the core; both ticked by the same engine):
// - Receive side: the router delivers wavelets routed to the ramp into a per-color queue
//   for the core. A wavelet pushed during cycle t's write phase is visible to the core from
//   cycle t+1 (has()/front()). The core pops at most one wavelet per cycle in total (the
//   ramp carries one wavelet per cycle into the core); a pop frees a credit that the router
//   sees from the next cycle.
// - Send side: the core sends at most one wavelet per cycle, only when can_send(color) is
//   true (a credit for that color's ramp input queue at the router); the router sees it
//   from the next cycle. Sending without a credit is a logic error, never a silent drop.
// - Calls happen only from the core's evaluate() or write() phase, so the order in which
//   the engine ticks routers and cores cannot change results.
// - When a wavelet arrives for a sleeping core, the fabric calls the listener given to
//   set_arrival_listener (the core array wakes that PE).
class RampPort {
 public:
  virtual ~RampPort() = default;

  [[nodiscard]] virtual bool has(Color c) const = 0;
  [[nodiscard]] virtual Wavelet front(Color c) const = 0;
  virtual void pop(Color c, sim::Cycle now) = 0;

  [[nodiscard]] virtual bool can_send(Color c) const = 0;
  virtual void send(const Wavelet& w, sim::Cycle now) = 0;
};

// Called by the fabric when a wavelet lands in a PE's ramp queue (the PE may be asleep).
class RampListener {
 public:
  virtual ~RampListener() = default;
  virtual void on_arrival(PeCoord pe, Color c, sim::Cycle now) = 0;
  // A credit came back on the send side (the PE may be stalled on a full queue).
  virtual void on_credit(PeCoord pe, Color c, sim::Cycle now) = 0;
};

}  // namespace wafersim::hw
