#pragma once
// Weight-streaming training of a compiled model on a cluster: each layer's compute time per
// pass from the compiled programs on one wafer (every wafer runs the same programs on its
// shard: pure data parallelism), fed into the cluster loop (MemoryX -> SwarmX -> wafers ->
// SwarmX -> MemoryX) for K steps; optionally functional, with each wafer's gradients of a
// synthetic task reduced in SwarmX and applied by MemoryX's optimizer (docs/training.md).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memoryx/optimizer.h"
#include "models/compiler/compiled_model.h"
#include "models/model_spec.h"
#include "platforms/platform_spec.h"
#include "platforms/step_timeline.h"
#include "platforms/streaming_cluster.h"
#include "platforms/training/cluster_model.h"
#include "platforms/training/program_trajectory.h"
#include "platforms/training/wafer_times.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms::training {

struct TrainingConfig {
  std::uint32_t steps = 1;
  TimingSource timing = TimingSource::Simulated;
  bool functional = false;  // carry values: synthetic task, gradients, optimizer
  // Functional: each wafer's gradients from the host reference or from the compiled programs
  // run on a simulated wafer per wafer and step (needs simulated timing: code for every layer).
  WaferArithmetic arithmetic = WaferArithmetic::Host;
  bool check = true;       // compare the wafer run's results with the host (simulated timing)
  std::uint64_t seed = 1;  // host data of the wafer run; initial weights and batches of the task
  std::uint64_t max_cycles = 0;
  unsigned threads = 1;  // host threads sweeping the simulated wafer (BuildOptions::threads)
  models::compiler::CompileOptions compile;  // placement and accumulation (training and code are set here)
  // The optimizer; its gradient_scale is replaced by 1 / wafers (the mean of the wafers'
  // gradients, each the mean over its samples).
  memoryx::OptimizerConfig optimizer;
};

struct TrainingReport {
  std::string model, platform;
  std::uint32_t wafers = 1;
  std::uint64_t batch_per_wafer = 1;  // samples (the model's batch)
  WaferTimes wafer;
  ClusterModel layers;
  memoryx::OptimizerConfig optimizer;
  platforms::StepTimeline timeline;
  std::vector<double> losses;                              // functional: mean loss of each step
  models::reference::TensorMap initial, final_parameters;  // functional: FP32 master weights
  WaferArithmetic arithmetic = WaferArithmetic::Host;
  // Functional on the programs: every wafer's gradients and the weights they were computed
  // from, step by step (MemoryX's final weights equal weights.back(), checked).
  std::shared_ptr<const ProgramTrajectory> trajectory;
  // The cluster's modules: `stats` refers to their counters, so they live as long as the report.
  std::shared_ptr<platforms::StreamingCluster> cluster;
  [[nodiscard]] double samples_per_second() const;  // over all steps
  [[nodiscard]] sim::Picos total() const;
  // Weight bytes MemoryX sends per step: every layer's stream twice (forward and backward);
  // sparse layers kept x (value + index) bytes. The reduced gradients equal it.
  [[nodiscard]] std::uint64_t stream_bytes_per_step() const;
};

// Runs a whole training: throws sim::InputError for a model the compiler or MemoryX cannot
// take, sim::SimulationError when the wafer run fails its checks or the loop stops short.
// Statistics go under `stats` (the cluster's modules and one group per step).
TrainingReport run_training(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                            const TrainingConfig& config, sim::stats::Group& stats);

nlohmann::ordered_json to_json(const TrainingReport& r);
// The per-step breakdown as a text table (times in microseconds).
std::string format_report(const TrainingReport& r);

}  // namespace wafersim::platforms::training
