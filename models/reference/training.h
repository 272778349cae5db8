#pragma once
// Training steps on the host: data-parallel replicas whose gradients are summed in SwarmX's
// order (docs/swarmx.md), then one step of the MemoryX reference optimizer
// (memoryx/reference_optimizer.h) on FP32 master weights.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memoryx/optimizer.h"
#include "memoryx/reference_optimizer.h"
#include "models/reference/model.h"

namespace wafersim::models::reference {

// The sum SwarmX delivers to MemoryX for per-replica tensors (replica e on endpoint e): level by
// level from the endpoints, consecutive groups of `arity` summed left to right in fp32, until
// one remains (one replica: itself). 8 replicas, arity 4: (((g0+g1)+g2)+g3) + (((g4+g5)+g6)+g7).
Tensor swarmx_sum(const std::vector<Tensor>& per_replica, std::uint32_t arity);

struct StepPlan {
  std::uint32_t replicas = 1;      // wafers in data parallel, replica e on samples [e B/N, (e+1) B/N)
  std::uint32_t arity = 4;         // SwarmX fan-out (swarmx::SwarmXConfig::arity())
  std::uint32_t microbatches = 1;  // per replica, its samples in equal consecutive pieces whose
                                   // gradients are summed left to right in fp32
  // 1 / (replicas x microbatches) in fp32: the optimizer's gradient_scale for the mean gradient
  // (each microbatch's loss is the mean over its rows).
  [[nodiscard]] float mean_scale() const;
};

struct StepGradients {
  TensorMap sum;                      // fp32: what MemoryX receives (before gradient_scale)
  std::vector<double> losses;         // per replica and microbatch (replica-major): the mean loss of its rows
  [[nodiscard]] double loss() const;  // the mean of `losses`
};

// Forward and backward of every replica and microbatch, gradients summed as described.
// Throws sim::InputError when the batch does not split evenly.
StepGradients data_parallel_gradients(const Model& model, const TensorMap& parameters, const Inputs& batch,
                                      const StepPlan& plan);

// FP32 master weights and optimizer state of every parameter, stepped by memoryx::reference_step.
class Trainer {
 public:
  // The model's storage format must be fp16, bf16 or fp32 (the optimizer runs in fp32).
  Trainer(Model model, const TensorMap& initial, const memoryx::OptimizerConfig& config);

  // One step: data_parallel_gradients, then reference_step on every parameter (in the model's
  // parameter order) with the config's gradient_scale. Returns the step's gradients and losses.
  StepGradients step(const Inputs& batch, const StepPlan& plan);

  // Unstructured sparsity: per parameter name, 1 for a kept element. Masks the weights now;
  // every step then zeroes the summed gradient where the mask is 0 before the update and the
  // weights and moments after it (as MemoryX does for sparse layers).
  void set_masks(std::map<std::string, std::vector<std::uint8_t>> masks);

  [[nodiscard]] TensorMap parameters() const;
  [[nodiscard]] const Model& model() const { return model_; }
  [[nodiscard]] std::uint32_t steps() const { return steps_; }

 private:
  static void mask_state(memoryx::ReferenceState& st, const std::vector<std::uint8_t>& mask);

  Model model_;
  memoryx::OptimizerConfig config_;
  std::map<std::string, memoryx::ReferenceState> state_;
  std::map<std::string, std::vector<std::uint8_t>> masks_;
  std::uint32_t steps_ = 0;
};

}  // namespace wafersim::models::reference
