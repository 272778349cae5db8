#pragma once
// The optimizers MemoryX runs on reduced gradients: SGD, momentum, Adam and AdamW in FP32,
// and the element-wise update its engine applies (docs/memoryx.md gives the formulas).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "memoryx/lr_schedule.h"

namespace wafersim::memoryx {

enum class OptimizerKind { Sgd, Momentum, Adam, AdamW };
const char* to_string(OptimizerKind k);
// "sgd", "momentum", "adam", "adamw"; throws sim::InputError naming the choices otherwise.
OptimizerKind parse_optimizer_kind(std::string_view text);

// Hyper-parameters of a training run (not platform keys: they belong to the run).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Adam;
  float learning_rate = 1e-3F;
  float weight_decay = 0.0F;  // L2 (added to the gradient) except AdamW: decoupled
  float momentum = 0.9F;      // Momentum only
  float beta1 = 0.9F;         // Adam, AdamW
  float beta2 = 0.999F;
  float epsilon = 1e-8F;
  float gradient_scale = 1.0F;  // the reduced (summed) gradient is multiplied by this, e.g. 1/N
  LrSchedule schedule;          // the rate of each update (default: learning_rate throughout)

  // The learning rate of update t (1 for the first).
  [[nodiscard]] float learning_rate_at(std::uint32_t t) const { return schedule.rate(learning_rate, t); }

  // Throws sim::InputError when a value is out of range (negative rate, beta outside [0,1), ...).
  void validate() const;
};

// FP32 moment tensors the optimizer keeps per parameter: 0 (SGD), 1 (momentum), 2 (Adam/W).
std::uint32_t moment_count(OptimizerKind k);

// Bias-correction terms 1 - beta^t of Adam for step t >= 1, with beta^t formed by t FP32
// multiplications (the engine and the host reference use the same definition).
struct BiasCorrection {
  float one_minus_beta1_t = 1.0F;
  float one_minus_beta2_t = 1.0F;
};
BiasCorrection bias_correction(const OptimizerConfig& c, std::uint32_t t);

// The MemoryX engine's update of `n` parameters at update number t (1 for the first):
// w, m (momentum or first moment), v (second moment) in place from the summed gradient g.
// Unused moments may be null. Element-wise FP32, no fused multiply-add.
void engine_update(const OptimizerConfig& c, std::uint32_t t, float* w, float* m, float* v, const float* g,
                   std::size_t n);

}  // namespace wafersim::memoryx
