#pragma once
// Host reference of the data-parallel optimizer step: whole-tensor FP32 operations in the
// order docs/memoryx.md states, written apart from the MemoryX engine so that tests (and the
// functional training later) can compare the two bit for bit.

#include <cstdint>
#include <vector>

#include "memoryx/optimizer.h"

namespace wafersim::memoryx {

// One layer's optimizer state on the host.
struct ReferenceState {
  std::vector<float> weights;
  std::vector<float> m;  // momentum buffer or Adam first moment (empty for SGD)
  std::vector<float> v;  // Adam second moment (empty otherwise)
  std::uint32_t updates = 0;

  static ReferenceState with_weights(std::vector<float> w, OptimizerKind kind);
};

// Applies one update with the summed gradient `gradient_sum` (same length as the weights).
void reference_step(const OptimizerConfig& c, ReferenceState& s, const std::vector<float>& gradient_sum);

// Sum of per-replica gradients in the given order: ((g[0] + g[1]) + g[2]) + ... in FP32.
std::vector<float> reference_sum(const std::vector<const std::vector<float>*>& in_order);

}  // namespace wafersim::memoryx
