#pragma once
// A compiled model's steps run on wafer 0 of a platform: the platform assembled with the
// model's routes, the inputs written through the host socket, every step simulated in turn
// and its results checked. Optionally a first model runs before it on the same wafer (a
// decode's parallel prefill), and the second continues from what it left in SRAM.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/compiler/compiled_model.h"
#include "platforms/cluster.h"
#include "platforms/run_trace.h"
#include "platforms/runtime/executor.h"
#include "sim/run_loop.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms::runtime {

struct ModelRunOptions {
  bool check = true;         // compare every result with the host's expectation
  bool timing_only = false;  // the PEs compute no values (no checks)
  sim::RunLimits limits;     // --max-cycles and --max-wall over the whole run
};

// Checks a run makes beyond the executor's, per step of the (second) model.
struct ModelRunHooks {
  // Once the first model's steps have run, before the executor continues with the second.
  std::function<void(Executor&)> after_first;
  // After step `i` of the second model (the only one without a first).
  std::function<std::vector<Check>(Executor&, std::size_t i)> after_step;
};

// Every comparison of the run, summed.
struct CheckSummary {
  std::uint64_t compared = 0, failed = 0;
  std::string first;  // "<step>: <what>: <first mismatch>" of the first failing check
};

class ModelRun {
 public:
  // Contract: assembles `spec` (build.routes and build.timing_only are set from `cm` and
  // `options`), attaches `tracing` (may be null) to wafer 0 and prepares the executor with
  // `first` (when given, with `first_data`) or `cm`. Statistics go under `root`; the model's
  // under wafer 0's "model" group ("model.prefill" for a first model).
  ModelRun(const PlatformSpec& spec, BuildOptions build, sim::stats::Group& root,
           const models::compiler::CompiledModel& cm, HostData data, ModelRunOptions options,
           RunTrace* tracing = nullptr, ModelRunHooks hooks = {},
           const models::compiler::CompiledModel* first = nullptr, HostData first_data = {});

  // Loads the inputs and runs every step. Throws sim::LimitReached when a limit stops it and
  // sim::SimulationError when the simulated machine fails; what ran stays readable.
  void run(sim::ProgressSink& progress);

  // Records every step as a phase of the trace's timeline and closes the trace (no-op
  // without one).
  void finish_trace();

  [[nodiscard]] const std::deque<StepResult>& results() const { return exec_->results(); }
  // The hooks' checks, with the name of the step that made each.
  [[nodiscard]] const std::vector<std::pair<std::string, Check>>& extra_checks() const { return extra_; }
  [[nodiscard]] CheckSummary summary() const;
  [[nodiscard]] Wafer& wafer() { return cluster_->wafer(0); }
  [[nodiscard]] const Wafer& wafer() const { return cluster_->wafer(0); }
  [[nodiscard]] double wall_seconds() const { return wall_; }
  // The cycle the last step ended (0 before any).
  [[nodiscard]] std::uint64_t end_cycle() const { return results().empty() ? 0 : results().back().end; }

 private:
  void run_steps(sim::ProgressSink& progress, bool second);

  const models::compiler::CompiledModel& cm_;
  HostData data_;
  ModelRunOptions options_;
  RunTrace* tracing_;
  bool run_ahead_ = true;  // BuildOptions::run_ahead
  ModelRunHooks hooks_;
  const models::compiler::CompiledModel* first_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Executor> exec_;
  std::vector<std::pair<std::string, Check>> extra_;
  double wall_ = 0;
};

}  // namespace wafersim::platforms::runtime
