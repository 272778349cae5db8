#pragma once
// Timeline tracks of the traced PEs: a track of tasks (with their synchronous vector
// operations nested) and one per microthread, on a process per PE ("wafer0 PE 3,2").

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "hw/core/core_array.h"
#include "sim/trace/recorder.h"

namespace wafersim::hw::trace {

// Contract: install with CoreArray::observe for each traced PE; writes slices to the
// recorder's timeline (which must exist) as tasks and operations end.
class CoreTimeline final : public CoreObserver {
 public:
  CoreTimeline(sim::trace::Recorder& recorder, std::uint32_t wafer) : recorder_(recorder), wafer_(wafer) {}

  void task_ran(PeCoord pe, const isa::Program& program, const isa::TaskDecl& task, sim::Cycle start,
                sim::Cycle end) override;
  void vector_op_ran(PeCoord pe, const isa::Program& program, std::uint32_t pc, std::uint32_t thread,
                     std::uint32_t elements, sim::Cycle start, sim::Cycle end) override;

  [[nodiscard]] std::uint64_t tasks() const { return tasks_; }
  [[nodiscard]] std::uint64_t vector_ops() const { return vector_ops_; }

 private:
  sim::trace::TrackId track(PeCoord pe, std::uint32_t thread);

  sim::trace::Recorder& recorder_;
  std::uint32_t wafer_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, sim::trace::TrackId> tracks_;  // ((y << 16) | x, thread)
  std::uint64_t tasks_ = 0, vector_ops_ = 0;
};

}  // namespace wafersim::hw::trace
