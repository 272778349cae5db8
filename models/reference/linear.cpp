#include "models/reference/linear.h"

#include "models/reference/checks.h"

namespace wafersim::models::reference {
using detail::require;

Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor* bias) {
  const Format s = x.format();
  const Format a = accumulation_of(s);
  const std::uint64_t K = x.cols(), N = w.cols(), R = x.rows();
  detail::require_format(w, s, "linear", "the weights");
  require(w.rows() == K, "linear", fmt::format("weights have {} rows, the input {} features", w.rows(), K));
  if (bias) {
    detail::require_format(*bias, s, "linear", "the bias");
    detail::require_shape(*bias, vector_shape(N), "linear", "the bias");
  }
  const Arith A(a), S(s);
  const Tensor xa = x.converted(a), wa = w.converted(a);
  const Tensor ba = bias ? bias->converted(a) : Tensor(a, vector_shape(N));
  Tensor y(s, Shape{x.shape().batch, x.shape().sequence, N});
  for (std::uint64_t r = 0; r < R; ++r)
    for (std::uint64_t n = 0; n < N; ++n) {
      Bits acc = ba.bits(n);
      for (std::uint64_t k = 0; k < K; ++k) acc = A.fma(xa.bits(xa.at(r, k)), wa.bits(wa.at(k, n)), acc);
      y.set_bits(y.at(r, n), S.from(a, acc));
    }
  return y;
}

LinearGrads linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, bool bias) {
  const Format s = x.format();
  const Format a = accumulation_of(s);
  const std::uint64_t K = x.cols(), N = w.cols(), R = x.rows();
  detail::require_format(w, s, "linear backward", "the weights");
  detail::require_format(dy, s, "linear backward", "the output gradient");
  require(w.rows() == K, "linear backward", fmt::format("weights have {} rows, the input {} features", w.rows(), K));
  detail::require_shape(dy, Shape{x.shape().batch, x.shape().sequence, N}, "linear backward", "the output gradient");
  const Arith A(a), S(s);
  const Tensor xa = x.converted(a), wa = w.converted(a), ga = dy.converted(a);
  LinearGrads g{Tensor(s, x.shape()), Tensor(a, w.shape()), {}};
  for (std::uint64_t r = 0; r < R; ++r)
    for (std::uint64_t k = 0; k < K; ++k) {
      Bits acc = Arith::kZero;
      for (std::uint64_t n = 0; n < N; ++n) acc = A.fma(ga.bits(ga.at(r, n)), wa.bits(wa.at(k, n)), acc);
      g.dx.set_bits(g.dx.at(r, k), S.from(a, acc));
    }
  for (std::uint64_t k = 0; k < K; ++k)
    for (std::uint64_t n = 0; n < N; ++n) {
      Bits acc = Arith::kZero;
      for (std::uint64_t r = 0; r < R; ++r) acc = A.fma(xa.bits(xa.at(r, k)), ga.bits(ga.at(r, n)), acc);
      g.dw.set_bits(g.dw.at(k, n), acc);
    }
  if (bias) {
    g.db = Tensor(a, vector_shape(N));
    for (std::uint64_t n = 0; n < N; ++n) {
      Bits acc = Arith::kZero;
      for (std::uint64_t r = 0; r < R; ++r) acc = A.add(acc, ga.bits(ga.at(r, n)));
      g.db.set_bits(n, acc);
    }
  }
  return g;
}

}  // namespace wafersim::models::reference
