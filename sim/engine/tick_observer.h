#pragma once
// An observer of an engine's ticks that takes no part in them: window samplers, waveform
// probes and other tracers, registered only when tracing is asked for.

#include "sim/types.h"

namespace wafersim::sim {

// Contract: before_tick(now) runs at the start of every tick, before any component's read():
// the components' state is what the writes of the last ticked cycle left, and nothing changed
// in the skipped cycles between that cycle and `now`. after_tick(now) runs after every write()
// of cycle `now`. Observers never change model state (results are the same with or without
// them); they may wake components of their own.
class TickObserver {
 public:
  virtual ~TickObserver() = default;
  virtual void before_tick(Cycle /*now*/) {}
  virtual void after_tick(Cycle /*now*/) {}
};

}  // namespace wafersim::sim
