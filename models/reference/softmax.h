#pragma once
// Softmax over the features of each row (docs/reference.md, "softmax").

#include <vector>

#include "models/reference/tensor.h"

namespace wafersim::models::reference {

// In the accumulation format: m = max_j x_j; e_j = exp(x_j - m); l = e_0 + e_1 + ... in
// order from +0; y_j = e_j x recip(l), rounded once to the storage format.
Tensor softmax_forward(const Tensor& x);
// From the stored output y: c = chain over j of dy_j y_j (fma, from +0); dx_j = y_j (dy_j - c),
// rounded once.
Tensor softmax_backward(const Tensor& y, const Tensor& dy);

// One row's softmax terms in the arithmetic A over the `n` values x[0..n) (shared with
// attention and cross-entropy); fills e (the exponentials) and returns l (their sum).
Bits softmax_terms(const Arith& A, const Bits* x, std::size_t n, std::vector<Bits>& e);

}  // namespace wafersim::models::reference
