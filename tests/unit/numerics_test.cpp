// FP16, BF16 and FP32 emulation: rounding cases against precomputed bit patterns, and
// cross-checks against the host's IEEE float arithmetic and _Float16 conversions.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "hw/numerics/elementary.h"
#include "hw/numerics/narrow.h"
#include "hw/numerics/softfloat.h"

namespace wafersim::hw::numerics::numerics_test {
namespace {

constexpr DType F16 = DType::F16, BF16 = DType::BF16, F32 = DType::F32;

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float float_of(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
#if defined(__clang__) && __clang_major__ < 15
// clang 14 has no _Float16 on x86 (and its __fp16 needs compiler-rt): binary16 from the host's
// double arithmetic instead, rounding with nearbyint (to nearest-even). Not for NaN.
std::uint16_t host_f16(float f) {
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double x = std::fabs(static_cast<double>(f));
  if (x >= 65520.0) return sign | 0x7c00;  // 65520 and above round to infinity
  int e = 0;
  std::frexp(x, &e);                                   // x = fr * 2^e, fr in [0.5, 1)
  const int q = std::max(e - 1, -14) - 10;             // the binade's quantum (subnormals: 2^-24)
  const double r = std::nearbyint(std::ldexp(x, -q));  // significand in quanta, rounded once
  if (r == 0) return sign;
  if (q == -24 && r < 1024) return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(r));
  int re = 0;
  std::frexp(std::ldexp(r, q), &re);
  const int exp = re - 1;  // the rounded value's binade (one up when r rounded to 2048)
  const auto man = static_cast<std::uint16_t>(std::ldexp(std::ldexp(r, q), 10 - exp) - 1024);
  return static_cast<std::uint16_t>(sign | ((exp + 15) << 10) | man);
}
float host_from_f16(std::uint16_t b) {
  const int e = (b >> 10) & 31, m = b & 0x3ff;
  float v = 0;
  if (e == 31)
    v = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    v = e == 0 ? std::ldexp(static_cast<float>(m), -24) : std::ldexp(static_cast<float>(m | 0x400), e - 25);
  return (b & 0x8000) ? -v : v;
}
#else
std::uint16_t host_f16(float f) {
  _Float16 h = static_cast<_Float16>(f);
  std::uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
float host_from_f16(std::uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return static_cast<float>(h);
}
#endif
// Round-to-nearest-even float -> bfloat16, written independently of the emulation.
std::uint16_t host_bf16(float f) {
  std::uint32_t b = bits_of(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((b >> 16) | 0x40);
  b += 0x7fff + ((b >> 16) & 1);
  return static_cast<std::uint16_t>(b >> 16);
}

TEST(Fp16, TiesRoundToEven) {
  EXPECT_EQ(add(F16, 0x3C00, 0x1000), 0x3C00u);       // 1 + 2^-11: halfway to 1 + 2^-10, stays at even 1.0
  EXPECT_EQ(add(F16, 0x3C01, 0x1000), 0x3C02u);       // 1 + 3 x 2^-11: halfway, goes up to even mantissa 2
  EXPECT_EQ(add(F16, 0x3C00, 0x1001), 0x3C01u);       // just above halfway: up
  EXPECT_EQ(sub(F16, 0x3C00, 0x0C00), 0x3C00u);       // 1 - 2^-12: tie between 1 - 2^-11 (odd) and 1 (even)
  EXPECT_EQ(sub(F16, 0x3C00, 0x0E00), 0x3BFFu);       // 1 - 3 x 2^-13: nearer to 1 - 2^-11
  EXPECT_EQ(convert(F16, F32, 0x3F801000), 0x3C00u);  // f32 1 + 2^-11 -> tie -> 1.0
  EXPECT_EQ(convert(F16, F32, 0x3F803000), 0x3C02u);  // f32 1 + 3 x 2^-11 -> tie -> even
}

TEST(Fp16, Subnormals) {
  EXPECT_EQ(add(F16, 0x0001, 0x0001), 0x0002u);       // 2^-24 + 2^-24
  EXPECT_EQ(mul(F16, 0x0001, 0x3800), 0x0000u);       // 2^-25: tie between 0 and 2^-24 -> 0 (even)
  EXPECT_EQ(mul(F16, 0x0003, 0x3800), 0x0002u);       // 1.5 x 2^-24: tie between 1 and 2 -> 2 (even)
  EXPECT_EQ(mul(F16, 0x8003, 0x3800), 0x8002u);       // the same, negative
  EXPECT_EQ(add(F16, 0x03FF, 0x0001), 0x0400u);       // largest subnormal + smallest = smallest normal
  EXPECT_EQ(mul(F16, 0x0400, 0x3800), 0x0200u);       // smallest normal / 2: exact subnormal
  EXPECT_EQ(convert(F32, F16, 0x0001), 0x33800000u);  // 2^-24 widens exactly
  EXPECT_EQ(convert(F16, F32, 0x33000000), 0x0000u);  // 2^-25 -> tie -> 0
  EXPECT_EQ(convert(F16, F32, 0x33000001), 0x0001u);  // just above 2^-25 -> 2^-24
  EXPECT_EQ(mul(F16, 0x0200, 0x0200), 0x0000u);       // underflow to +0
  EXPECT_EQ(mul(F16, 0x8200, 0x0200), 0x8000u);       // underflow keeps the sign: -0
}

TEST(Fp16, OverflowToInfinity) {
  EXPECT_EQ(add(F16, 0x7BFF, 0x4C00), 0x7C00u);       // 65504 + 16 = 65520: tie, odd max rounds up: inf
  EXPECT_EQ(add(F16, 0x7BFF, 0x4800), 0x7BFFu);       // 65504 + 8: below half an ulp: stays finite
  EXPECT_EQ(mul(F16, 0x7BFF, 0x4000), 0x7C00u);       // 65504 x 2
  EXPECT_EQ(mul(F16, 0xFBFF, 0x4000), 0xFC00u);       // -65504 x 2
  EXPECT_EQ(convert(F16, F32, 0x477FF000), 0x7C00u);  // 65520.0f
  EXPECT_EQ(convert(F16, F32, 0x477FEFFF), 0x7BFFu);  // just below 65520
  EXPECT_EQ(add(F16, 0x7C00, 0x3C00), 0x7C00u);       // inf + 1
}

TEST(Fp16, NanPropagationAndInvalidOperations) {
  EXPECT_EQ(add(F16, 0x7E05, 0x3C00), 0x7E05u);  // quiet NaN passes through
  EXPECT_EQ(add(F16, 0x7C01, 0x3C00), 0x7E01u);  // signaling NaN is quieted
  EXPECT_EQ(add(F16, 0x3C00, 0xFD00), 0xFF00u);  // second operand NaN, sign kept
  EXPECT_EQ(add(F16, 0x7C01, 0x7E05), 0x7E01u);  // the first NaN wins
  EXPECT_EQ(mul(F16, 0x3C00, 0x7E05), 0x7E05u);
  EXPECT_EQ(add(F16, 0x7C00, 0xFC00), 0x7E00u);  // inf - inf: default NaN
  EXPECT_EQ(sub(F16, 0x7C00, 0x7C00), 0x7E00u);
  EXPECT_EQ(mul(F16, 0x0000, 0x7C00), 0x7E00u);  // 0 x inf
  EXPECT_EQ(fma(F16, 0x7C00, 0x0000, 0x3C00), 0x7E00u);
  EXPECT_EQ(fma(F16, 0x7C00, 0x3C00, 0xFC00), 0x7E00u);  // inf - inf inside the fma
  EXPECT_EQ(max(F16, 0x3C00, 0x7E05), 0x7E05u);          // max/min propagate NaN
  EXPECT_EQ(min(F16, 0x7C01, 0x3C00), 0x7E01u);
  EXPECT_EQ(neg(F16, 0x7E05), 0xFE05u);  // negate flips the sign of NaN too
  EXPECT_FALSE(lt(F16, 0x7E00, 0x3C00));
  EXPECT_FALSE(eq(F16, 0x7E00, 0x7E00));
  EXPECT_EQ(convert(F32, F16, 0x7E05), 0x7FC0A000u);  // payload moves to the top
  EXPECT_EQ(convert(F16, F32, 0x7FA00000), 0x7F00u);  // signaling f32 NaN -> quiet f16 NaN, top payload kept
  EXPECT_EQ(recip(F16, 0x7C01), 0x7E01u);
  EXPECT_EQ(exp(F16, 0xFE05), 0xFE05u);
}

TEST(Fp16, SignedZeros) {
  EXPECT_EQ(add(F16, 0x8000, 0x0000), 0x0000u);
  EXPECT_EQ(add(F16, 0x8000, 0x8000), 0x8000u);
  EXPECT_EQ(add(F16, 0x3C00, 0xBC00), 0x0000u);  // x + (-x) = +0
  EXPECT_EQ(max(F16, 0x8000, 0x0000), 0x0000u);
  EXPECT_EQ(min(F16, 0x0000, 0x8000), 0x8000u);
  EXPECT_TRUE(eq(F16, 0x8000, 0x0000));
  EXPECT_FALSE(lt(F16, 0x8000, 0x0000));
  EXPECT_EQ(recip(F16, 0x8000), 0xFC00u);  // 1 / -0 = -inf
}

TEST(Fp16, FmaRoundsOnce) {
  // (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20; minus (1 + 2^-9) leaves 2^-20 = 16 x 2^-24 (subnormal).
  // Rounding the product first would give exactly 0.
  EXPECT_EQ(fma(F16, 0x3C01, 0x3C01, 0xBC02), 0x0010u);
  EXPECT_EQ(add(F16, mul(F16, 0x3C01, 0x3C01), 0xBC02), 0x0000u);
  // Mixed: f16 inputs, f32 accumulation: 1 + (1 + 2^-10)^2 = 2 + 2^-9 + 2^-20 exactly in f32.
  const std::uint32_t b = convert(F32, F16, 0x3C01);
  EXPECT_EQ(fma(F32, b, b, 0x3F800000), bits_of(static_cast<float>(2.0 + std::ldexp(1, -9) + std::ldexp(1, -20))));
}

TEST(Bf16, RoundingCases) {
  EXPECT_EQ(add(BF16, 0x3F80, 0x3B80), 0x3F80u);  // 1 + 2^-8: tie -> even 1.0
  EXPECT_EQ(add(BF16, 0x3F81, 0x3B80), 0x3F82u);  // 1 + 3 x 2^-8: tie -> even
  EXPECT_EQ(convert(BF16, F32, 0x3F808000), 0x3F80u);
  EXPECT_EQ(convert(BF16, F32, 0x3F818000), 0x3F82u);
  EXPECT_EQ(convert(BF16, F32, 0x3F808001), 0x3F81u);
  EXPECT_EQ(mul(BF16, 0x0001, 0x3F00), 0x0000u);  // 2^-134: tie between 0 and the smallest subnormal
  EXPECT_EQ(mul(BF16, 0x0003, 0x3F00), 0x0002u);
  EXPECT_EQ(add(BF16, 0x007F, 0x0001), 0x0080u);  // largest subnormal + smallest = smallest normal
  EXPECT_EQ(add(BF16, 0x7F7F, 0x7B00), 0x7F80u);  // max + half an ulp (2^119): tie, odd -> inf
  EXPECT_EQ(add(BF16, 0x7F7F, 0x7A80), 0x7F7Fu);  // max + a quarter ulp: stays
  EXPECT_EQ(add(BF16, 0x7F80, 0xFF80), 0x7FC0u);  // inf - inf
  EXPECT_EQ(add(BF16, 0x7F81, 0x3F80), 0x7FC1u);  // signaling NaN quieted
  EXPECT_EQ(convert(BF16, F32, 0x7FA00000), 0x7FE0u);
}

TEST(Fp32, RoundingCases) {
  EXPECT_EQ(add(F32, 0x3F800000, 0x33800000), 0x3F800000u);  // 1 + 2^-24: tie -> 1
  EXPECT_EQ(add(F32, 0x3F800001, 0x33800000), 0x3F800002u);  // tie -> even
  EXPECT_EQ(mul(F32, 0x00000001, 0x3F000000), 0x00000000u);  // 2^-150: tie -> 0
  EXPECT_EQ(mul(F32, 0x00000003, 0x3F000000), 0x00000002u);
  EXPECT_EQ(add(F32, 0x7F7FFFFF, 0x73000000), 0x7F800000u);  // max + half an ulp (2^103): inf
  EXPECT_EQ(add(F32, 0x7F7FFFFF, 0x72FFFFFF), 0x7F7FFFFFu);
}

// The emulation against the host's IEEE single precision (SSE: exact IEEE binary32).
TEST(Fp32, AgreesWithHostOnRandomOperands) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<std::uint32_t> any;
  std::uniform_int_distribution<std::uint32_t> near_exp(0x3E000000u, 0x41000000u);
  auto pick = [&](int i) { return i % 3 == 0 ? any(rng) : (near_exp(rng) ^ (i % 2 ? 0x80000000u : 0u)); };
  auto same = [](std::uint32_t emu, float host) {
    return std::isnan(host) ? (emu & 0x7F800000u) == 0x7F800000u && (emu & 0x007FFFFFu) : emu == bits_of(host);
  };
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t a = pick(i), b = pick(i + 1), c = pick(i + 2);
    const float fa = float_of(a), fb = float_of(b), fc = float_of(c);
    ASSERT_TRUE(same(reference::add(F32, a, b), fa + fb)) << std::hex << a << " + " << b;
    ASSERT_TRUE(same(reference::sub(F32, a, b), fa - fb)) << std::hex << a << " - " << b;
    ASSERT_TRUE(same(reference::mul(F32, a, b), fa * fb)) << std::hex << a << " * " << b;
    ASSERT_TRUE(same(reference::fma(F32, a, b, c), std::fmaf(fa, fb, fc))) << std::hex << a << " * " << b << " + " << c;
    // The public functions (host fast path) give exactly the reference bits, NaN rules included.
    ASSERT_EQ(add(F32, a, b), reference::add(F32, a, b)) << std::hex << a << " + " << b;
    ASSERT_EQ(sub(F32, a, b), reference::sub(F32, a, b)) << std::hex << a << " - " << b;
    ASSERT_EQ(mul(F32, a, b), reference::mul(F32, a, b)) << std::hex << a << " * " << b;
    ASSERT_EQ(fma(F32, a, b, c), reference::fma(F32, a, b, c)) << std::hex << a << " * " << b << " + " << c;
    ASSERT_TRUE(same(recip(F32, a), static_cast<float>(1.0 / static_cast<double>(fa)))) << std::hex << a;
    ASSERT_EQ(lt(F32, a, b), fa < fb);
    ASSERT_EQ(eq(F32, a, b), fa == fb);
  }
}

TEST(Fp32, FastPathMatchesReferenceOnSpecialValues) {
  const std::uint32_t specials[] = {0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000,
                                    0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
                                    0x7FC00000, 0xFFC00001, 0x7F800001, 0x33800000, 0x4B800000, 0x3EAAAAAB};
  for (auto a : specials)
    for (auto b : specials) {
      ASSERT_EQ(add(F32, a, b), reference::add(F32, a, b)) << std::hex << a << " " << b;
      ASSERT_EQ(sub(F32, a, b), reference::sub(F32, a, b)) << std::hex << a << " " << b;
      ASSERT_EQ(mul(F32, a, b), reference::mul(F32, a, b)) << std::hex << a << " " << b;
      for (auto c : specials)
        ASSERT_EQ(fma(F32, a, b, c), reference::fma(F32, a, b, c)) << std::hex << a << " " << b << " " << c;
    }
}

// The 16-bit fast paths (host double, rounded to odd) give exactly the reference bits: random
// patterns over the whole encoding (subnormals, infinities and NaNs included), operands near
// one exponent (long carries, ties and cancellation), and products cancelled by the addend.
TEST(Fp16Bf16, FastPathMatchesReferenceBitForBit) {
  std::mt19937 rng(4242);
  std::uniform_int_distribution<std::uint32_t> any16(0, 0xffff), low(0, 0x3ff), sign(0, 1);
  for (DType t : {F16, BF16}) {
    const std::uint32_t one = t == F16 ? 0x3C00 : 0x3F80;
    for (int i = 0; i < 400000; ++i) {
      std::uint32_t a = any16(rng), b = any16(rng), c = any16(rng);
      if (i % 3 == 1) {  // near 1: long carries and ties
        a = (one + low(rng) - 0x200) | sign(rng) << 15;
        b = (one + low(rng) - 0x200) | sign(rng) << 15;
        c = (one + low(rng) - 0x200) | sign(rng) << 15;
      } else if (i % 3 == 2) {  // c close to -a*b: cancellation
        c = neg(t, mul(t, a, b)) ^ (low(rng) & 3);
      }
      ASSERT_EQ(add(t, a, b), reference::add(t, a, b))
          << (t == F16 ? "f16" : "bf16") << std::hex << " " << a << " + " << b;
      ASSERT_EQ(sub(t, a, b), reference::sub(t, a, b))
          << (t == F16 ? "f16" : "bf16") << std::hex << " " << a << " - " << b;
      ASSERT_EQ(mul(t, a, b), reference::mul(t, a, b))
          << (t == F16 ? "f16" : "bf16") << std::hex << " " << a << " * " << b;
      ASSERT_EQ(fma(t, a, b, c), reference::fma(t, a, b, c))
          << (t == F16 ? "f16" : "bf16") << std::hex << " " << a << " * " << b << " + " << c;
    }
    // Every pair of a few special encodings, and every third operand of them.
    const std::uint32_t specials[] = {0x0000,       0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x007F, 0x0080, one,
                                      one | 0x8000, 0x7BFF, 0xFBFF, 0x7F7F, 0xFF7F, 0x7C00, 0xFC00, 0x7F80, 0xFF80,
                                      0x7E00,       0x7FC0, 0x7C01, 0x7F81, 0x3555, 0x1400, 0x0C00};
    for (auto x : specials)
      for (auto y : specials) {
        ASSERT_EQ(add(t, x, y), reference::add(t, x, y))
            << (t == F16 ? "f16" : "bf16") << std::hex << " " << x << " " << y;
        ASSERT_EQ(sub(t, x, y), reference::sub(t, x, y))
            << (t == F16 ? "f16" : "bf16") << std::hex << " " << x << " " << y;
        ASSERT_EQ(mul(t, x, y), reference::mul(t, x, y))
            << (t == F16 ? "f16" : "bf16") << std::hex << " " << x << " " << y;
        for (auto z : specials)
          ASSERT_EQ(fma(t, x, y, z), reference::fma(t, x, y, z))
              << (t == F16 ? "f16" : "bf16") << std::hex << " " << x << " " << y << " " << z;
      }
  }
}

// Results at the edges of the normal range, where the fast path's rounding hands over to the
// general one: products and sums near the smallest normal (and the largest subnormal) and near
// the largest finite value (rounding up to infinity), each side of the boundary.
TEST(Fp16Bf16, FastPathMatchesReferenceAtTheNormalRangeEdges) {
  std::mt19937 rng(9090);
  for (DType t : {F16, BF16}) {
    const int m = t == F16 ? 10 : 7, bias = t == F16 ? 15 : 127;
    const std::uint32_t max_exp = t == F16 ? 0x1f : 0xff;
    std::uniform_int_distribution<std::uint32_t> frac(0, (1u << m) - 1), sign(0, 1), ebits(1, max_exp - 1);
    std::uniform_int_distribution<int> jitter(-3, 3);
    auto encode = [&](std::uint32_t e, std::uint32_t f) { return sign(rng) << 15 | e << m | f; };
    // Addends at the edges: largest subnormals, smallest normals, largest finite values.
    const std::uint32_t edges[] = {(1u << m) - 1,
                                   1u << m,
                                   (1u << m) + 1,
                                   ((max_exp - 1) << m) | ((1u << m) - 1),
                                   ((max_exp - 1) << m) | ((1u << m) - 2),
                                   (max_exp - 1) << m};
    for (int i = 0; i < 200000; ++i) {
      // Exponents with a product near 2^emin (e_a + e_b - 2 bias = 1 - bias) or near 2^(bias + 1).
      const std::uint32_t ea = ebits(rng);
      const int target = i % 2 ? 1 + jitter(rng) : 2 * bias + 1 + jitter(rng);
      const int eb = target - static_cast<int>(ea) + bias;
      if (eb < 1 || eb > static_cast<int>(max_exp) - 1) continue;
      const std::uint32_t a = encode(ea, frac(rng)), b = encode(static_cast<std::uint32_t>(eb), frac(rng));
      const std::uint32_t c = (i % 3 ? edges[static_cast<std::size_t>(i) % 6] : frac(rng)) | sign(rng) << 15;
      ASSERT_EQ(mul(t, a, b), reference::mul(t, a, b))
          << (t == F16 ? "f16" : "bf16") << std::hex << " " << a << " * " << b;
      ASSERT_EQ(fma(t, a, b, c), reference::fma(t, a, b, c))
          << (t == F16 ? "f16" : "bf16") << std::hex << " " << a << " * " << b << " + " << c;
      ASSERT_EQ(add(t, c, a), reference::add(t, c, a))
          << (t == F16 ? "f16" : "bf16") << std::hex << " " << c << " + " << a;
    }
    // Every sum of two edge values.
    for (std::uint32_t x : edges)
      for (std::uint32_t y : edges)
        for (std::uint32_t s : {0u, 0x8000u}) {
          ASSERT_EQ(add(t, x, y | s), reference::add(t, x, y | s)) << std::hex << x << " + " << (y | s);
          ASSERT_EQ(sub(t, x, y | s), reference::sub(t, x, y | s)) << std::hex << x << " - " << (y | s);
        }
  }
}

// The inline element-loop form (hw/numerics/narrow.h): a factor decoded once, then x b + c for
// many b and c, gives the reference's bits, and declines infinite and NaN operands.
TEST(Fp16Bf16, InlineMulAddMatchesReference) {
  std::mt19937 rng(5150);
  std::uniform_int_distribution<std::uint32_t> any16(0, 0xffff);
  auto check = [&](auto fmt, DType t) {
    using N = decltype(fmt);
    for (int i = 0; i < 2000; ++i) {
      const std::uint32_t x = any16(rng);
      double xv = 0;
      if (!N::value(x, xv)) continue;
      for (int j = 0; j < 100; ++j) {
        const std::uint32_t b = any16(rng), c = j % 2 ? any16(rng) : neg(t, mul(t, x, b)) ^ (j & 3);
        std::uint32_t out = 0xdead;
        const bool finite = !is_nan(t, b) && !is_nan(t, c) && (b & 0x7fff) != (t == F16 ? 0x7c00u : 0x7f80u) &&
                            (c & 0x7fff) != (t == F16 ? 0x7c00u : 0x7f80u);
        ASSERT_EQ(N::mul_add(xv, b, c, out), finite) << std::hex << x << " " << b << " " << c;
        if (finite) {
          ASSERT_EQ(out, reference::fma(t, x, b, c)) << std::hex << x << " * " << b << " + " << c;
        }
      }
    }
  };
  check(narrow::F16{}, F16);
  check(narrow::BF16{}, BF16);
}

// The fp16 element-loop form through float (narrow::F16Single): every finite result is the
// reference's, and every infinite or NaN one is declined (an operand infinite or NaN, or an
// overflow), over random operands, cancellations and all pairs of special encodings.
TEST(Fp16Bf16, InlineSingleMulAddMatchesReference) {
  using narrow::F16Single;
  std::mt19937 rng(6160);
  std::uniform_int_distribution<std::uint32_t> any16(0, 0xffff);
  auto check = [](std::uint32_t x, std::uint32_t b, std::uint32_t c) {
    const std::uint32_t ref = reference::fma(F16, x, b, c);
    std::uint32_t out = 0;
    const bool done = F16Single::mul_add(F16Single::value(x), b, c, out);
    ASSERT_EQ(done, (ref & 0x7c00u) != 0x7c00u) << std::hex << x << " * " << b << " + " << c;
    if (done) {
      ASSERT_EQ(out, ref) << std::hex << x << " * " << b << " + " << c;
    }
  };
  for (int i = 0; i < 400000; ++i) {
    const std::uint32_t x = any16(rng), b = any16(rng);
    const std::uint32_t c = i % 2 ? any16(rng) : neg(F16, mul(F16, x, b)) ^ (i & 3);
    check(x, b, c);
  }
  const std::uint32_t specials[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF,
                                    0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE00, 0x3555, 0x1400, 0x0C00};
  for (auto x : specials)
    for (auto b : specials)
      for (auto c : specials) check(x, b, c);
}

// The four-lane form (narrow::mul_add_x4, used by the core's fp16 FMAC loop) gives
// F16Single::mul_add's bits lane by lane, and declines (writing nothing) exactly when a
// lane's result is infinite or NaN; lanes beyond n are neither read nor written.
TEST(Fp16Bf16, FourLaneMulAddMatchesSingle) {
#if defined(__F16C__) && defined(__SSE4_1__)
  using narrow::F16Single;
  std::mt19937 rng(4404);
  std::uniform_int_distribution<std::uint32_t> any16(0, 0xffff);
  const std::uint32_t specials[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00,
                                    0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x3555, 0x1400, 0x0C00};
  auto pick = [&](int i) { return i % 5 == 0 ? specials[any16(rng) % 16] : any16(rng); };
  int declined = 0, exact_sums = 0;
  for (int i = 0; i < 200000; ++i) {
    const unsigned n = 1 + i % 4;
    const std::uint32_t x = pick(i);
    std::uint8_t a[10], b[10], y[10];
    for (auto* v : {a, b, y})
      for (int k = 0; k < 10; ++k) v[k] = static_cast<std::uint8_t>(0xA5 + k);
    std::uint32_t expect[4] = {};
    bool all_finite = true;
    for (unsigned k = 0; k < n; ++k) {
      const std::uint32_t bk = pick(i + static_cast<int>(k)),
                          ak = i % 3 ? pick(i) : neg(F16, mul(F16, x, bk)) ^ (k & 1);
      a[2 * k] = static_cast<std::uint8_t>(ak), a[2 * k + 1] = static_cast<std::uint8_t>(ak >> 8);
      b[2 * k] = static_cast<std::uint8_t>(bk), b[2 * k + 1] = static_cast<std::uint8_t>(bk >> 8);
      all_finite = F16Single::mul_add(F16Single::value(x), bk, ak, expect[k]) && all_finite;
      if ((F16Single::value(x) * F16Single::value(bk)) + F16Single::value(ak) == 0.0f) ++exact_sums;
    }
    const bool done = narrow::mul_add_x4(F16Single::value(x), b, a, y, n);
    ASSERT_EQ(done, all_finite) << i;
    if (!done) ++declined;
    for (unsigned k = 0; k < n; ++k) {
      const std::uint32_t got = std::uint32_t{y[2 * k]} | std::uint32_t{y[2 * k + 1]} << 8;
      if (done) {
        ASSERT_EQ(got, expect[k]) << std::hex << x << " lane " << k << " of " << n;
      } else {
        ASSERT_EQ(got, (0xA5u + 2 * k) | (0xA5u + 2 * k + 1) << 8) << "written although declined";
      }
    }
    for (unsigned k = 2 * n; k < 10; ++k) ASSERT_EQ(y[k], 0xA5 + k) << "lane beyond n written";
  }
  EXPECT_GT(declined, 1000);
  EXPECT_GT(exact_sums, 1000);
#else
  GTEST_SKIP() << "built without F16C: the core uses F16Single element by element";
#endif
}

// FP16 and BF16 against host float arithmetic rounded to the 16-bit format: float has at
// least 2p + 2 bits of precision for both, so this double rounding equals one rounding.
TEST(Fp16Bf16, AgreeWithHostFloatRoundedOnce) {
  std::mt19937 rng(777);
  std::uniform_int_distribution<std::uint32_t> any16(0, 0xffff);
  for (int i = 0; i < 300000; ++i) {
    const auto a = static_cast<std::uint16_t>(any16(rng)), b = static_cast<std::uint16_t>(any16(rng));
    const float ha = host_from_f16(a), hb = host_from_f16(b);
    auto check16 = [&](std::uint32_t emu, float host, const char* op) {
      if (std::isnan(host)) {
        ASSERT_TRUE(is_nan(F16, emu)) << op << std::hex << " " << a << " " << b;
      } else {
        ASSERT_EQ(emu, host_f16(host)) << op << std::hex << " " << a << " " << b;
      }
    };
    check16(add(F16, a, b), ha + hb, "add");
    check16(sub(F16, a, b), ha - hb, "sub");
    check16(mul(F16, a, b), ha * hb, "mul");
    ASSERT_EQ(convert(F32, F16, a), std::isnan(ha) ? convert(F32, F16, a) : bits_of(ha));

    const float ba = float_of(std::uint32_t{a} << 16), bb = float_of(std::uint32_t{b} << 16);
    auto checkbf = [&](std::uint32_t emu, float host, const char* op) {
      if (std::isnan(host)) {
        ASSERT_TRUE(is_nan(BF16, emu)) << op;
      } else {
        ASSERT_EQ(emu, host_bf16(host)) << op << std::hex << " " << a << " " << b;
      }
    };
    checkbf(add(BF16, a, b), ba + bb, "add");
    checkbf(mul(BF16, a, b), ba * bb, "mul");
    const std::uint32_t f = std::uniform_int_distribution<std::uint32_t>()(rng);
    if (!std::isnan(float_of(f))) {
      ASSERT_EQ(convert(F16, F32, f), host_f16(float_of(f))) << std::hex << f;
      ASSERT_EQ(convert(BF16, F32, f), host_bf16(float_of(f))) << std::hex << f;
    }
  }
}

TEST(Recip, CorrectlyRoundedInEveryFormat) {
  for (std::uint32_t a = 0; a < 0x10000; ++a) {
    const double x = to_double(F16, a);
    if (std::isnan(x)) continue;
    ASSERT_EQ(recip(F16, a), from_double(F16, 1.0 / x)) << std::hex << a;
    ASSERT_EQ(recip(BF16, a), from_double(BF16, 1.0 / to_double(BF16, a))) << std::hex << a;
  }
  EXPECT_EQ(recip(F32, 0x40000000), 0x3F000000u);  // 1/2
  EXPECT_EQ(recip(F32, 0x40400000), 0x3EAAAAABu);  // 1/3 rounds up
  EXPECT_EQ(recip(F32, 0x7F7FFFFF), 0x00200000u);  // 1 / max: subnormal
  EXPECT_EQ(recip(F16, 0x0001), 0x7C00u);          // 1 / 2^-24 overflows
}

TEST(Exp, WithinTheDocumentedBound) {
  // The double-precision result is within 2^-50 relative of e^x ...
  for (double x = -700; x < 700; x += 0.37) {
    const double ref = std::exp(x);
    EXPECT_NEAR(exp_double(x) / ref, 1.0, std::ldexp(1, -49)) << x;
  }
  // ... so every fp16 result is the correctly rounded one (checked against the host's exp,
  // whose double result is also within an ulp), except in near-tie cases.
  int mismatches = 0;
  for (std::uint32_t a = 0; a < 0x10000; ++a) {
    const double x = to_double(F16, a);
    if (std::isnan(x)) continue;
    const std::uint32_t mine = exp(F16, a), ref = from_double(F16, std::exp(x));
    if (mine != ref) {
      ++mismatches;
      EXPECT_LE(mine > ref ? mine - ref : ref - mine, 1u) << std::hex << a;
    }
  }
  EXPECT_LE(mismatches, 2);
  EXPECT_EQ(exp(F32, 0x00000000), 0x3F800000u);  // e^0 = 1
  EXPECT_EQ(exp(F32, 0x7F800000), 0x7F800000u);  // e^inf = inf
  EXPECT_EQ(exp(F32, 0xFF800000), 0x00000000u);  // e^-inf = +0
  EXPECT_EQ(exp(F16, 0x4C00), 0x7C00u);          // e^16 overflows fp16
  EXPECT_EQ(exp(F32, bits_of(1.0f)), bits_of(2.71828182845904523536f));
}

TEST(Literals, FromDoubleRoundsOnce) {
  EXPECT_EQ(from_double(F16, 0.1), 0x2E66u);
  EXPECT_EQ(from_double(BF16, 0.1), 0x3DCDu);
  EXPECT_EQ(from_double(F32, 0.1), bits_of(0.1f));
  EXPECT_EQ(from_double(F16, -0.0), 0x8000u);
  EXPECT_EQ(from_double(F16, 1e10), 0x7C00u);
  EXPECT_EQ(from_double(F16, std::ldexp(1.0, -24)), 0x0001u);
}

}  // namespace
}  // namespace wafersim::hw::numerics::numerics_test
