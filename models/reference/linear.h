#pragma once
// Linear layers and GEMV (one row): Y = X W + b with W stored K x N (docs/reference.md,
// "linear"). Activations and weights in the storage format; weight gradients in its
// accumulation format (fp32, or fp64 in the exact mode).

#include "models/reference/tensor.h"

namespace wafersim::models::reference {

// x [B, S, K], w [1, K, N], bias [1, 1, N] or null -> [B, S, N]. For each output element:
// acc = bias or +0; for k = 0..K-1: acc = fma(x[k], w[k, n], acc) in the accumulation
// format; y = acc rounded once to the storage format.
Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias);

struct LinearGrads {
  Tensor dx;  // storage format: chain over n of dy[r, n] w[k, n], rounded once
  Tensor dw;  // accumulation format: chain over rows r of x[r, k] dy[r, n]
  Tensor db;  // accumulation format: chain over rows of dy[r, n]; empty without a bias
};
LinearGrads linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, bool bias);

}  // namespace wafersim::models::reference
