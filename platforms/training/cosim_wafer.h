#pragma once
// One wafer of a co-simulated training cluster: the compiled programs run on it step after
// step, their weights arriving through the wafer's edge endpoint from MemoryX and SwarmX as
// the programs stream them in, their weight gradients leaving through it as chunks once
// complete. It is the wafer's platforms::WaferDriver: it runs on the wafer's own thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/compiler/compiled_model.h"
#include "models/reference/task.h"
#include "platforms/cluster.h"
#include "platforms/runtime/executor.h"
#include "platforms/training/cluster_model.h"

namespace wafersim::platforms::training {

struct CosimPlan {
  std::uint32_t steps = 1;
  std::uint32_t wafer = 0, wafers = 1;
  // Values: every step loads the wafer's shard of the task's batch, the programs compute on
  // the weights that arrive, and every result is compared with the host's expectation (a
  // mismatch is a simulation error naming the wafer, step and program).
  bool functional = false;
  std::uint64_t seed = 1;
  const models::reference::SyntheticTask* task = nullptr;  // functional
  std::uint32_t first_step = 0;                            // the task's step of this run's step 0 (a resumed training)
};

// What one program did in one step.
struct CosimProgram {
  std::uint64_t start = 0, end = 0;  // cycles: started, finished
  // The first wavelet of its streams entered the mesh (start without in-streams): before it
  // the program waited for its weights; from it on the wafer computes (the step timeline's
  // compute).
  std::uint64_t first_in = 0;
  [[nodiscard]] std::uint64_t cycles() const { return end - start; }
  [[nodiscard]] std::uint64_t computing() const { return end - first_in; }
};

class CosimWafer final : public platforms::WaferDriver {
 public:
  // Contract: construct during elaboration (the executor binds its host link). `cm` was
  // compiled for training with code for every program; `layers` is MemoryX's view of it.
  CosimWafer(const models::compiler::CompiledModel& cm, platforms::Wafer& wafer, edge::WaferEdge& edge,
             const ClusterModel& layers, const CosimPlan& plan);

  void advance(sim::Cycle end) override;
  std::vector<edge::Interval> take_compute() override;

  [[nodiscard]] bool finished() const { return finished_; }
  // [step][program]
  [[nodiscard]] const std::vector<std::vector<CosimProgram>>& programs() const { return programs_; }
  // Functional: the cross-entropy losses of each step (the host's log of the wafer's sums),
  // summed; and the result elements compared (all equal).
  [[nodiscard]] const std::vector<double>& losses() const { return losses_; }
  [[nodiscard]] std::uint64_t checked() const { return checked_; }
  // Timing runs: the layers whose weight gradient no program computes (sent when the layer's
  // backward pass ends).
  [[nodiscard]] const std::vector<std::string>& uncomputed_gradients() const { return untimed_gradients_; }
  // Functional: the weight gradients each step sent, per cluster layer (FP32).
  [[nodiscard]] const std::vector<std::vector<std::vector<float>>>& gradients() const { return gradients_; }

 private:
  void begin_step();
  void start_program();
  void finish_program();
  void send_gradient(std::uint32_t layer);
  void on_staged(const sim::stream::Chunk& chunk);
  [[nodiscard]] bool program_done() const;
  [[nodiscard]] std::uint32_t stream_of(std::uint32_t layer, bool forward) const;

  const models::compiler::CompiledModel& cm_;
  platforms::Wafer& wafer_;
  edge::WaferEdge& edge_;
  const ClusterModel& layers_;
  CosimPlan plan_;
  runtime::Executor exec_;
  std::vector<int> stream_layer_;         // per program: its cluster layer (-1: the loss)
  std::vector<int> last_reader_;          // per stream of a step (2 L): the last program reading it (-1: none)
  std::vector<int> last_writer_;          // per cluster layer: the last program writing its gradient
  std::vector<std::int64_t> grad_of_;     // per host tensor: the cluster layer whose gradient it is (-1: none)
  std::vector<std::uint64_t> offset_of_;  // per host tensor: its offset in its cluster layer
  std::uint32_t step_ = 0;
  std::size_t program_ = 0;
  bool started_ = false, running_ = false, finished_ = false;
  std::vector<std::vector<CosimProgram>> programs_;
  std::vector<edge::Interval> compute_;
  std::vector<double> losses_;
  std::uint64_t checked_ = 0;
  std::vector<std::vector<std::vector<float>>> gradients_;
  std::vector<std::string> untimed_gradients_;
};

}  // namespace wafersim::platforms::training
