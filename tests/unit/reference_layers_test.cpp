// Every layer kind of the host reference: backward against central finite differences in the
// fp64 mode, rounding points against hand-computed fp16/bf16/fp32 bit patterns, grouped-query
// against multi-head attention with repeated kv heads, and the causal mask.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <tuple>
#include <vector>

#include "models/reference/attention.h"
#include "models/reference/compare.h"
#include "models/reference/cross_entropy.h"
#include "models/reference/elementwise.h"
#include "models/reference/embedding.h"
#include "models/reference/linear.h"
#include "models/reference/norms.h"
#include "models/reference/softmax.h"
#include "models/reference/tolerance.h"
#include "sim/errors.h"

namespace wafersim::models::reference::reference_layers_test {
namespace {

constexpr Format D = Format::FP64;

double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a.value(i) * b.value(i);
  return s;
}

// Checks `analytic` = d(loss)/d(input) by central differences on every element of `input`
// (perturbed in place), where loss() reads `input`.
void expect_gradient(const char* what, Tensor& input, const Tensor& analytic, const std::function<double()>& loss) {
  ASSERT_EQ(input.shape(), analytic.shape()) << what;
  const double h = 1e-6;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const double v = input.value(i);
    input.set_value(i, v + h);
    const double up = loss();
    input.set_value(i, v - h);
    const double down = loss();
    input.set_value(i, v);
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(analytic.value(i), numeric, 1e-7 + 1e-6 * std::fabs(numeric)) << what << " " << input.index_name(i);
  }
}

Tensor random(const Shape& s, std::uint64_t seed, double lo = -1, double hi = 1) {
  return Tensor::uniform(D, s, lo, hi, seed);
}

TEST(ReferenceGradients, Linear) {
  Tensor x = random({2, 3, 4}, 1), w = random(matrix_shape(4, 5), 2), b = random(vector_shape(5), 3);
  const Tensor c = random({2, 3, 5}, 4);
  for (bool bias : {true, false}) {
    const LinearGrads g = linear_backward(x, w, c, bias);
    auto loss = [&] { return dot(c, linear_forward(x, w, bias ? &b : nullptr)); };
    expect_gradient("dx", x, g.dx, loss);
    expect_gradient("dw", w, g.dw, loss);
    if (bias) expect_gradient("db", b, g.db, loss);
    EXPECT_EQ(g.db.size(), bias ? 5u : 0u);
  }
  // GEMV: one row.
  Tensor v = random({1, 1, 4}, 5);
  const Tensor cv = random({1, 1, 5}, 6);
  const LinearGrads gv = linear_backward(v, w, cv, true);
  expect_gradient("gemv dx", v, gv.dx, [&] { return dot(cv, linear_forward(v, w, &b)); });
}

TEST(ReferenceGradients, EmbeddingScatterAddsRepeatedTokens) {
  Tensor table = random(matrix_shape(5, 3), 1), pos = random(matrix_shape(4, 3), 2);
  const TokenIds tok{{2, 3, 0}, {4, 1, 4, 0, 4, 2}};  // token 4 three times
  const Tensor c = random({2, 3, 3}, 3);
  const EmbeddingGrads g = embedding_backward(tok, c, 5, 4);
  auto loss = [&] { return dot(c, embedding_forward(tok, table, &pos)); };
  expect_gradient("table", table, g.table, loss);
  expect_gradient("positions", pos, g.positions, loss);
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(g.table.bits(g.table.at(3, j)), 0u);            // unused row: +0
    EXPECT_EQ(g.positions.value(g.positions.at(3, j)), 0.0);  // position 3 beyond the sequence
  }
}

TEST(ReferenceGradients, Elementwise) {
  Tensor a = random({2, 2, 3}, 1), b = random({2, 2, 3}, 2, -2, 2);
  const Tensor c = random({2, 2, 3}, 3);
  const PairGrads add = add_backward(c);
  expect_gradient("add a", a, add.da, [&] { return dot(c, add_forward(a, b)); });
  expect_gradient("add b", b, add.db, [&] { return dot(c, add_forward(a, b)); });
  const PairGrads mul = mul_backward(a, b, c);
  expect_gradient("mul a", a, mul.da, [&] { return dot(c, mul_forward(a, b)); });
  expect_gradient("mul b", b, mul.db, [&] { return dot(c, mul_forward(a, b)); });
  const PairGrads sw = swiglu_backward(a, b, c);
  expect_gradient("swiglu gate", a, sw.da, [&] { return dot(c, swiglu_forward(a, b)); });
  expect_gradient("swiglu up", b, sw.db, [&] { return dot(c, swiglu_forward(a, b)); });
  Tensor x = random({2, 3, 4}, 4, -4, 4);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::fabs(x.value(i)) < 0.1) x.set_value(i, 0.5);  // away from relu's kink
  const Tensor cx = random({2, 3, 4}, 5);
  for (Activation f : {Activation::Gelu, Activation::Silu, Activation::Relu}) {
    const Tensor dx = activation_backward(f, x, cx);
    expect_gradient(to_string(f), x, dx, [&] { return dot(cx, activation_forward(f, x)); });
  }
}

TEST(ReferenceGradients, GeluIsTheTanhApproximation) {
  const Tensor x = Tensor::of_values(D, vector_shape(5), {-3, -0.5, 0, 0.7, 2.5});
  const Tensor y = activation_forward(Activation::Gelu, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x.value(i);
    const double expected = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(y.value(i), expected, 1e-15) << v;
  }
}

TEST(ReferenceGradients, Norms) {
  Tensor x = random({2, 3, 5}, 1, -2, 2), gamma = random(vector_shape(5), 2, 0.5, 1.5),
         beta = random(vector_shape(5), 3);
  const Tensor c = random({2, 3, 5}, 4);
  const NormGrads ln = layernorm_backward(x, gamma, c, 1e-5);
  auto ln_loss = [&] { return dot(c, layernorm_forward(x, gamma, beta, 1e-5)); };
  expect_gradient("layernorm dx", x, ln.dx, ln_loss);
  expect_gradient("layernorm dgamma", gamma, ln.dgamma, ln_loss);
  expect_gradient("layernorm dbeta", beta, ln.dbeta, ln_loss);
  const NormGrads rms = rmsnorm_backward(x, gamma, c, 1e-5);
  auto rms_loss = [&] { return dot(c, rmsnorm_forward(x, gamma, 1e-5)); };
  expect_gradient("rmsnorm dx", x, rms.dx, rms_loss);
  expect_gradient("rmsnorm dgamma", gamma, rms.dgamma, rms_loss);
  EXPECT_EQ(rms.dbeta.size(), 0u);
}

TEST(ReferenceGradients, Softmax) {
  Tensor x = random({2, 2, 6}, 1, -3, 3);
  const Tensor c = random({2, 2, 6}, 2);
  const Tensor dx = softmax_backward(softmax_forward(x), c);
  expect_gradient("softmax", x, dx, [&] { return dot(c, softmax_forward(x)); });
}

TEST(ReferenceGradients, AttentionMultiHeadGroupedQueryCausalAndFull) {
  for (std::uint32_t kv : {4u, 2u, 1u})
    for (bool causal : {true, false}) {
      const AttentionShape at{4, kv, causal};
      const std::uint64_t hd = 3;
      Tensor q = random({2, 4, 4 * hd}, 1), k = random({2, 4, kv * hd}, 2), v = random({2, 4, kv * hd}, 3);
      const Tensor c = random({2, 4, 4 * hd}, 4);
      const AttentionGrads g = attention_backward(q, k, v, c, at);
      auto loss = [&] { return dot(c, attention_forward(q, k, v, at)); };
      SCOPED_TRACE(testing::Message() << "kv_heads " << kv << (causal ? " causal" : " full"));
      expect_gradient("dq", q, g.dq, loss);
      expect_gradient("dk", k, g.dk, loss);
      expect_gradient("dv", v, g.dv, loss);
    }
}

TEST(ReferenceGradients, CrossEntropyIsTheMeanOverRows) {
  Tensor x = random({2, 3, 5}, 1, -2, 2);
  const TokenIds labels{{2, 3, 0}, {0, 4, 2, 2, 1, 3}};
  const Tensor dx = cross_entropy_backward(x, labels);
  expect_gradient("cross_entropy", x, dx, [&] { return cross_entropy_forward(x, labels).value(0); });
  // The loss itself: mean of log-sum-exp minus the label's logit.
  double expected = 0;
  for (std::uint64_t r = 0; r < 6; ++r) {
    double s = 0;
    for (std::uint64_t j = 0; j < 5; ++j) s += std::exp(x.value(x.at(r, j)));
    expected += std::log(s) - x.value(x.at(r, labels.ids[r]));
  }
  EXPECT_NEAR(cross_entropy_forward(x, labels).value(0), expected / 6, 1e-14);
}

// Rounding points: hand-computed results in the storage formats.

Tensor values(Format f, const Shape& s, std::vector<double> v) { return Tensor::of_values(f, s, v); }

TEST(ReferenceRounding, LinearAccumulatesInFp32AndRoundsOnce) {
  const double t11 = std::ldexp(1.0, -11), t9 = std::ldexp(1.0, -9);
  // fp16: 1 + 2^-11 + 2^-11 = 1 + 2^-10 in fp32, one fp16 ulp above 1 (0x3C01); an fp16
  // accumulator would round 1 + 2^-11 to 1 (tie to even) twice and give 0x3C00.
  const Tensor w16 = values(Format::FP16, matrix_shape(3, 1), {1, 1, 1});
  EXPECT_EQ(linear_forward(values(Format::FP16, {1, 1, 3}, {1, t11, t11}), w16, nullptr).bits(0), 0x3C01u);
  // The bias starts the chain: 1 + 2^-11 is a tie, rounded once to even.
  const Tensor b16 = values(Format::FP16, vector_shape(1), {1});
  EXPECT_EQ(linear_forward(values(Format::FP16, {1, 1, 1}, {t11}), values(Format::FP16, matrix_shape(1, 1), {1}), &b16)
                .bits(0),
            0x3C00u);
  // bf16: 1 + 2^-9 + 2^-9 = 1 + 2^-8 is a tie between 0x3F80 and 0x3F81: to even, 0x3F80;
  // with a third 2^-9 it is 1 + 3 x 2^-9, above the tie: 0x3F81.
  const Tensor w3 = values(Format::BF16, matrix_shape(3, 1), {1, 1, 1});
  const Tensor w4 = values(Format::BF16, matrix_shape(4, 1), {1, 1, 1, 1});
  EXPECT_EQ(linear_forward(values(Format::BF16, {1, 1, 3}, {1, t9, t9}), w3, nullptr).bits(0), 0x3F80u);
  EXPECT_EQ(linear_forward(values(Format::BF16, {1, 1, 4}, {1, t9, t9, t9}), w4, nullptr).bits(0), 0x3F81u);
  // Weight gradients stay in fp32: dw = 1 x 1 + 1 x 2^-9 + 1 x 2^-9 = 1 + 2^-8 (0x3F808000),
  // which bf16 cannot hold.
  const Tensor x = values(Format::BF16, {1, 3, 1}, {1, 1, 1});
  const Tensor dy = values(Format::BF16, {1, 3, 1}, {1, t9, t9});
  const LinearGrads g = linear_backward(x, values(Format::BF16, matrix_shape(1, 1), {1}), dy, true);
  EXPECT_EQ(g.dw.format(), Format::FP32);
  EXPECT_EQ(g.dw.bits(0), 0x3F808000u);
  EXPECT_EQ(g.db.bits(0), 0x3F808000u);
}

TEST(ReferenceRounding, ElementwiseAndEmbedding) {
  const double t11 = std::ldexp(1.0, -11);
  // add in fp16: one rounding (tie to even).
  EXPECT_EQ(
      add_forward(values(Format::FP16, vector_shape(2), {1, 1}), values(Format::FP16, vector_shape(2), {t11, 3 * t11}))
          .bits(0),
      0x3C00u);
  EXPECT_EQ(
      add_forward(values(Format::FP16, vector_shape(2), {1, 1}), values(Format::FP16, vector_shape(2), {t11, 3 * t11}))
          .bits(1),
      0x3C02u);
  // relu: -0 and negatives give +0; NaN propagates.
  Tensor r(Format::BF16, vector_shape(4));
  r.set_bits(0, 0x8000);
  r.set_bits(1, 0xBF80);  // -1
  r.set_bits(2, 0x3F80);  // 1
  r.set_bits(3, 0x7FC1);  // NaN
  const Tensor ry = activation_forward(Activation::Relu, r);
  EXPECT_EQ(ry.bits(0), 0u);
  EXPECT_EQ(ry.bits(1), 0u);
  EXPECT_EQ(ry.bits(2), 0x3F80u);
  EXPECT_EQ(ry.bits(3), 0x7FC1u);
  // Embedding with positions: table + position in fp16, rounded once.
  const Tensor table = values(Format::FP16, matrix_shape(2, 1), {1, 2});
  const Tensor pos = values(Format::FP16, matrix_shape(2, 1), {t11, 3 * t11});
  const Tensor e = embedding_forward(TokenIds{{1, 2, 0}, {0, 0}}, table, &pos);
  EXPECT_EQ(e.bits(0), 0x3C00u);
  EXPECT_EQ(e.bits(1), 0x3C02u);
}

TEST(ReferenceRounding, NonlinearKindsComputeInFp32AndRoundOnce) {
  // GELU, SiLU and RMSNorm in fp16/bf16 equal the exact function rounded once wherever the fp32
  // evaluation cannot straddle a rounding boundary (checked: more than 2^-16 relative away).
  for (Format f : {Format::FP16, Format::BF16}) {
    const Tensor x = Tensor::uniform(f, {1, 8, 8}, -4, 4, 11);
    const Tensor gelu = activation_forward(Activation::Gelu, x), silu = activation_forward(Activation::Silu, x);
    const Tensor gamma = Tensor::filled(f, vector_shape(8), 1.0);
    const Tensor rms = rmsnorm_forward(x, gamma, 0.0);
    const Arith S(f);
    int checked = 0;
    auto check = [&](double exact, Bits got, const char* what, std::size_t i) {
      const Bits want = S.of(exact);
      const double lo = S.value(want) - ulp(f, exact) / 2, hi = S.value(want) + ulp(f, exact) / 2;
      if (std::fabs(exact - lo) < std::fabs(exact) * 0x1p-16 || std::fabs(exact - hi) < std::fabs(exact) * 0x1p-16)
        return;
      ++checked;
      EXPECT_EQ(got, want) << to_string(f) << " " << what << " " << x.value(i);
    };
    for (std::uint64_t r = 0; r < 8; ++r) {
      double ms = 0;
      for (std::uint64_t j = 0; j < 8; ++j) ms += x.value(x.at(r, j)) * x.value(x.at(r, j)) / 8;
      for (std::uint64_t j = 0; j < 8; ++j) {
        const std::size_t i = x.at(r, j);
        const double v = x.value(i);
        check(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))), gelu.bits(i), "gelu", i);
        check(v / (1 + std::exp(-v)), silu.bits(i), "silu", i);
        check(v / std::sqrt(ms), rms.bits(i), "rmsnorm", i);
      }
    }
    EXPECT_GT(checked, 150);
  }
}

TEST(ReferenceRounding, SoftmaxAndCrossEntropyHandCases) {
  // Equal logits: exp(0) = 1, sum 4, recip 0.25: exact in every format.
  const Tensor y = softmax_forward(values(Format::BF16, {1, 1, 4}, {0.5, 0.5, 0.5, 0.5}));
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(y.bits(i), 0x3E80u);  // 0.25
  // Cross-entropy of equal logits over 4 classes, 2 rows, labels 0 and 3: p = 0.25,
  // dlogits = (0.25 - 1) / 2 = -0.375 at the label, 0.125 elsewhere; loss = ln 4 in fp32.
  const Tensor x = values(Format::BF16, {1, 2, 4}, {0, 0, 0, 0, 0, 0, 0, 0});
  const TokenIds labels{{1, 2, 0}, {0, 3}};
  const Tensor loss = cross_entropy_forward(x, labels);
  EXPECT_EQ(loss.format(), Format::FP32);
  EXPECT_EQ(loss.bits(0), 0x3FB17218u);
  const Tensor dx = cross_entropy_backward(x, labels);
  const std::vector<Bits> want{0xBEC0, 0x3E00, 0x3E00, 0x3E00, 0x3E00, 0x3E00, 0x3E00, 0xBEC0};
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(dx.bits(i), want[i]) << i;
}

TEST(ReferenceRounding, LayerNormOfAConstantRowIsBeta) {
  // Centred values are exactly 0: y = 0 x gamma + beta = beta, whatever epsilon.
  const Tensor x = values(Format::FP16, {1, 1, 4}, {3, 3, 3, 3});
  const Tensor gamma = values(Format::FP16, vector_shape(4), {2, 2, 2, 2});
  const Tensor beta = values(Format::FP16, vector_shape(4), {0.5, -1, 0.25, 0});
  EXPECT_EQ(layernorm_forward(x, gamma, beta, 1e-5), values(Format::FP16, {1, 1, 4}, {0.5, -1, 0.25, 0}));
}

// Attention: the causal mask and grouped-query attention.

TEST(ReferenceAttention, CausalMaskHidesLaterKeys) {
  const AttentionShape causal{2, 2, true}, full{2, 2, false};
  const Tensor q = Tensor::uniform(Format::BF16, {1, 5, 8}, -1, 1, 1);
  Tensor k = Tensor::uniform(Format::BF16, {1, 5, 8}, -1, 1, 2);
  Tensor v = Tensor::uniform(Format::BF16, {1, 5, 8}, -1, 1, 3);
  const Tensor before = attention_forward(q, k, v, causal), before_full = attention_forward(q, k, v, full);
  // Query 0 sees key 0 only: p = 1 exactly, out = v[0].
  for (std::uint64_t d = 0; d < 8; ++d) EXPECT_EQ(before.bits(before.at(0, d)), v.bits(v.at(0, d)));
  // Changing keys and values at position 3 leaves queries 0..2 bit-identical under the mask.
  for (std::uint64_t d = 0; d < 8; ++d) {
    k.set_value(k.at(3, d), 0.75);
    v.set_value(v.at(3, d), -0.5);
  }
  const Tensor after = attention_forward(q, k, v, causal), after_full = attention_forward(q, k, v, full);
  for (std::uint64_t i = 0; i < 5; ++i) {
    bool same = true, same_full = true;
    for (std::uint64_t d = 0; d < 8; ++d) {
      same = same && before.bits(before.at(i, d)) == after.bits(after.at(i, d));
      same_full = same_full && before_full.bits(before_full.at(i, d)) == after_full.bits(after_full.at(i, d));
    }
    EXPECT_EQ(same, i < 3) << "query " << i;
    EXPECT_FALSE(same_full) << "query " << i;
  }
  // The gradient reaching a key from later queries only: with the mask, dk and dv of position 4
  // come from query 4 alone.
  const Tensor dout = Tensor::uniform(Format::BF16, {1, 5, 8}, -1, 1, 4);
  Tensor dout_last(Format::BF16, dout.shape());
  for (std::uint64_t d = 0; d < 8; ++d) dout_last.set_bits(dout_last.at(4, d), dout.bits(dout.at(4, d)));
  const AttentionGrads g = attention_backward(q, k, v, dout, causal);
  const AttentionGrads g_last = attention_backward(q, k, v, dout_last, causal);
  for (std::uint64_t d = 0; d < 8; ++d) {
    EXPECT_EQ(g.dk.bits(g.dk.at(4, d)), g_last.dk.bits(g_last.dk.at(4, d)));
    EXPECT_EQ(g.dv.bits(g.dv.at(4, d)), g_last.dv.bits(g_last.dv.at(4, d)));
  }
}

// k or v with each kv head repeated for its query heads: [B, S, H hd].
Tensor repeat_heads(const Tensor& kv, std::uint32_t heads, std::uint32_t kv_heads, std::uint64_t hd) {
  Tensor out(kv.format(), Shape{kv.shape().batch, kv.shape().sequence, heads * hd});
  for (std::uint64_t r = 0; r < kv.rows(); ++r)
    for (std::uint32_t h = 0; h < heads; ++h)
      for (std::uint64_t d = 0; d < hd; ++d)
        out.set_bits(out.at(r, h * hd + d), kv.bits(kv.at(r, (h / (heads / kv_heads)) * hd + d)));
  return out;
}

// The repeated heads' gradients summed back per kv head in double, and the sum of their magnitudes.
struct Folded {
  std::vector<double> sum, abs;
};
Folded fold_heads(const Tensor& g, std::uint32_t heads, std::uint32_t kv_heads, std::uint64_t hd) {
  Folded out{std::vector<double>(g.rows() * kv_heads * hd, 0.0), std::vector<double>(g.rows() * kv_heads * hd, 0.0)};
  for (std::uint64_t r = 0; r < g.rows(); ++r)
    for (std::uint32_t h = 0; h < heads; ++h)
      for (std::uint64_t d = 0; d < hd; ++d) {
        const std::size_t i = (r * kv_heads + h / (heads / kv_heads)) * hd + d;
        out.sum[i] += g.value(g.at(r, h * hd + d));
        out.abs[i] += std::fabs(g.value(g.at(r, h * hd + d)));
      }
  return out;
}

TEST(ReferenceAttention, GroupedQueryEqualsMultiHeadWithRepeatedKvHeads) {
  const std::uint32_t H = 4, KV = 2, group = H / KV;
  const std::uint64_t hd = 4, S = 6;
  for (Format f : {Format::BF16, Format::FP16, Format::FP32, Format::FP64}) {
    SCOPED_TRACE(to_string(f));
    const Tensor q = Tensor::uniform(f, {2, S, H * hd}, -1, 1, 1);
    const Tensor k = Tensor::uniform(f, {2, S, KV * hd}, -1, 1, 2);
    const Tensor v = Tensor::uniform(f, {2, S, KV * hd}, -1, 1, 3);
    const Tensor dout = Tensor::uniform(f, {2, S, H * hd}, -1, 1, 4);
    const Tensor kr = repeat_heads(k, H, KV, hd), vr = repeat_heads(v, H, KV, hd);
    const AttentionShape gqa{H, KV, true}, mha{H, H, true};
    // Forward and dq are bit-identical: the same operations on the same values.
    EXPECT_EQ(attention_forward(q, k, v, gqa), attention_forward(q, kr, vr, mha));
    const AttentionGrads g = attention_backward(q, k, v, dout, gqa);
    const AttentionGrads m = attention_backward(q, kr, vr, dout, mha);
    EXPECT_EQ(g.dq, m.dq);
    // dk, dv: GQA is one chain over (query head, query); multi-head rounds each head's chain to
    // the storage format, and the heads are summed here. With storage = accumulation (fp32,
    // fp64) that is another order of one sum of group x S terms: the reduction tolerance, with
    // |term| <= 4 for dk (|dS| = |p (dP - c) / sqrt(hd)| <= (4 + 4) / 2, |q| <= 1) and <= 1 for
    // dv (|p dout| <= 1). In fp16/bf16 each head's part is also rounded: half an ulp each.
    for (const auto& [got, parts, term] : {std::tuple{&g.dk, &m.dk, 4.0}, std::tuple{&g.dv, &m.dv, 1.0}}) {
      const Folded folded = fold_heads(*parts, H, KV, hd);
      for (std::size_t i = 0; i < got->size(); ++i) {
        double allowed = reduction_tolerance(f, accumulation_of(f), group * S, group * S * term, folded.sum[i]);
        if (f == Format::FP16 || f == Format::BF16) allowed += group * ulp(f, folded.abs[i]) / 2;
        EXPECT_NEAR(got->value(i), folded.sum[i], allowed) << got->index_name(i);
      }
    }
  }
}

TEST(ReferenceErrors, BadIdsAndShapes) {
  const Tensor table = Tensor::uniform(Format::FP32, matrix_shape(4, 2), -1, 1, 1);
  try {
    (void)embedding_forward(TokenIds{{1, 3, 0}, {0, 1, 4}}, table, nullptr);
    FAIL() << "expected an InputError";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("id 4 at sample 0, position 2 is outside [0, 4)"), std::string::npos)
        << e.what();
  }
  const Tensor logits = Tensor::uniform(Format::FP32, {1, 2, 3}, -1, 1, 1);
  EXPECT_THROW((void)cross_entropy_forward(logits, TokenIds{{1, 2, 0}, {0, 3}}), sim::InputError);
  EXPECT_THROW((void)cross_entropy_forward(logits, TokenIds{{1, 1, 0}, {0}}), std::invalid_argument);
  const Tensor x = Tensor::uniform(Format::FP32, {1, 2, 3}, -1, 1, 1);
  EXPECT_THROW((void)linear_forward(x, Tensor::uniform(Format::FP32, matrix_shape(4, 2), -1, 1, 1), nullptr),
               std::invalid_argument);
  EXPECT_THROW((void)linear_forward(x, Tensor::uniform(Format::BF16, matrix_shape(3, 2), -1, 1, 1), nullptr),
               std::invalid_argument);
  EXPECT_THROW((void)attention_forward(x, x, x, AttentionShape{2, 2, true}), std::invalid_argument);
  EXPECT_THROW((void)add_forward(x, Tensor::uniform(Format::FP32, {1, 3, 2}, -1, 1, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace wafersim::models::reference::reference_layers_test
