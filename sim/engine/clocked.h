#pragma once
// A plain C++ object ticked by an Engine: routers, core arrays, edge ports.

#include <string>

#include "sim/types.h"

namespace wafersim::sim {

// Contract: while awake, the engine calls read(), then evaluate(), then write() once per
// cycle, each phase over all awake components before the next phase begins. read() and
// evaluate() may only look at state that other components published in an earlier
// cycle's write(); write() publishes this cycle's outputs (visible from the next cycle
// on). So results never depend on the order in which components are ticked.
// write() returns the next cycle at which the component has work: now + 1 to stay awake,
// a later cycle to sleep until then, or Cycle::never() to sleep until Engine::wake().
// A component must tolerate being ticked while it has nothing to do (--no-idle-skip).
class Clocked {
 public:
  virtual ~Clocked() = default;
  virtual void read(Cycle /*now*/) {}
  virtual void evaluate(Cycle now) = 0;
  virtual Cycle write(Cycle now) = 0;
  // For progress and deadlock reports.
  [[nodiscard]] virtual std::string describe() const = 0;
};

}  // namespace wafersim::sim
