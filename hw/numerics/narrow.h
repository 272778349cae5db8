#pragma once
// The fp16 and bf16 fast path of softfloat.h's add, sub, mul and fma, inline so that element
// loops (a vector FMAC) can use it without a call; infinite and NaN operands are left to
// softfloat.h. Internal to hw: the results are softfloat.h's (tested against `reference`).

#include <cstdint>
#include <cstring>
#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "hw/numerics/dtype.h"

namespace wafersim::hw::numerics::narrow {

// FP16 and BF16 through the host's double arithmetic. A finite 16-bit value is a double
// (exactly); products of two are exact in double. A sum p + z is rounded to odd in double
// (TwoSum gives its exact error; an inexact sum is truncated and its last bit set), and a
// value rounded to odd with at least p + 2 bits rounds to p bits as the exact value would,
// so the final rounding to the format is the only one (Boldo and Melquiond, "Emulation of
// FMA and correctly rounded sums: proved algorithms using rounding to odd", 2008).
// The format T: E exponent bits, M fraction bits.
template <DType T, int E, int M>
struct Narrow {
  static constexpr DType kType = T;
  static constexpr int kBias = (1 << (E - 1)) - 1, kEmin = 1 - kBias;
  static constexpr std::uint32_t kExpMax = (1u << E) - 1, kSign = 1u << (E + M), kManMask = (1u << M) - 1;

  // False for an infinity or a NaN.
  static bool value(std::uint32_t bits, double& v) {
    const std::uint32_t e = (bits >> M) & kExpMax;
    if (e - 1 < kExpMax - 1) {  // normal: the exponent rebiased, the fraction moved up
      const std::uint64_t d = (std::uint64_t{bits & kSign} << (63 - E - M)) |
                              ((std::uint64_t{bits & (kSign - 1)} << (52 - M)) + (std::uint64_t{1023 - kBias} << 52));
      std::memcpy(&v, &d, 8);
      return true;
    }
    if (e == kExpMax) return false;
    // Zero or subnormal: m x 2^(kEmin - M), exact: a power of two that is a normal double.
    constexpr std::uint64_t kScale = std::uint64_t{1023 + kEmin - M} << 52;
    double scale = 0;
    std::memcpy(&scale, &kScale, 8);
    v = static_cast<double>(bits & kManMask) * scale;
    if (bits & kSign) v = -v;
    return true;
  }

  // Rounds a double (its bits: an exact value, or one rounded to odd) once to the format.
  static std::uint32_t round(std::uint64_t b) {
    const std::uint32_t sign = (b >> 63) ? kSign : 0;
    // A result in the format's normal range: rebias the exponent and round the significand
    // by integer addition (ties to even); a carry out of the significand steps the exponent,
    // up to infinity past the largest finite value.
    constexpr int kShift = 52 - M;
    constexpr std::uint64_t kLowest = std::uint64_t{1023 + kEmin} << 52, kOver = std::uint64_t{1023 + kBias + 1} << 52;
    const std::uint64_t mag = b & ~(std::uint64_t{1} << 63);
    if (mag >= kLowest && mag < kOver) {
      const std::uint64_t o = mag - (std::uint64_t{1023 - kBias} << 52);
      return sign |
             static_cast<std::uint32_t>((o + ((std::uint64_t{1} << (kShift - 1)) - 1) + ((o >> kShift) & 1)) >> kShift);
    }
    const auto be = static_cast<std::int32_t>((b >> 52) & 0x7FF);
    if (be == 0) return sign;          // zero; double subnormals do not occur for 16-bit operands
    const std::int32_t e = be - 1023;  // the value lies in [2^e, 2^(e+1))
    if (e > kBias) return sign | (kExpMax << M);
    const std::uint64_t man = (b & ((std::uint64_t{1} << 52) - 1)) | std::uint64_t{1} << 52;
    const std::int32_t shift = 52 - M + (e < kEmin ? kEmin - e : 0);
    if (shift >= 54) return sign;  // below half the smallest subnormal
    std::uint64_t r = man >> shift;
    const std::uint64_t rem = man & ((std::uint64_t{1} << shift) - 1), half = std::uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    if (e < kEmin) return sign | static_cast<std::uint32_t>(r);  // subnormal, or rounded up to the smallest normal
    std::uint32_t biased = static_cast<std::uint32_t>(e + kBias);
    if (r >> (M + 1)) {
      r >>= 1;
      ++biased;
    }
    if (biased >= kExpMax) return sign | (kExpMax << M);
    return sign | biased << M | (static_cast<std::uint32_t>(r) & kManMask);
  }

  // p + z (each an exact double, no overflow) rounded once: rounded to odd in double first.
  static std::uint32_t sum(double p, double z) {
    const double s = p + z;
    const double zs = s - p, ps = s - zs;
    const double err = (p - ps) + (z - zs);  // p + z = s + err exactly (TwoSum)
    std::uint64_t b = 0;
    std::memcpy(&b, &s, 8);
    if (err != 0) {
      if ((err < 0) != ((b >> 63) != 0)) --b;  // |s| above the exact sum: truncate toward zero
      b |= 1;                                  // round to odd
    }
    return round(b);
  }
  // x x b + c rounded once, x a finite value of the format as value() gives it (a factor used
  // for many elements); false (out untouched) when b or c is infinite or NaN.
  static bool mul_add(double x, std::uint32_t b, std::uint32_t c, std::uint32_t& out) {
    double y = 0, z = 0;
    if (!value(b, y) || !value(c, z)) return false;
    out = sum(x * y, z);
    return true;
  }
  // a x b + c rounded once; false (out untouched) when an operand is infinite or NaN.
  static bool fma(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t& out) {
    double x = 0, y = 0, z = 0;
    if (!value(a, x) || !value(b, y) || !value(c, z)) return false;
    out = sum(x * y, z);
    return true;
  }
  static std::uint32_t exact(double v) {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, 8);
    return round(b);
  }
};
using F16 = Narrow<DType::F16, 5, 10>;
using BF16 = Narrow<DType::BF16, 8, 7>;

// FP16 through the host's float arithmetic, as Narrow does through double: a product of two
// fp16 values is exact in float (22 bits, exponents from -48 to 32), a sum is rounded to odd
// in float (24 bits, at least p + 2 = 13), and the one rounding to fp16 is the host's
// conversion (F16C) or F16::round. Infinities and NaNs are not screened on the way in: they
// give an infinite or NaN result, which the caller hands to softfloat.h like an overflow.
struct F16Single {
  // Any encoding, exactly (infinities and NaNs become float's).
  static float value(std::uint32_t bits) {
#if defined(__F16C__)
    return _cvtsh_ss(static_cast<unsigned short>(bits));
#else
    const std::uint32_t sign = (bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu;
    std::uint32_t f = 0;
    if (e == 0) {  // zero or subnormal: m x 2^-24
      const float v = static_cast<float>(bits & 0x3ffu) * 0x1p-24f;
      std::memcpy(&f, &v, 4);
      f |= sign;
    } else if (e == 0x1f) {
      f = sign | 0x7f800000u | (bits & 0x3ffu) << 13;
    } else {
      f = sign | (((bits & 0x7fffu) << 13) + (std::uint32_t{127 - 15} << 23));
    }
    float v = 0;
    std::memcpy(&v, &f, 4);
    return v;
#endif
  }
  // Rounds a float (exact, or rounded to odd) to the nearest fp16, ties to even.
  static std::uint32_t round(float v) {
#if defined(__F16C__)
    return _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT);
#else
    return F16::exact(static_cast<double>(v));
#endif
  }
  // A result is finite: its operands were, and it did not overflow.
  static bool finite(std::uint32_t r) { return (r & 0x7c00u) != 0x7c00u; }
  // p + z (each exact in float) rounded once to fp16, p + z rounded to odd in float first.
  static std::uint32_t sum(float p, float z) {
    const float s = p + z;
    const float zs = s - p, ps = s - zs;
    const float err = (p - ps) + (z - zs);  // p + z = s + err exactly (TwoSum)
    if (err == 0) return round(s);
    std::uint32_t b = 0;
    std::memcpy(&b, &s, 4);
    if ((err < 0) != ((b >> 31) != 0)) --b;  // |s| above the exact sum: truncate toward zero
    b |= 1;                                  // round to odd
    float o = 0;
    std::memcpy(&o, &b, 4);
    return round(o);
  }
  // x x b + c rounded once, x = value() of an fp16 (a factor used for many elements); false
  // when the result is infinite or NaN (out then holds it, to be recomputed by softfloat.h).
  static bool mul_add(float x, std::uint32_t b, std::uint32_t c, std::uint32_t& out) {
    out = sum(x * value(b), value(c));
    return finite(out);
  }
  // a x b + c rounded once; false as for mul_add.
  static bool fma(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t& out) {
    return mul_add(value(a), b, c, out);
  }
};

#if defined(__F16C__) && defined(__SSE4_1__)
// Copies n (at most 4) 16-bit lanes; four with a fixed-size copy, which compiles to one load
// and store rather than a call.
inline void copy_lanes(void* to, const void* from, unsigned n) {
  if (n == 4)
    std::memcpy(to, from, 8);
  else
    std::memcpy(to, from, 2 * n);
}

// F16Single::mul_add on four elements at once: y[k] = x x b[k] + a[k] rounded once to fp16,
// the same steps lane by lane (exact product, TwoSum, rounding to odd, one rounding to fp16).
// False, and y left unwritten, when a result is infinite or NaN (those are recomputed
// element by element by the caller). Lanes at n and beyond are not read or written (n <= 4).
inline bool mul_add_x4(float x, const std::uint8_t* b, const std::uint8_t* a, std::uint8_t* y, unsigned n) {
  std::uint64_t ab = 0, bb = 0;
  copy_lanes(&ab, a, n);
  copy_lanes(&bb, b, n);
  const __m128 p = _mm_mul_ps(_mm_set1_ps(x), _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(bb))));
  const __m128 z = _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(ab)));
  const __m128 s = _mm_add_ps(p, z);
  const __m128 zs = _mm_sub_ps(s, p), ps = _mm_sub_ps(s, zs);
  const __m128 err = _mm_add_ps(_mm_sub_ps(p, ps), _mm_sub_ps(z, zs));
  const __m128i inexact = _mm_castps_si128(_mm_cmpneq_ps(err, _mm_setzero_ps()));
  const __m128i bits = _mm_castps_si128(s);
  // An inexact sum above the exact one in magnitude (err's sign not s's) loses one ulp, then
  // its last bit is set: rounding to odd.
  const __m128i toward = _mm_xor_si128(_mm_castps_si128(_mm_cmplt_ps(err, _mm_setzero_ps())), _mm_srai_epi32(bits, 31));
  __m128i odd = _mm_add_epi32(bits, _mm_and_si128(toward, inexact));
  odd = _mm_or_si128(odd, _mm_and_si128(inexact, _mm_set1_epi32(1)));
  const __m128i h = _mm_cvtps_ph(_mm_castsi128_ps(odd), _MM_FROUND_TO_NEAREST_INT);
  const __m128i top = _mm_and_si128(h, _mm_set1_epi16(0x7c00));
  const int nonfinite = _mm_movemask_epi8(_mm_cmpeq_epi16(top, _mm_set1_epi16(0x7c00))) & ((1 << (2 * n)) - 1);
  if (nonfinite) return false;
  const auto out = static_cast<std::uint64_t>(_mm_cvtsi128_si64(h));
  copy_lanes(y, &out, n);
  return true;
}
#endif

}  // namespace wafersim::hw::numerics::narrow
