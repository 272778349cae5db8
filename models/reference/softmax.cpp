#include "models/reference/softmax.h"

#include <vector>

#include "models/reference/checks.h"

namespace wafersim::models::reference {

Bits softmax_terms(const Arith& A, const Bits* x, std::size_t n, std::vector<Bits>& e) {
  e.resize(n);
  if (n == 0) return Arith::kZero;
  Bits m = x[0];
  for (std::size_t j = 1; j < n; ++j) m = A.max(m, x[j]);
  Bits l = Arith::kZero;
  for (std::size_t j = 0; j < n; ++j) {
    e[j] = A.exp(A.sub(x[j], m));
    l = A.add(l, e[j]);
  }
  return l;
}

Tensor softmax_forward(const Tensor& x) {
  const Format s = x.format(), a = accumulation_of(s);
  const Arith A(a), S(s);
  const Tensor xa = x.converted(a);
  const std::uint64_t n = x.cols();
  Tensor y(s, x.shape());
  std::vector<Bits> row(n), e;
  for (std::uint64_t r = 0; r < x.rows(); ++r) {
    for (std::uint64_t j = 0; j < n; ++j) row[j] = xa.bits(xa.at(r, j));
    const Bits inv = A.recip(softmax_terms(A, row.data(), n, e));
    for (std::uint64_t j = 0; j < n; ++j) y.set_bits(y.at(r, j), S.from(a, A.mul(e[j], inv)));
  }
  return y;
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy) {
  detail::require_format(dy, y.format(), "softmax backward", "the output gradient");
  detail::require_shape(dy, y.shape(), "softmax backward", "the output gradient");
  const Format s = y.format(), a = accumulation_of(s);
  const Arith A(a), S(s);
  const Tensor ya = y.converted(a), ga = dy.converted(a);
  Tensor dx(s, y.shape());
  for (std::uint64_t r = 0; r < y.rows(); ++r) {
    Bits c = Arith::kZero;
    for (std::uint64_t j = 0; j < y.cols(); ++j) c = A.fma(ga.bits(ga.at(r, j)), ya.bits(ya.at(r, j)), c);
    for (std::uint64_t j = 0; j < y.cols(); ++j) {
      const std::size_t i = y.at(r, j);
      dx.set_bits(i, S.from(a, A.mul(ya.bits(i), A.sub(ga.bits(i), c))));
    }
  }
  return dx;
}

}  // namespace wafersim::models::reference
