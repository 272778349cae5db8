#pragma once
// Functional training on the compiled programs' arithmetic (docs/training.md, "Functional
// training"): every wafer's step runs the compiled forward and backward programs on a
// simulated wafer (a forked child with its own SystemC kernel) with the weights MemoryX would
// stream and the wafer's shard of the batch; the trajectory sums the wafers' weight gradients
// in SwarmX's order and applies memoryx::reference_step, step by step. The cluster loop then
// serves these gradients (ReplicaGradients::serve).

#include <cstdint>
#include <string>
#include <vector>

#include "memoryx/optimizer.h"
#include "models/compiler/compiled_model.h"
#include "models/reference/model.h"
#include "models/reference/task.h"
#include "platforms/platform_spec.h"
#include "platforms/runtime/host_data.h"
#include "platforms/training/cluster_model.h"
#include "sim/run_loop.h"

namespace wafersim::platforms::training {

// Where a functional run's wafer arithmetic comes from.
enum class WaferArithmetic : std::uint8_t { Host, Programs };
const char* to_string(WaferArithmetic a);
// "host" or "programs"; throws sim::InputError naming the choices otherwise.
WaferArithmetic parse_wafer_arithmetic(const std::string& text);

// One wafer's step on the compiled programs.
struct WaferStep {
  models::reference::TensorMap gradients;  // fp32 by parameter name: the weight-gradient streams, accumulated
  double loss = 0;                         // the cross-entropy losses (the host's log of the wafer's sums), summed
  std::uint64_t checked = 0;               // result elements compared with the host's expectation (all equal)
  std::uint64_t cycles = 0;
};

// Puts the shard's inputs (activations, token ids, labels) into the preload of `data`
// (runtime::make_host_data's structure). Throws sim::InputError for a model whose outputs do
// not all end in a loss layer or an input the shard lacks or misshapes.
void load_shard(const models::compiler::CompiledModel& cm, const models::reference::Inputs& shard,
                runtime::HostData& data);

// Runs every program of `cm` (compiled for training with code) once in a forked child on a
// wafer whose host weights are `parameters` (fp32 master weights, rounded once to the model's
// storage format) and whose inputs are `shard` (the model's batch). Throws sim::InputError for
// a model whose outputs do not all end in a loss layer or a parameter missing or misshapen,
// sim::SimulationError when a result differs from the host's expectation.
WaferStep program_step(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                       const models::reference::TensorMap& parameters, const models::reference::Inputs& shard,
                       std::uint64_t seed, std::uint64_t max_cycles = 0, const sim::RunLimits& limits = {});

struct ProgramTrajectory {
  // [step][layer] the cluster layers' fp32 master weights before each step; one more entry:
  // after the last step.
  std::vector<std::vector<std::vector<float>>> weights;
  std::vector<std::vector<std::vector<std::vector<float>>>> gradients;  // [step][wafer][layer] fp32
  std::vector<std::vector<double>> losses;                              // [step][wafer]
  std::uint64_t checked = 0;                                            // over every wafer run
};

struct TrajectoryPlan {
  std::uint32_t steps = 1, wafers = 1;
  std::uint32_t arity = 4;  // SwarmX fan-out: the gradients' summation order (models::reference::swarmx_sum)
  std::uint64_t seed = 1;
  std::uint64_t max_cycles = 0;
  sim::RunLimits limits;               // --max-wall over every wafer run
  memoryx::OptimizerConfig optimizer;  // gradient_scale as MemoryX applies it (1 / wafers)
};

// Steps x wafers program_step runs: wafer e of step s on samples [e B, (e+1) B) of
// task.batch(s, wafers B) (B the model's batch) with the weights before step s. Throws
// sim::InputError for a sparse layer (not supported on the programs' arithmetic).
ProgramTrajectory program_trajectory(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                                     const ClusterModel& layers, const models::reference::SyntheticTask& task,
                                     const models::reference::TensorMap& initial, const TrajectoryPlan& plan);

}  // namespace wafersim::platforms::training
