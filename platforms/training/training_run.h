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
#include "platforms/cluster.h"
#include "platforms/failure_spec.h"
#include "platforms/platform_spec.h"
#include "platforms/run_trace.h"
#include "platforms/step_timeline.h"
#include "platforms/training/cluster_model.h"
#include "platforms/training/program_trajectory.h"
#include "platforms/training/training_state.h"
#include "platforms/training/wafer_times.h"
#include "sim/run_loop.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms::training {

// How the cluster's wafers are simulated: every wafer's mesh and PEs running the compiled
// programs, fed and drained through its edge (co-simulation), or the replay: one wafer
// simulated once on its own, its per-layer times the consumption rates of a stand-in endpoint
// per system (for clusters too large to co-simulate; docs/training.md gives its error).
enum class ClusterMode : std::uint8_t { Cosim, Replay };
const char* to_string(ClusterMode m);
// "cosim" or "replay"; throws sim::InputError naming the choices otherwise.
ClusterMode parse_cluster_mode(const std::string& text);

// A system of the cluster failing at the start of a step (`--fail system:K@STEP`).
struct SystemFailure {
  std::uint32_t system = 0, step = 0;
  std::string text;  // the spec as written
};

struct TrainingConfig {
  std::uint32_t steps = 1;
  ClusterMode cluster = ClusterMode::Cosim;
  unsigned threads = 0;  // co-simulation: host threads for the wafers (0: sim::parallel::resolve_threads' auto)
  sim::Picos window{0};  // co-simulation: the window, at most the edge latency (0: the latency)
  TimingSource timing = TimingSource::Simulated;
  bool functional = false;  // carry values: synthetic task, gradients, optimizer
  // Functional replay: each wafer's gradients from the host reference or from the compiled
  // programs run on a simulated wafer per wafer and step (needs simulated timing: code for
  // every layer). A co-simulation's gradients are always the wafers' own (programs).
  WaferArithmetic arithmetic = WaferArithmetic::Host;
  bool explicit_arithmetic = false;  // the arithmetic was asked for (not the default)
  bool check = true;                 // compare the wafer run's results with the host (simulated timing)
  std::uint64_t seed = 1;            // host data of the wafer run; initial weights and batches of the task
  std::uint64_t max_cycles = 0;
  sim::RunLimits limits;         // --max-wall over the cluster's run
  std::uint64_t max_memory = 0;  // host bytes the simulated wafers may take (0: the available memory)
  unsigned wafer_threads = 1;    // replay: host threads sweeping its simulated wafer (BuildOptions::threads)
  models::compiler::CompileOptions compile;  // placement and accumulation (training and code are set here)
  // The optimizer; its gradient_scale is replaced by 1 / wafers (the mean of the wafers'
  // gradients, each the mean over its samples).
  memoryx::OptimizerConfig optimizer;
  // Tracing (may be null): the cluster's links, MemoryX's records and the steps; co-simulated,
  // every wafer's fabric and cores and its programs as phases (the wafers then run on one
  // thread: the recorder is shared).
  platforms::RunTrace* trace = nullptr;
  // Systems failing while the run goes on (docs/defects.md, "Failures while running"): from a
  // failure's step on, the surviving systems train at the same global batch (each the global
  // batch over the survivors), resuming from MemoryX's weights and optimizer state.
  std::vector<SystemFailure> failures;
  // A training resumed at step `first_step` (what a cluster rebuilt after a failure runs): the
  // task's batches and the optimizer's update count continue from there; a functional run's
  // MemoryX starts from `start` (its state after `first_step` steps; null: the initial weights).
  std::uint32_t first_step = 0;
  std::shared_ptr<const TrainingState> start;
  // Links and PEs of wafer 0 failing while the co-simulation runs (`--fail link:...|pe:...`,
  // cycles of the wafer's clock): a static route over one stops the run unless the platform
  // rebuilds routes (redundancy.reroute).
  std::vector<platforms::FailureSpec> wafer_failures;
  // A part of a run with failures: no `training` statistics (the whole run adds them).
  bool segment = false;
  // Co-simulation: the run's ranks, the wafers in contiguous groups, one per rank (null: one
  // process). Every rank calls run_training; rank 0's report is the run's.
  sim::parallel::Transport* transport = nullptr;
};

// What a system failure did to the run.
struct SystemFailureReport {
  SystemFailure failure;
  std::uint32_t systems_before = 0, systems_after = 0;
  std::uint64_t batch_before = 0, batch_after = 0;  // samples per system
  sim::Picos step_before{0}, step_after{0};         // durations of steps step - 1 (0 at step 0) and step
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
  ClusterMode mode = ClusterMode::Replay;
  unsigned threads = 1;       // co-simulation: host threads the wafers ran on
  std::uint64_t windows = 0;  // co-simulation: window exchanges
  // Co-simulation over ranks: this process's rank (only rank 0's report holds the run), and
  // rank 0's: per rank its wafers, threads, the time its threads ran wafers and the time it
  // waited for messages (run.json's "ranks"; nothing of it reaches the statistics).
  unsigned rank = 0, ranks = 1;
  nlohmann::ordered_json rank_use;
  sim::Picos window{0};
  // Co-simulation: per step, the cycles each program took on wafer 0 from its first wavelet in,
  // and the cycles it waited for that wavelet.
  std::vector<std::vector<std::uint64_t>> program_cycles, program_waits;
  std::uint64_t checked = 0;  // co-simulation, functional: result elements compared on every wafer
  // Co-simulation: layers whose weight gradient no compiled program computes (a norm's gain):
  // their chunks leave when the layer's backward pass ends.
  std::vector<std::string> uncomputed_gradients;
  // The cluster's modules (and what ran on the wafers): `stats` refers to their counters, so
  // they live as long as the report.
  std::shared_ptr<platforms::Cluster> cluster;
  std::vector<std::shared_ptr<const void>> keep;
  // Systems that failed (in step order); `wafers` and `batch_per_wafer` are the cluster's at
  // the start. Functional: MemoryX's state at the end (what a resumed run starts from).
  std::vector<SystemFailureReport> failures;
  std::shared_ptr<const TrainingState> state;
  // Co-simulation: what wafer 0's failing links and PEs did.
  std::vector<fabric::OutageRecord> outages;
  [[nodiscard]] double samples_per_second() const;  // over all steps
  [[nodiscard]] sim::Picos total() const;
  // Weight bytes MemoryX sends per step: every layer's stream twice (forward and backward);
  // sparse layers kept x (value + index) bytes. The reduced gradients equal it.
  [[nodiscard]] std::uint64_t stream_bytes_per_step() const;
};

// Runs a whole training (with `config.failures`, each part between failures on its own
// cluster: run_with_failures): throws sim::InputError for a model the compiler or MemoryX cannot
// take, sim::SimulationError when the wafer run fails its checks or the loop stops short.
// Statistics go under `stats` (the cluster's modules and one group per step).
// The co-simulated run (run_training with ClusterMode::Cosim).
TrainingReport run_cosim(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                         const TrainingConfig& config, sim::stats::Group& stats);

TrainingReport run_training(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                            const TrainingConfig& config, sim::stats::Group& stats);
// A training whose systems fail (config.failures not empty): the parts before the last failure
// run in child processes (a SystemC kernel each), the last one here; the report and statistics
// join them (steps, times and losses continuous; `segment<i>` groups hold the earlier parts'
// modules). Throws sim::InputError for a failure naming no system of the cluster, a step outside
// the run, a system twice, or a global batch the survivors cannot split evenly;
// sim::SimulationError when the last system fails.
TrainingReport run_with_failures(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                                 const TrainingConfig& config, sim::stats::Group& stats);

// A resumed run (config.start): MemoryX takes the state and `initial` its weights.
void start_from(const TrainingConfig& config, const ClusterModel& layers, memoryx::MemoryX& memoryx,
                models::reference::TensorMap& initial);
// Numbers a resumed run's steps from `first_step` (their times stay the run's own).
void number_steps(platforms::StepTimeline& timeline, std::uint32_t first_step);

// The group `training` of either model: the per-step breakdown and the samples trained on.
void add_training_stats(sim::stats::Group& training, const TrainingReport& r, std::uint32_t steps);

nlohmann::ordered_json to_json(const TrainingReport& r);
// The per-step breakdown as a text table (times in microseconds).
std::string format_report(const TrainingReport& r);

}  // namespace wafersim::platforms::training
