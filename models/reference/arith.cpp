#include "models/reference/arith.h"

#include <cmath>
#include <cstring>

#include "hw/numerics/elementary.h"
#include "hw/numerics/softfloat.h"

namespace wafersim::models::reference {
namespace nm = hw::numerics;

namespace {

double as_double(Bits b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

Bits bits_of(double d) {
  Bits b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

std::uint32_t u32(Bits b) { return static_cast<std::uint32_t>(b); }

// 1/sqrt(v) for fp32 bits: the integer first guess, then three Newton steps in fp32, each
// operation rounded (docs/reference.md, "rsqrt").
std::uint32_t rsqrt_f32(std::uint32_t v) {
  constexpr hw::DType F = hw::DType::F32;
  constexpr std::uint32_t kPosInf = 0x7F800000, kSign = 0x80000000;
  if (nm::is_nan(F, v)) return v | 0x00400000;
  if ((v & ~kSign) == 0) return kPosInf | (v & kSign);
  if (v & kSign) return nm::default_nan(F);
  if (v == kPosInf) return 0;
  if ((v >> 23) == 0) {
    // A subnormal: 1/sqrt(v) = 2^12 / sqrt(v 2^24), both scalings exact.
    const std::uint32_t scaled = nm::mul(F, v, 0x4B800000);  // x 2^24
    return nm::mul(F, rsqrt_f32(scaled), 0x45800000);        // x 2^12
  }
  constexpr std::uint32_t kMagic = 0x5F375A86;
  constexpr std::uint32_t kHalf = 0x3F000000;
  std::uint32_t y = kMagic - (v >> 1);
  const std::uint32_t h = nm::mul(F, v, kHalf);
  for (int i = 0; i < 3; ++i) {
    // y <- y + y (1/2 - h y^2): the residual with one fused operation, then a fused update.
    const std::uint32_t p = nm::mul(F, h, y);
    const std::uint32_t r = nm::fma(F, nm::neg(F, p), y, kHalf);
    y = nm::fma(F, y, r, y);
  }
  return y;
}

}  // namespace

double log_double(double x) {
  if (std::isnan(x)) return x;
  if (x < 0) return std::nan("");
  if (x == 0) return -HUGE_VAL;
  if (std::isinf(x)) return x;
  int e = 0;
  double m = std::frexp(x, &e);  // x = m 2^e, m in [0.5, 1)
  constexpr double kSqrtHalf = 0.70710678118654752440;
  if (m < kSqrtHalf) {
    m = m * 2;
    --e;
  }
  const double s = (m - 1) / (m + 1);  // |s| <= 0.1716
  const double s2 = s * s;
  double p = 1.0 / 23;
  for (int k = 21; k >= 1; k -= 2) p = p * s2 + 1.0 / k;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double de = e;
  return de * kLn2Hi + (2 * s * p + de * kLn2Lo);
}

Bits Arith::add(Bits a, Bits b) const {
  if (f_ == Format::FP64) return bits_of(as_double(a) + as_double(b));
  return nm::add(hw_dtype(f_), u32(a), u32(b));
}

Bits Arith::sub(Bits a, Bits b) const {
  if (f_ == Format::FP64) return bits_of(as_double(a) - as_double(b));
  return nm::sub(hw_dtype(f_), u32(a), u32(b));
}

Bits Arith::mul(Bits a, Bits b) const {
  if (f_ == Format::FP64) return bits_of(as_double(a) * as_double(b));
  return nm::mul(hw_dtype(f_), u32(a), u32(b));
}

Bits Arith::fma(Bits a, Bits b, Bits c) const {
  if (f_ == Format::FP64) return bits_of(std::fma(as_double(a), as_double(b), as_double(c)));
  return nm::fma(hw_dtype(f_), u32(a), u32(b), u32(c));
}

Bits Arith::neg(Bits a) const {
  if (f_ == Format::FP64) return a ^ (Bits{1} << 63);
  return nm::neg(hw_dtype(f_), u32(a));
}

Bits Arith::max(Bits a, Bits b) const {
  if (f_ == Format::FP64) {
    if (std::isnan(as_double(a))) return a;
    if (std::isnan(as_double(b))) return b;
    return ordinal(f_, a) >= ordinal(f_, b) ? a : b;
  }
  return nm::max(hw_dtype(f_), u32(a), u32(b));
}

Bits Arith::recip(Bits a) const {
  if (f_ == Format::FP64) return bits_of(1.0 / as_double(a));
  return nm::recip(hw_dtype(f_), u32(a));
}

Bits Arith::exp(Bits a) const {
  if (f_ == Format::FP64) return bits_of(nm::exp_double(as_double(a)));
  return nm::exp(hw_dtype(f_), u32(a));
}

Bits Arith::rsqrt(Bits a) const {
  switch (f_) {
    case Format::FP64:
      return bits_of(1.0 / std::sqrt(as_double(a)));
    case Format::FP32:
      return rsqrt_f32(u32(a));
    case Format::FP16:
    case Format::BF16:
      break;
  }
  return from(Format::FP32, rsqrt_f32(u32(Arith(Format::FP32).from(f_, a))));
}

Bits Arith::log(Bits a) const { return of(log_double(value(a))); }

Bits Arith::sigmoid(Bits a) const { return recip(add(exp(neg(a)), of(1.0))); }

bool Arith::greater(Bits a, Bits b) const {
  if (f_ == Format::FP64) return as_double(a) > as_double(b);
  return nm::lt(hw_dtype(f_), u32(b), u32(a));
}

Bits Arith::from(Format source, Bits bits) const {
  if (source == f_) return bits;
  if (source == Format::FP64) return of(as_double(bits));
  if (f_ == Format::FP64) return bits_of(nm::to_double(hw_dtype(source), u32(bits)));
  return nm::convert(hw_dtype(f_), hw_dtype(source), u32(bits));
}

Bits Arith::of(double v) const {
  if (f_ == Format::FP64) return bits_of(v);
  return nm::from_double(hw_dtype(f_), v);
}

double Arith::value(Bits bits) const {
  if (f_ == Format::FP64) return as_double(bits);
  return nm::to_double(hw_dtype(f_), u32(bits));
}

bool Arith::is_nan(Bits bits) const {
  if (f_ == Format::FP64) return std::isnan(as_double(bits));
  return nm::is_nan(hw_dtype(f_), u32(bits));
}

}  // namespace wafersim::models::reference
