#include "models/reference/tolerance.h"

#include <cmath>
#include <limits>

namespace wafersim::models::reference {

double gamma(std::uint64_t n, Format accumulation) {
  const double nu = static_cast<double>(n) * unit_roundoff(accumulation);
  return nu < 1 ? nu / (1 - nu) : std::numeric_limits<double>::infinity();
}

double reduction_tolerance(Format result, Format accumulation, std::uint64_t terms, double sum_abs, double magnitude) {
  const double spread = 2 * gamma(terms, accumulation) * sum_abs;
  if (result == accumulation) return spread;
  return spread + ulp(result, std::fabs(magnitude) + spread);
}

double relative_tolerance(Format result, Format accumulation, std::uint64_t terms, double factor, unsigned ops,
                          double magnitude) {
  const double spread =
      (factor * gamma(terms, accumulation) + 2.0 * ops * unit_roundoff(accumulation)) * std::fabs(magnitude);
  if (result == accumulation) return spread;
  return spread + ulp(result, std::fabs(magnitude) + spread);
}

std::vector<double> linear_tolerance(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) {
  const Format a = accumulation_of(x.format());
  const std::uint64_t K = x.cols(), N = w.cols();
  std::vector<double> out(y.size());
  for (std::uint64_t r = 0; r < x.rows(); ++r)
    for (std::uint64_t n = 0; n < N; ++n) {
      double sum = bias ? std::fabs(bias->value(n)) : 0.0;
      for (std::uint64_t k = 0; k < K; ++k) sum += std::fabs(x.value(x.at(r, k)) * w.value(w.at(k, n)));
      const std::size_t i = y.at(r, n);
      out[i] = reduction_tolerance(y.format(), a, K + (bias ? 1 : 0), sum, y.value(i));
    }
  return out;
}

LinearTolerances linear_backward_tolerance(const Tensor& x, const Tensor& w, const Tensor& dy, const LinearGrads& g) {
  const Format s = x.format(), a = accumulation_of(s);
  const std::uint64_t K = x.cols(), N = w.cols(), R = x.rows();
  LinearTolerances t;
  t.dx.resize(g.dx.size());
  for (std::uint64_t r = 0; r < R; ++r)
    for (std::uint64_t k = 0; k < K; ++k) {
      double sum = 0;
      for (std::uint64_t n = 0; n < N; ++n) sum += std::fabs(dy.value(dy.at(r, n)) * w.value(w.at(k, n)));
      const std::size_t i = g.dx.at(r, k);
      t.dx[i] = reduction_tolerance(s, a, N, sum, g.dx.value(i));
    }
  t.dw.resize(g.dw.size());
  for (std::uint64_t k = 0; k < K; ++k)
    for (std::uint64_t n = 0; n < N; ++n) {
      double sum = 0;
      for (std::uint64_t r = 0; r < R; ++r) sum += std::fabs(x.value(x.at(r, k)) * dy.value(dy.at(r, n)));
      const std::size_t i = g.dw.at(k, n);
      t.dw[i] = reduction_tolerance(a, a, R, sum, g.dw.value(i));
    }
  if (g.db.size() > 0) {
    t.db.resize(g.db.size());
    for (std::uint64_t n = 0; n < N; ++n) {
      double sum = 0;
      for (std::uint64_t r = 0; r < R; ++r) sum += std::fabs(dy.value(dy.at(r, n)));
      t.db[n] = reduction_tolerance(a, a, R, sum, g.db.value(n));
    }
  }
  return t;
}

}  // namespace wafersim::models::reference
