#pragma once
// What a traced PE reports as it runs: its tasks and its vector operations, each once it has
// ended, with the cycles it covered. Installed only on the PEs a run traces.

#include <cstdint>

#include "hw/isa/program.h"
#include "hw/types.h"
#include "sim/types.h"

namespace wafersim::hw {

// Contract: called from the core's tick (evaluate phase), in cycle order per PE. A task ran
// over cycles [start, end): from the cycle it was selected to the cycle after its `ret`. A
// vector operation ran over [start, end): from its issue to its completion; `thread` is 0 for
// a synchronous operation (its task waits, so it nests in the task's interval) and k >= 1 for
// one on microthread k. `pc` indexes program.code. Observers must not touch the core.
class CoreObserver {
 public:
  virtual ~CoreObserver() = default;
  virtual void task_ran(PeCoord pe, const isa::Program& program, const isa::TaskDecl& task, sim::Cycle start,
                        sim::Cycle end) = 0;
  virtual void vector_op_ran(PeCoord pe, const isa::Program& program, std::uint32_t pc, std::uint32_t thread,
                             std::uint32_t elements, sim::Cycle start, sim::Cycle end) = 0;
};

}  // namespace wafersim::hw
