#pragma once
// The allowed error when a result is computed with its reduction in another order than the
// reference's (docs/reference.md, "Tolerances"). With u the unit roundoff of the accumulation
// format and gamma_n = n u / (1 - n u), any order of an n-term sum accumulated in that
// format is within gamma_n sum|terms| of the exact sum (Higham, Accuracy and Stability of
// Numerical Algorithms, 2002, section 4.2; a fused multiply-add counts as one rounding), so two
// orders differ by at most 2 gamma_n sum|terms|, and rounding each once to the result's format
// adds at most one ulp of the result.

#include <cstdint>
#include <vector>

#include "models/reference/linear.h"
#include "models/reference/tensor.h"

namespace wafersim::models::reference {

// n u / (1 - n u) for the format's unit roundoff; +inf when n u >= 1.
double gamma(std::uint64_t n, Format accumulation);

// |a - b| allowed between two evaluations of one element that sum the same `terms` values
// (products and addends, a starting bias included) in different orders in `accumulation`, then
// round once to `result` (no rounding when result == accumulation):
//   2 gamma_terms sum_abs + ulp_result(|magnitude| + 2 gamma_terms sum_abs)   [ulp term only if rounded]
// magnitude is the reference value of the element.
double reduction_tolerance(Format result, Format accumulation, std::uint64_t terms, double sum_abs, double magnitude);

// For results that depend on a reduction of `terms` non-negative values only through a
// relative factor, followed by `ops` rounded operations in the accumulation format (each
// evaluation's own, so they count twice):
//   (factor gamma_terms + 2 ops u) |magnitude| + ulp_result(|magnitude|)   [ulp term only if rounded]
// softmax: factor 2 (the two orders of the sum of exponentials), ops 2 (recip, mul);
// rmsnorm: factor 1 (the square root halves the mean square's spread), ops 8 (x 1/d, + eps,
// rsqrt counted as 4, x rstd, x gamma).
double relative_tolerance(Format result, Format accumulation, std::uint64_t terms, double factor, unsigned ops,
                          double magnitude);

// Per element of linear_forward(x, w, bias) = y: terms K (+1 with a bias), sum_abs =
// |b_n| + sum_k |x_rk w_kn|.
std::vector<double> linear_tolerance(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y);

struct LinearTolerances {
  std::vector<double> dx, dw, db;
};
// Per element of linear_backward(x, w, dy, bias) = g: dx over the N outputs, dw and db over the rows.
LinearTolerances linear_backward_tolerance(const Tensor& x, const Tensor& w, const Tensor& dy, const LinearGrads& g);

}  // namespace wafersim::models::reference
