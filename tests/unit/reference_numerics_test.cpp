// The host reference's foundations: formats, arithmetic (rsqrt, log), the generator, tensors,
// comparisons and the tolerance rule for reductions in another order.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "hw/numerics/softfloat.h"
#include "models/reference/arith.h"
#include "models/reference/compare.h"
#include "models/reference/linear.h"
#include "models/reference/norms.h"
#include "models/reference/random.h"
#include "models/reference/softmax.h"
#include "models/reference/tensor.h"
#include "models/reference/tolerance.h"

namespace wafersim::models::reference::reference_numerics_test {
namespace {

double f32_value(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(ReferenceFormat, UlpAndOrdinal) {
  EXPECT_EQ(ulp(Format::FP16, 1.0), std::ldexp(1.0, -10));
  EXPECT_EQ(ulp(Format::BF16, 1.0), std::ldexp(1.0, -7));
  EXPECT_EQ(ulp(Format::FP32, 1.5), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp(Format::FP32, 0.0), std::ldexp(1.0, -149));
  EXPECT_EQ(ulp(Format::FP16, 1e-7), std::ldexp(1.0, -24));  // subnormal spacing
  EXPECT_EQ(unit_roundoff(Format::BF16), std::ldexp(1.0, -8));
  // -0 sits just below +0; one step above 1.0 is one ordinal away.
  EXPECT_EQ(ordinal(Format::FP16, 0x8000) + 1, ordinal(Format::FP16, 0x0000));
  EXPECT_EQ(ordinal(Format::FP16, 0x3C01) - ordinal(Format::FP16, 0x3C00), 1);
  EXPECT_EQ(ordinal(Format::FP32, 0x80000001) + 2, ordinal(Format::FP32, 0x00000000));
}

TEST(ReferenceArith, OneRoundingPerOperationInTheStorageFormat) {
  const Arith h(Format::FP16);
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even. 1 + 3 x 2^-11: to 1 + 2^-9.
  EXPECT_EQ(h.add(h.of(1.0), h.of(std::ldexp(1.0, -11))), 0x3C00u);
  EXPECT_EQ(h.add(h.of(1.0), h.of(3 * std::ldexp(1.0, -11))), 0x3C02u);
  // Fused: 1 x 1 + 2^-11 in fp16 rounds once (tie, to even); fp32 keeps it.
  EXPECT_EQ(h.fma(0x3C00, 0x3C00, h.of(std::ldexp(1.0, -11))), 0x3C00u);
  const Arith f(Format::FP32);
  EXPECT_EQ(f.value(f.fma(f.of(1.0), f.of(1.0), f.of(std::ldexp(1.0, -11)))), 1.0 + std::ldexp(1.0, -11));
  // Widening is exact, narrowing rounds once.
  EXPECT_EQ(f.from(Format::BF16, 0x3F81), 0x3F810000u);
  EXPECT_EQ(Arith(Format::BF16).from(Format::FP32, 0x3F808000), 0x3F80u);  // tie to even
  EXPECT_EQ(Arith(Format::BF16).from(Format::FP32, 0x3F818000), 0x3F82u);
  EXPECT_EQ(Arith(Format::FP64).value(Arith(Format::FP64).from(Format::FP16, 0x3555)), h.value(0x3555));
}

TEST(ReferenceArith, RsqrtNewtonSequenceIsWithinTwoUlpAndExactOnPowersOfFour) {
  const Arith f(Format::FP32);
  // The documented first guess and three Newton steps land on these exact results.
  EXPECT_EQ(f.value(f.rsqrt(f.of(4.0))), 0.5);
  EXPECT_EQ(f.value(f.rsqrt(f.of(1.0))), 1.0);
  EXPECT_EQ(f.value(f.rsqrt(f.of(0.0625))), 4.0);
  EXPECT_EQ(f.rsqrt(f.of(0.0)), 0x7F800000u);
  EXPECT_EQ(f.rsqrt(0x80000000u), 0xFF800000u);
  EXPECT_EQ(f.rsqrt(f.of(-1.0)), 0x7FC00000u);
  EXPECT_EQ(f.rsqrt(0x7F800000u), 0u);
  SplitMix64 rng(7);
  double worst = 0;
  for (int i = 0; i < 20000; ++i) {
    // Normal and subnormal inputs over the whole exponent range.
    const auto bits = static_cast<std::uint32_t>(rng.below(0x7F800000u - 1) + 1);
    const double exact = 1.0 / std::sqrt(f32_value(bits));
    const double got = f.value(f.rsqrt(bits));
    worst = std::max(worst, std::fabs(got - exact) / ulp(Format::FP32, exact));
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_GT(worst, 0.5);  // not the correctly rounded result: the sequence is what is specified
}

TEST(ReferenceArith, LogDoubleIsAccurateAndSpecialCasesHold) {
  for (double x : {1e-300, 1e-10, 0.3, 0.70710678, 1.0, 1.0000001, 2.0, 10.0, 12345.678, 1e300}) {
    EXPECT_NEAR(log_double(x), std::log(x), std::ldexp(std::fabs(std::log(x)), -50) + 1e-300) << x;
  }
  EXPECT_EQ(log_double(1.0), 0.0);
  EXPECT_EQ(log_double(0.0), -HUGE_VAL);
  EXPECT_TRUE(std::isnan(log_double(-1.0)));
  EXPECT_EQ(log_double(HUGE_VAL), HUGE_VAL);
  const Arith f(Format::FP32);
  EXPECT_EQ(f.log(f.of(4.0)), 0x3FB17218u);  // ln 4 rounded once to fp32
}

TEST(ReferenceRandom, SplitMix64IsTheReferenceSequence) {
  // splitmix64 with seed 0: the first outputs of the published generator.
  SplitMix64 r(0);
  EXPECT_EQ(r.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(r.next(), 0x6E789E6AA1B965F4ULL);
  SplitMix64 u(42);
  for (int i = 0; i < 1000; ++i) {
    const double v = u.uniform();
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
    ASSERT_LT(u.below(10), 10u);
  }
  EXPECT_EQ(derive_seed(1, "fc1.weight"), derive_seed(1, "fc1.weight"));
  EXPECT_NE(derive_seed(1, "fc1.weight"), derive_seed(1, "fc2.weight"));
  EXPECT_NE(derive_seed(1, "fc1.weight"), derive_seed(2, "fc1.weight"));
}

TEST(ReferenceTensor, UniformIsDeterministicAndRoundedToTheFormat) {
  const Shape s{2, 3, 4};
  const Tensor a = Tensor::uniform(Format::BF16, s, -1, 1, 9);
  EXPECT_EQ(a, Tensor::uniform(Format::BF16, s, -1, 1, 9));
  EXPECT_NE(a, Tensor::uniform(Format::BF16, s, -1, 1, 10));
  SplitMix64 rng(9);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.bits(i), hw::numerics::from_double(hw::DType::BF16, rng.uniform(-1, 1)));
    EXPECT_LE(std::fabs(a.value(i)), 1.0);
  }
  EXPECT_EQ(a.index_name(a.at(4, 3)), "[1, 1, 3]");
  const Tensor tail = a.batch_slice(1, 1);
  EXPECT_EQ(tail.shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(tail.bits(0), a.bits(12));
  EXPECT_THROW(a.batch_slice(1, 2), std::invalid_argument);
  EXPECT_THROW(Tensor(Format::FP32, Shape{1, 1, 0}), std::invalid_argument);
  EXPECT_EQ(a.converted(Format::FP32).converted(Format::BF16), a);
}

TEST(ReferenceCompare, ReportsTheWorstElementWithIndexValuesAndUlps) {
  Tensor e = Tensor::of_values(Format::FP16, Shape{1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor a = e;
  EXPECT_TRUE(compare_exact(e, a).ok());
  a.set_bits(4, e.bits(4) + 3);  // 5 + 3 ulp
  a.set_bits(1, e.bits(1) + 1);  // 2 + 1 ulp
  const Comparison c = compare_exact(e, a);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.differing, 2u);
  EXPECT_EQ(c.failures, 2u);
  EXPECT_EQ(c.worst, 4u);
  EXPECT_EQ(c.worst_index, "[0, 1, 1]");
  EXPECT_EQ(c.expected, 5.0);
  EXPECT_EQ(c.actual, 5.0 + 3 * std::ldexp(1.0, -8));
  EXPECT_EQ(c.ulps, 3.0);
  EXPECT_DOUBLE_EQ(c.relative, 3 * std::ldexp(1.0, -8) / 5);
  EXPECT_NE(c.describe().find("worst [0, 1, 1]: expected 5 got 5.01171875 (3 ulp"), std::string::npos) << c.describe();
  // Within an allowance of 0.01: only element 4 (error 0.0117) fails.
  const Comparison w = compare_within(e, a, 0.01, 0.0);
  EXPECT_EQ(w.failures, 1u);
  EXPECT_EQ(w.worst, 4u);
  EXPECT_TRUE(compare_within(e, a, 0.0, 0.003).ok());
  EXPECT_FALSE(compare_within(e, a, 0.0, 0.002).ok());
  // -0 and +0 differ in bits but not in value; NaN only matches NaN.
  Tensor z = e;
  z.set_bits(0, 0x8000);
  Tensor p = e;
  p.set_bits(0, 0x0000);
  EXPECT_FALSE(compare_exact(p, z).ok());
  EXPECT_TRUE(compare_within(p, z, 0.0, 0.0).ok());
  z.set_bits(0, 0x7E00);
  EXPECT_FALSE(compare_within(p, z, 1e9, 0.0).ok());
  EXPECT_THROW(compare_exact(e, e.converted(Format::FP32)), std::invalid_argument);
}

// y = x W computed with k in decreasing order (still fp32 accumulation), rounded once.
Tensor linear_reversed(const Tensor& x, const Tensor& w, Format accumulate_in) {
  const Arith A(accumulate_in), S(x.format());
  Tensor y(x.format(), Shape{x.shape().batch, x.shape().sequence, w.cols()});
  for (std::uint64_t r = 0; r < x.rows(); ++r)
    for (std::uint64_t n = 0; n < w.cols(); ++n) {
      Bits acc = Arith::kZero;
      for (std::uint64_t k = x.cols(); k-- > 0;)
        acc = A.fma(A.from(x.format(), x.bits(x.at(r, k))), A.from(w.format(), w.bits(w.at(k, n))), acc);
      y.set_bits(y.at(r, n), S.from(accumulate_in, acc));
    }
  return y;
}

TEST(ReferenceTolerance, AnotherSummationOrderStaysWithinTheReductionBound) {
  for (Format f : {Format::FP32, Format::BF16, Format::FP16}) {
    const Tensor x = Tensor::uniform(f, Shape{2, 4, 96}, -1, 1, 1);
    const Tensor w = Tensor::uniform(f, matrix_shape(96, 8), -1, 1, 2);
    const Tensor y = linear_forward(x, w, nullptr);
    const Tensor z = linear_reversed(x, w, Format::FP32);
    const std::vector<double> allowed = linear_tolerance(x, w, nullptr, y);
    const Comparison c = compare_within(y, z, allowed);
    EXPECT_TRUE(c.ok()) << to_string(f) << ": " << c.describe();
    for (std::size_t i = 0; i < y.size(); ++i) {
      // The bound is tight enough to matter: a few ulp of the result, not a blanket allowance.
      EXPECT_LE(allowed[i], 2 * ulp(f, std::fabs(y.value(i))) + 2 * 96 * 2 * unit_roundoff(Format::FP32) * 96);
    }
    if (f == Format::FP32) {
      EXPECT_GT(c.differing, 0u) << "the two orders should differ somewhere in fp32";
    }
  }
}

TEST(ReferenceTolerance, CatchesAccumulationInTheStorageFormat) {
  // fp16 accumulation (each fma rounded to fp16) is not an order change: it exceeds the bound.
  const Tensor x = Tensor::uniform(Format::FP16, Shape{2, 4, 96}, -1, 1, 3);
  const Tensor w = Tensor::uniform(Format::FP16, matrix_shape(96, 8), -1, 1, 4);
  const Tensor y = linear_forward(x, w, nullptr);
  const Tensor z = linear_reversed(x, w, Format::FP16);
  EXPECT_FALSE(compare_within(y, z, linear_tolerance(x, w, nullptr, y)).ok());
}

// softmax with the sum of exponentials taken in decreasing index order.
Tensor softmax_reversed(const Tensor& x) {
  const Format s = x.format(), a = Format::FP32;
  const Arith A(a), S(s);
  Tensor y(s, x.shape());
  for (std::uint64_t r = 0; r < x.rows(); ++r) {
    Bits m = A.from(s, x.bits(x.at(r, 0)));
    for (std::uint64_t j = 1; j < x.cols(); ++j) m = A.max(m, A.from(s, x.bits(x.at(r, j))));
    std::vector<Bits> e(x.cols());
    Bits l = Arith::kZero;
    for (std::uint64_t j = x.cols(); j-- > 0;) {
      e[j] = A.exp(A.sub(A.from(s, x.bits(x.at(r, j))), m));
      l = A.add(l, e[j]);
    }
    const Bits inv = A.recip(l);
    for (std::uint64_t j = 0; j < x.cols(); ++j) y.set_bits(y.at(r, j), S.from(a, A.mul(e[j], inv)));
  }
  return y;
}

// rmsnorm (gamma 1) with the sum of squares in decreasing index order.
Tensor rmsnorm_reversed(const Tensor& x, double epsilon) {
  const Format s = x.format(), a = Format::FP32;
  const Arith A(a), S(s);
  Tensor y(s, x.shape());
  const Bits inv_d = A.of(1.0 / static_cast<double>(x.cols())), eps = A.of(epsilon), one = A.of(1.0);
  for (std::uint64_t r = 0; r < x.rows(); ++r) {
    Bits sq = Arith::kZero;
    for (std::uint64_t j = x.cols(); j-- > 0;) {
      const Bits v = A.from(s, x.bits(x.at(r, j)));
      sq = A.fma(v, v, sq);
    }
    const Bits rstd = A.rsqrt(A.add(A.mul(sq, inv_d), eps));
    for (std::uint64_t j = 0; j < x.cols(); ++j)
      y.set_bits(y.at(r, j), S.from(a, A.mul(A.mul(A.from(s, x.bits(x.at(r, j))), rstd), one)));
  }
  return y;
}

TEST(ReferenceTolerance, SoftmaxAndRmsNormInAnotherOrderStayWithinTheRelativeBound) {
  for (Format f : {Format::FP32, Format::BF16, Format::FP16}) {
    SCOPED_TRACE(to_string(f));
    const std::uint64_t n = 40;
    const Tensor x = Tensor::uniform(f, Shape{4, 8, n}, -3, 3, 5);
    const Tensor y = softmax_forward(x), z = softmax_reversed(x);
    const Tensor ry = rmsnorm_forward(x, Tensor::filled(f, vector_shape(n), 1.0), 1e-5), rz = rmsnorm_reversed(x, 1e-5);
    std::vector<double> soft(y.size()), rms(y.size());
    for (std::size_t i = 0; i < y.size(); ++i) {
      soft[i] = relative_tolerance(f, Format::FP32, n, 2, 2, y.value(i));
      rms[i] = relative_tolerance(f, Format::FP32, n, 1, 8, ry.value(i));
    }
    const Comparison cs = compare_within(y, z, soft), cr = compare_within(ry, rz, rms);
    EXPECT_TRUE(cs.ok()) << cs.describe();
    EXPECT_TRUE(cr.ok()) << cr.describe();
    if (f == Format::FP32) {
      EXPECT_GT(cs.differing, 0u);
      EXPECT_GT(cr.differing, 0u);
    }
  }
}

TEST(ReferenceTolerance, FormulaValues) {
  const double u = std::ldexp(1.0, -24);
  EXPECT_DOUBLE_EQ(gamma(10, Format::FP32), 10 * u / (1 - 10 * u));
  EXPECT_TRUE(std::isinf(gamma(std::uint64_t{1} << 8, Format::BF16)));
  // fp32 result of an fp32 reduction: no final rounding term.
  EXPECT_DOUBLE_EQ(reduction_tolerance(Format::FP32, Format::FP32, 10, 3.0, 1.0), 2 * gamma(10, Format::FP32) * 3);
  // bf16 result: plus one bf16 ulp at the magnitude.
  EXPECT_DOUBLE_EQ(reduction_tolerance(Format::BF16, Format::FP32, 10, 3.0, 1.5),
                   2 * gamma(10, Format::FP32) * 3 + std::ldexp(1.0, -7));
  EXPECT_DOUBLE_EQ(relative_tolerance(Format::FP16, Format::FP32, 8, 2.0, 0, 0.5),
                   2 * gamma(8, Format::FP32) * 0.5 + std::ldexp(1.0, -11));
  EXPECT_DOUBLE_EQ(relative_tolerance(Format::FP32, Format::FP32, 8, 1.0, 2, 0.5),
                   (gamma(8, Format::FP32) + 4 * u) * 0.5);
}

}  // namespace
}  // namespace wafersim::models::reference::reference_numerics_test
