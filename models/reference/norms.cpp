#include "models/reference/norms.h"

#include <vector>

#include "models/reference/checks.h"

namespace wafersim::models::reference {
namespace {

// One row's normalisation in the accumulation format, recomputed identically by the backward.
struct RowStats {
  std::vector<Bits> xhat;
  Bits rstd = 0;
};

RowStats layernorm_row(const Arith& A, const Tensor& xa, std::uint64_t r, Bits inv_d, Bits eps) {
  const std::uint64_t d = xa.cols();
  Bits sum = Arith::kZero;
  for (std::uint64_t j = 0; j < d; ++j) sum = A.add(sum, xa.bits(xa.at(r, j)));
  const Bits mean = A.mul(sum, inv_d);
  std::vector<Bits> c(d);
  Bits sq = Arith::kZero;
  for (std::uint64_t j = 0; j < d; ++j) {
    c[j] = A.sub(xa.bits(xa.at(r, j)), mean);
    sq = A.fma(c[j], c[j], sq);
  }
  RowStats st;
  st.rstd = A.rsqrt(A.add(A.mul(sq, inv_d), eps));
  st.xhat.resize(d);
  for (std::uint64_t j = 0; j < d; ++j) st.xhat[j] = A.mul(c[j], st.rstd);
  return st;
}

RowStats rmsnorm_row(const Arith& A, const Tensor& xa, std::uint64_t r, Bits inv_d, Bits eps) {
  const std::uint64_t d = xa.cols();
  Bits sq = Arith::kZero;
  for (std::uint64_t j = 0; j < d; ++j) sq = A.fma(xa.bits(xa.at(r, j)), xa.bits(xa.at(r, j)), sq);
  RowStats st;
  st.rstd = A.rsqrt(A.add(A.mul(sq, inv_d), eps));
  st.xhat.resize(d);
  for (std::uint64_t j = 0; j < d; ++j) st.xhat[j] = A.mul(xa.bits(xa.at(r, j)), st.rstd);
  return st;
}

void check_params(const Tensor& x, const Tensor& p, const char* kernel, const char* name) {
  detail::require_format(p, x.format(), kernel, name);
  detail::require_shape(p, vector_shape(x.cols()), kernel, name);
}

NormGrads norm_backward(bool layer, const Tensor& x, const Tensor& gamma, const Tensor& dy, double epsilon) {
  const char* kernel = layer ? "layernorm backward" : "rmsnorm backward";
  check_params(x, gamma, kernel, "gamma");
  detail::require_format(dy, x.format(), kernel, "the output gradient");
  detail::require_shape(dy, x.shape(), kernel, "the output gradient");
  const Format s = x.format(), a = accumulation_of(s);
  const Arith A(a), S(s);
  const std::uint64_t d = x.cols();
  const Bits inv_d = A.of(1.0 / static_cast<double>(d)), eps = A.of(epsilon);
  const Tensor xa = x.converted(a), ga = gamma.converted(a), dya = dy.converted(a);
  NormGrads g{Tensor(s, x.shape()), Tensor(a, gamma.shape()), {}};
  if (layer) g.dbeta = Tensor(a, gamma.shape());
  std::vector<Bits> gx(d);
  for (std::uint64_t r = 0; r < x.rows(); ++r) {
    const RowStats st = layer ? layernorm_row(A, xa, r, inv_d, eps) : rmsnorm_row(A, xa, r, inv_d, eps);
    Bits sum_g = Arith::kZero, sum_gx = Arith::kZero;
    for (std::uint64_t j = 0; j < d; ++j) {
      const Bits dyj = dya.bits(dya.at(r, j));
      gx[j] = A.mul(dyj, ga.bits(j));
      sum_g = A.add(sum_g, gx[j]);
      sum_gx = A.fma(gx[j], st.xhat[j], sum_gx);
      g.dgamma.set_bits(j, A.fma(dyj, st.xhat[j], g.dgamma.bits(j)));
      if (layer) g.dbeta.set_bits(j, A.add(g.dbeta.bits(j), dyj));
    }
    const Bits mean_g = A.mul(sum_g, inv_d), mean_gx = A.mul(sum_gx, inv_d);
    for (std::uint64_t j = 0; j < d; ++j) {
      Bits t = layer ? A.sub(gx[j], mean_g) : gx[j];
      t = A.sub(t, A.mul(st.xhat[j], mean_gx));
      g.dx.set_bits(g.dx.at(r, j), S.from(a, A.mul(t, st.rstd)));
    }
  }
  return g;
}

}  // namespace

Tensor layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon) {
  check_params(x, gamma, "layernorm", "gamma");
  check_params(x, beta, "layernorm", "beta");
  const Format s = x.format(), a = accumulation_of(s);
  const Arith A(a), S(s);
  const Bits inv_d = A.of(1.0 / static_cast<double>(x.cols())), eps = A.of(epsilon);
  const Tensor xa = x.converted(a), ga = gamma.converted(a), ba = beta.converted(a);
  Tensor y(s, x.shape());
  for (std::uint64_t r = 0; r < x.rows(); ++r) {
    const RowStats st = layernorm_row(A, xa, r, inv_d, eps);
    for (std::uint64_t j = 0; j < x.cols(); ++j)
      y.set_bits(y.at(r, j), S.from(a, A.fma(st.xhat[j], ga.bits(j), ba.bits(j))));
  }
  return y;
}

Tensor rmsnorm_forward(const Tensor& x, const Tensor& gamma, double epsilon) {
  check_params(x, gamma, "rmsnorm", "gamma");
  const Format s = x.format(), a = accumulation_of(s);
  const Arith A(a), S(s);
  const Bits inv_d = A.of(1.0 / static_cast<double>(x.cols())), eps = A.of(epsilon);
  const Tensor xa = x.converted(a), ga = gamma.converted(a);
  Tensor y(s, x.shape());
  for (std::uint64_t r = 0; r < x.rows(); ++r) {
    const RowStats st = rmsnorm_row(A, xa, r, inv_d, eps);
    for (std::uint64_t j = 0; j < x.cols(); ++j) y.set_bits(y.at(r, j), S.from(a, A.mul(st.xhat[j], ga.bits(j))));
  }
  return y;
}

NormGrads layernorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& dy, double epsilon) {
  return norm_backward(true, x, gamma, dy, epsilon);
}

NormGrads rmsnorm_backward(const Tensor& x, const Tensor& gamma, const Tensor& dy, double epsilon) {
  return norm_backward(false, x, gamma, dy, epsilon);
}

}  // namespace wafersim::models::reference
