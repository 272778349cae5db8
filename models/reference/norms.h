#pragma once
// LayerNorm and RMSNorm over the features of each row (docs/reference.md, "layernorm",
// "rmsnorm"). Statistics, normalised values and gradients are computed in the accumulation
// format; outputs and input gradients are rounded once to the storage format.

#include "models/reference/tensor.h"

namespace wafersim::models::reference {

// x [B, S, d], gamma and beta [1, 1, d] in the storage format.
Tensor layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon);
Tensor rmsnorm_forward(const Tensor& x, const Tensor& gamma, double epsilon);

struct NormGrads {
  Tensor dx;      // storage format
  Tensor dgamma;  // accumulation format: chain over rows of dy x xhat
  Tensor dbeta;   // accumulation format: chain over rows of dy; empty for rmsnorm
};
NormGrads layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& dy, double epsilon);
NormGrads rmsnorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& dy, double epsilon);

}  // namespace wafersim::models::reference
