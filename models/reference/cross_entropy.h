#pragma once
// Cross-entropy of logits against labels, averaged over rows (docs/reference.md,
// "cross_entropy").

#include "models/reference/tensor.h"

namespace wafersim::models::reference {

// logits [B, S, V], labels [B, S] -> the mean loss, a [1, 1, 1] tensor in the accumulation
// format. Per row: m = max, l = sum of exp(x_j - m) in order, loss_r = (m + log l) - x_label;
// loss = (loss_0 + loss_1 + ... in order from +0) x (1/R rounded once). Throws sim::InputError
// for a label >= V.
Tensor cross_entropy_forward(const Tensor& logits, const TokenIds& labels);
// dlogits_j = (p_j - [j == label]) x (1/R rounded once), rounded once to the storage format,
// p_j = exp(x_j - m) x recip(l): the gradient of the mean loss.
Tensor cross_entropy_backward(const Tensor& logits, const TokenIds& labels);

}  // namespace wafersim::models::reference
