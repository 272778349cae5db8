#include "models/reference/attention.h"

#include <cmath>
#include <vector>

#include "models/reference/checks.h"
#include "models/reference/softmax.h"

namespace wafersim::models::reference {
namespace {

// Dimensions and the widened inputs of one call.
struct Problem {
  Format s, a;
  std::uint64_t B, S, H, KV, hd, group;
  bool causal;
  Tensor q, k, v;  // accumulation format
  Bits scale;

  [[nodiscard]] std::uint64_t visible(std::uint64_t i) const { return causal ? i + 1 : S; }
  [[nodiscard]] std::size_t qi(std::uint64_t b, std::uint64_t i, std::uint64_t h, std::uint64_t d) const {
    return q.at(b * S + i, h * hd + d);
  }
  [[nodiscard]] std::size_t ki(std::uint64_t b, std::uint64_t j, std::uint64_t g, std::uint64_t d) const {
    return k.at(b * S + j, g * hd + d);
  }
};

Problem setup(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionShape& at, const char* kernel) {
  using detail::require;
  Problem p;
  p.s = q.format();
  p.a = accumulation_of(p.s);
  p.B = q.shape().batch;
  p.S = q.shape().sequence;
  p.H = at.heads;
  p.KV = at.kv_heads;
  p.causal = at.causal;
  require(p.H > 0 && p.KV > 0 && p.H % p.KV == 0, kernel,
          fmt::format("{} heads are not a positive multiple of {} kv heads", p.H, p.KV));
  require(q.cols() % p.H == 0, kernel, fmt::format("{} query features do not split into {} heads", q.cols(), p.H));
  p.hd = q.cols() / p.H;
  p.group = p.H / p.KV;
  const Shape kv{p.B, p.S, p.KV * p.hd};
  detail::require_format(k, p.s, kernel, "k");
  detail::require_format(v, p.s, kernel, "v");
  detail::require_shape(k, kv, kernel, "k");
  detail::require_shape(v, kv, kernel, "v");
  p.q = q.converted(p.a);
  p.k = k.converted(p.a);
  p.v = v.converted(p.a);
  p.scale = Arith(p.a).of(1.0 / std::sqrt(static_cast<double>(p.hd)));
  return p;
}

// Probabilities of (sample b, head h, query i) over the visible keys.
void probabilities(const Problem& p, const Arith& A, std::uint64_t b, std::uint64_t h, std::uint64_t i,
                   std::vector<Bits>& prob) {
  const std::uint64_t g = h / p.group, n = p.visible(i);
  std::vector<Bits> scores(n), e;
  for (std::uint64_t j = 0; j < n; ++j) {
    Bits acc = Arith::kZero;
    for (std::uint64_t d = 0; d < p.hd; ++d) acc = A.fma(p.q.bits(p.qi(b, i, h, d)), p.k.bits(p.ki(b, j, g, d)), acc);
    scores[j] = A.mul(acc, p.scale);
  }
  const Bits inv = A.recip(softmax_terms(A, scores.data(), n, e));
  prob.resize(n);
  for (std::uint64_t j = 0; j < n; ++j) prob[j] = A.mul(e[j], inv);
}

}  // namespace

Tensor attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionShape& at) {
  const Problem p = setup(q, k, v, at, "attention");
  const Arith A(p.a), S(p.s);
  Tensor out(p.s, q.shape());
  std::vector<Bits> prob;
  for (std::uint64_t b = 0; b < p.B; ++b)
    for (std::uint64_t h = 0; h < p.H; ++h)
      for (std::uint64_t i = 0; i < p.S; ++i) {
        probabilities(p, A, b, h, i, prob);
        const std::uint64_t g = h / p.group;
        for (std::uint64_t d = 0; d < p.hd; ++d) {
          Bits acc = Arith::kZero;
          for (std::uint64_t j = 0; j < prob.size(); ++j) acc = A.fma(prob[j], p.v.bits(p.ki(b, j, g, d)), acc);
          out.set_bits(p.qi(b, i, h, d), S.from(p.a, acc));
        }
      }
  return out;
}

AttentionGrads attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout,
                                  const AttentionShape& at) {
  const Problem p = setup(q, k, v, at, "attention backward");
  detail::require_format(dout, p.s, "attention backward", "the output gradient");
  detail::require_shape(dout, q.shape(), "attention backward", "the output gradient");
  const Arith A(p.a), S(p.s);
  const Tensor go = dout.converted(p.a);
  AttentionGrads g{Tensor(p.s, q.shape()), Tensor(p.s, k.shape()), Tensor(p.s, v.shape())};
  // Per sample and head: P[i][j] and dS[i][j] (scaled) over the visible keys.
  const std::uint64_t SS = p.S * p.S;
  std::vector<Bits> P(p.H * SS), dS(p.H * SS);
  std::vector<Bits> prob, dP;
  for (std::uint64_t b = 0; b < p.B; ++b) {
    for (std::uint64_t h = 0; h < p.H; ++h) {
      const std::uint64_t gi = h / p.group;
      for (std::uint64_t i = 0; i < p.S; ++i) {
        probabilities(p, A, b, h, i, prob);
        const std::uint64_t n = prob.size();
        dP.assign(n, Arith::kZero);
        Bits c = Arith::kZero;
        for (std::uint64_t j = 0; j < n; ++j) {
          Bits acc = Arith::kZero;
          for (std::uint64_t d = 0; d < p.hd; ++d)
            acc = A.fma(go.bits(p.qi(b, i, h, d)), p.v.bits(p.ki(b, j, gi, d)), acc);
          dP[j] = acc;
          c = A.fma(prob[j], acc, c);
        }
        for (std::uint64_t j = 0; j < n; ++j) {
          P[h * SS + i * p.S + j] = prob[j];
          dS[h * SS + i * p.S + j] = A.mul(A.mul(prob[j], A.sub(dP[j], c)), p.scale);
        }
        for (std::uint64_t d = 0; d < p.hd; ++d) {
          Bits acc = Arith::kZero;
          for (std::uint64_t j = 0; j < n; ++j) acc = A.fma(dS[h * SS + i * p.S + j], p.k.bits(p.ki(b, j, gi, d)), acc);
          g.dq.set_bits(p.qi(b, i, h, d), S.from(p.a, acc));
        }
      }
    }
    for (std::uint64_t gi = 0; gi < p.KV; ++gi)
      for (std::uint64_t j = 0; j < p.S; ++j)
        for (std::uint64_t d = 0; d < p.hd; ++d) {
          Bits acc_k = Arith::kZero, acc_v = Arith::kZero;
          for (std::uint64_t h = gi * p.group; h < (gi + 1) * p.group; ++h)
            for (std::uint64_t i = p.causal ? j : 0; i < p.S; ++i) {
              const std::uint64_t ij = h * SS + i * p.S + j;
              acc_k = A.fma(dS[ij], p.q.bits(p.qi(b, i, h, d)), acc_k);
              acc_v = A.fma(P[ij], go.bits(p.qi(b, i, h, d)), acc_v);
            }
          g.dk.set_bits(p.ki(b, j, gi, d), S.from(p.a, acc_k));
          g.dv.set_bits(p.ki(b, j, gi, d), S.from(p.a, acc_v));
        }
  }
  return g;
}

}  // namespace wafersim::models::reference
