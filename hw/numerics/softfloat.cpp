#include "hw/numerics/softfloat.h"

#include "hw/numerics/narrow.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace wafersim::hw::numerics {
namespace {

__extension__ typedef unsigned __int128 u128;

struct Format {
  int exp_bits;
  int man_bits;
  [[nodiscard]] int bias() const { return (1 << (exp_bits - 1)) - 1; }
  [[nodiscard]] int emin() const { return 1 - bias(); }
  [[nodiscard]] std::uint32_t exp_max() const { return (1u << exp_bits) - 1; }
  [[nodiscard]] std::uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  [[nodiscard]] std::uint32_t man_mask() const { return (1u << man_bits) - 1; }
  [[nodiscard]] std::uint32_t quiet_bit() const { return 1u << (man_bits - 1); }
  [[nodiscard]] std::uint32_t inf(bool sign) const { return (sign ? sign_bit() : 0) | (exp_max() << man_bits); }
  [[nodiscard]] std::uint32_t zero(bool sign) const { return sign ? sign_bit() : 0; }
  [[nodiscard]] std::uint32_t default_nan() const { return inf(false) | quiet_bit(); }
};

Format format_of(DType t) {
  switch (t) {
    case DType::F16:
      return {5, 10};
    case DType::BF16:
      return {8, 7};
    case DType::F32:
      return {8, 23};
    default:
      break;
  }
  throw std::logic_error("softfloat: not a float format");
}

// A decoded value; for Finite, value = (-1)^sign x man x 2^exp with man > 0.
struct Unpacked {
  enum Class { Zero, Finite, Inf, NaN } cls;
  bool sign;
  std::int32_t exp;
  std::uint64_t man;
};

Unpacked unpack(const Format& f, std::uint32_t bits) {
  Unpacked u{};
  u.sign = (bits & f.sign_bit()) != 0;
  const std::uint32_t e = (bits >> f.man_bits) & f.exp_max();
  const std::uint32_t m = bits & f.man_mask();
  if (e == f.exp_max()) {
    u.cls = m ? Unpacked::NaN : Unpacked::Inf;
  } else if (e == 0) {
    u.cls = m ? Unpacked::Finite : Unpacked::Zero;
    u.man = m;
    u.exp = f.emin() - f.man_bits;
  } else {
    u.cls = Unpacked::Finite;
    u.man = m | (std::uint64_t{1} << f.man_bits);
    u.exp = static_cast<std::int32_t>(e) - f.bias() - f.man_bits;
  }
  return u;
}

int msb(u128 v) {
  const auto hi = static_cast<std::uint64_t>(v >> 64);
  if (hi) return 127 - __builtin_clzll(hi);
  return 63 - __builtin_clzll(static_cast<std::uint64_t>(v));
}

// Rounds (-1)^sign x man x 2^exp (exact) to the format, ties to even.
std::uint32_t round_pack(const Format& f, bool sign, std::int64_t exp, u128 man) {
  if (man == 0) return f.zero(sign);
  const std::int64_t e_unb = msb(man) + exp;  // value in [2^e_unb, 2^(e_unb+1))
  if (e_unb > f.bias()) return f.inf(sign);
  std::int64_t q = std::max<std::int64_t>(e_unb, f.emin()) - f.man_bits;  // exponent of the result's ulp
  const std::int64_t shift = q - exp;
  u128 r;
  if (shift <= 0) {
    r = man << -shift;
  } else if (shift >= 128) {
    r = 0;  // below half an ulp
  } else {
    r = man >> shift;
    const u128 rem = man & ((u128{1} << shift) - 1);
    const u128 half = u128{1} << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
  }
  if (r >> (f.man_bits + 1)) {
    r >>= 1;
    ++q;
  }
  const auto rm = static_cast<std::uint32_t>(r);
  if ((rm >> f.man_bits) == 0) return f.zero(sign) | rm;  // subnormal (or zero)
  const std::int64_t biased = q + f.man_bits + f.bias();
  if (biased >= static_cast<std::int64_t>(f.exp_max())) return f.inf(sign);
  return f.zero(sign) | (static_cast<std::uint32_t>(biased) << f.man_bits) | (rm & f.man_mask());
}

std::uint32_t quiet(const Format& f, std::uint32_t bits) { return bits | f.quiet_bit(); }

// Exact sum of two finite values (x.man up to 48 bits), rounded once.
std::uint32_t add_finite(const Format& f, Unpacked x, Unpacked y) {
  if (x.exp < y.exp) std::swap(x, y);
  // A far smaller operand only decides the direction of rounding; any smaller value of the
  // same sign decides it the same way, so it is replaced to keep the sum in 128 bits.
  constexpr std::int32_t kMaxShift = 64;
  if (x.exp - y.exp > kMaxShift) {
    y.man = 1;
    y.exp = x.exp - kMaxShift;
  }
  const u128 big = u128{x.man} << (x.exp - y.exp);
  const u128 small = y.man;
  if (x.sign == y.sign) return round_pack(f, x.sign, y.exp, big + small);
  if (big == small) return f.zero(false);
  if (big > small) return round_pack(f, x.sign, y.exp, big - small);
  return round_pack(f, y.sign, y.exp, small - big);
}

int compare_magnitude_order(const Format& f, std::uint32_t a, std::uint32_t b) {
  // Total order of non-NaN values by their value (-0 and +0 distinct: -0 < +0).
  auto key = [&](std::uint32_t v) -> std::int64_t {
    const std::int64_t mag = v & ~f.sign_bit();
    return (v & f.sign_bit()) ? -mag - 1 : mag;
  };
  const std::int64_t ka = key(a), kb = key(b);
  return ka < kb ? -1 : (ka > kb ? 1 : 0);
}

}  // namespace

std::uint32_t default_nan(DType t) { return format_of(t).default_nan(); }

bool is_nan(DType t, std::uint32_t bits) { return unpack(format_of(t), bits).cls == Unpacked::NaN; }

std::uint32_t reference::add(DType t, std::uint32_t a, std::uint32_t b) {
  const Format f = format_of(t);
  const Unpacked x = unpack(f, a), y = unpack(f, b);
  if (x.cls == Unpacked::NaN) return quiet(f, a);
  if (y.cls == Unpacked::NaN) return quiet(f, b);
  if (x.cls == Unpacked::Inf) return (y.cls == Unpacked::Inf && x.sign != y.sign) ? f.default_nan() : a;
  if (y.cls == Unpacked::Inf) return b;
  if (x.cls == Unpacked::Zero && y.cls == Unpacked::Zero) return f.zero(x.sign && y.sign);
  if (x.cls == Unpacked::Zero) return b;
  if (y.cls == Unpacked::Zero) return a;
  return add_finite(f, x, y);
}

std::uint32_t reference::sub(DType t, std::uint32_t a, std::uint32_t b) {
  const Format f = format_of(t);
  if (unpack(f, b).cls == Unpacked::NaN) {
    if (unpack(f, a).cls == Unpacked::NaN) return quiet(f, a);
    return quiet(f, b);
  }
  return reference::add(t, a, b ^ f.sign_bit());
}

std::uint32_t reference::mul(DType t, std::uint32_t a, std::uint32_t b) {
  const Format f = format_of(t);
  const Unpacked x = unpack(f, a), y = unpack(f, b);
  if (x.cls == Unpacked::NaN) return quiet(f, a);
  if (y.cls == Unpacked::NaN) return quiet(f, b);
  const bool sign = x.sign != y.sign;
  if (x.cls == Unpacked::Inf || y.cls == Unpacked::Inf) {
    if (x.cls == Unpacked::Zero || y.cls == Unpacked::Zero) return f.default_nan();
    return f.inf(sign);
  }
  if (x.cls == Unpacked::Zero || y.cls == Unpacked::Zero) return f.zero(sign);
  return round_pack(f, sign, std::int64_t{x.exp} + y.exp, u128{x.man} * y.man);
}

std::uint32_t reference::fma(DType t, std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  const Format f = format_of(t);
  const Unpacked x = unpack(f, a), y = unpack(f, b), z = unpack(f, c);
  if (x.cls == Unpacked::NaN) return quiet(f, a);
  if (y.cls == Unpacked::NaN) return quiet(f, b);
  if (z.cls == Unpacked::NaN) return quiet(f, c);
  const bool psign = x.sign != y.sign;
  const bool pinf = x.cls == Unpacked::Inf || y.cls == Unpacked::Inf;
  const bool pzero = x.cls == Unpacked::Zero || y.cls == Unpacked::Zero;
  if (pinf && pzero) return f.default_nan();
  if (pinf) {
    if (z.cls == Unpacked::Inf && z.sign != psign) return f.default_nan();
    return f.inf(psign);
  }
  if (z.cls == Unpacked::Inf) return c;
  if (pzero) {
    if (z.cls == Unpacked::Zero) return f.zero(psign && z.sign);
    return c;
  }
  Unpacked p{Unpacked::Finite, psign, x.exp + y.exp, x.man * y.man};
  if (z.cls == Unpacked::Zero) return round_pack(f, psign, p.exp, p.man);
  return add_finite(f, p, z);
}

namespace {
// The host's binary32 arithmetic (SSE on x86-64; no fast-math, no contraction) is IEEE
// round-to-nearest-even with subnormals; only its NaN results differ from ours.
float host(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
constexpr std::uint32_t kF32DefaultNan = 0x7FC00000;
std::uint32_t host_result(float r) { return r == r ? bits_of(r) : kF32DefaultNan; }

using BF16Fmt = narrow::BF16;
using narrow::F16Single;

// Operation `op` on the format's fast path; false (result untouched) when an operand is
// infinite or NaN.
template <class N, class Op>
bool narrow2(std::uint32_t a, std::uint32_t b, std::uint32_t& out, Op op) {
  double x = 0, y = 0;
  if (!N::value(a, x) || !N::value(b, y)) return false;
  out = op(x, y);
  return true;
}
}  // namespace

std::uint32_t add(DType t, std::uint32_t a, std::uint32_t b) {
  if (t == DType::F32) {
    const float x = host(a), y = host(b);
    if (x == x && y == y) return host_result(x + y);
  }
  if (t == DType::F16) {
    const std::uint32_t r = F16Single::sum(F16Single::value(a), F16Single::value(b));
    if (F16Single::finite(r)) return r;
  } else if (t == DType::BF16) {
    std::uint32_t r = 0;
    if (narrow2<BF16Fmt>(a, b, r, [](double x, double y) { return BF16Fmt::sum(x, y); })) return r;
  }
  return reference::add(t, a, b);
}

std::uint32_t sub(DType t, std::uint32_t a, std::uint32_t b) {
  if (t == DType::F32) {
    const float x = host(a), y = host(b);
    if (x == x && y == y) return host_result(x - y);
  }
  if (t == DType::F16) {
    const std::uint32_t r = F16Single::sum(F16Single::value(a), -F16Single::value(b));
    if (F16Single::finite(r)) return r;
  } else if (t == DType::BF16) {
    std::uint32_t r = 0;
    if (narrow2<BF16Fmt>(a, b, r, [](double x, double y) { return BF16Fmt::sum(x, -y); })) return r;
  }
  return reference::sub(t, a, b);
}

std::uint32_t mul(DType t, std::uint32_t a, std::uint32_t b) {
  if (t == DType::F32) {
    const float x = host(a), y = host(b);
    if (x == x && y == y) return host_result(x * y);
  }
  if (t == DType::F16) {
    const std::uint32_t r = F16Single::round(F16Single::value(a) * F16Single::value(b));  // exact product
    if (F16Single::finite(r)) return r;
  } else if (t == DType::BF16) {
    std::uint32_t r = 0;
    if (narrow2<BF16Fmt>(a, b, r, [](double x, double y) { return BF16Fmt::exact(x * y); })) return r;
  }
  return reference::mul(t, a, b);
}

std::uint32_t fma(DType t, std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  if (t == DType::F32) {
    const float x = host(a), y = host(b), z = host(c);
    if (x == x && y == y && z == z) return host_result(std::fmaf(x, y, z));
  }
  std::uint32_t r = 0;
  if (t == DType::F16 ? F16Single::fma(a, b, c, r) : t == DType::BF16 && BF16Fmt::fma(a, b, c, r)) return r;
  return reference::fma(t, a, b, c);
}

std::uint32_t min(DType t, std::uint32_t a, std::uint32_t b) {
  const Format f = format_of(t);
  if (unpack(f, a).cls == Unpacked::NaN) return quiet(f, a);
  if (unpack(f, b).cls == Unpacked::NaN) return quiet(f, b);
  return compare_magnitude_order(f, a, b) <= 0 ? a : b;
}

std::uint32_t max(DType t, std::uint32_t a, std::uint32_t b) {
  const Format f = format_of(t);
  if (unpack(f, a).cls == Unpacked::NaN) return quiet(f, a);
  if (unpack(f, b).cls == Unpacked::NaN) return quiet(f, b);
  return compare_magnitude_order(f, a, b) >= 0 ? a : b;
}

std::uint32_t neg(DType t, std::uint32_t a) { return a ^ format_of(t).sign_bit(); }

std::uint32_t recip(DType t, std::uint32_t a) {
  const Format f = format_of(t);
  const Unpacked x = unpack(f, a);
  switch (x.cls) {
    case Unpacked::NaN:
      return quiet(f, a);
    case Unpacked::Inf:
      return f.zero(x.sign);
    case Unpacked::Zero:
      return f.inf(x.sign);
    case Unpacked::Finite:
      break;
  }
  // 1 / (man x 2^exp) = (2^100 / man) x 2^(-exp-100); the remainder becomes a sticky bit
  // below the quotient's 76+ significant bits, which cannot change the rounding.
  constexpr int kScale = 100;
  const u128 num = u128{1} << kScale;
  const u128 q = num / x.man;
  const bool inexact = (num % x.man) != 0;
  return round_pack(f, x.sign, -std::int64_t{x.exp} - kScale - 1, (q << 1) | (inexact ? 1 : 0));
}

bool lt(DType t, std::uint32_t a, std::uint32_t b) {
  const Format f = format_of(t);
  if (is_nan(t, a) || is_nan(t, b)) return false;
  if (((a | b) & ~f.sign_bit()) == 0) return false;  // -0 == +0
  return compare_magnitude_order(f, a, b) < 0;
}

bool eq(DType t, std::uint32_t a, std::uint32_t b) {
  const Format f = format_of(t);
  if (is_nan(t, a) || is_nan(t, b)) return false;
  if (((a | b) & ~f.sign_bit()) == 0) return true;
  return a == b;
}

bool le(DType t, std::uint32_t a, std::uint32_t b) { return lt(t, a, b) || eq(t, a, b); }

std::uint32_t convert(DType to, DType from, std::uint32_t bits) {
  const Format ft = format_of(to), ff = format_of(from);
  const Unpacked x = unpack(ff, bits);
  switch (x.cls) {
    case Unpacked::NaN: {
      const std::uint32_t payload = bits & ff.man_mask();
      const std::uint32_t moved =
          ft.man_bits >= ff.man_bits ? payload << (ft.man_bits - ff.man_bits) : payload >> (ff.man_bits - ft.man_bits);
      return ft.inf(x.sign) | ft.quiet_bit() | (moved & ft.man_mask());
    }
    case Unpacked::Inf:
      return ft.inf(x.sign);
    case Unpacked::Zero:
      return ft.zero(x.sign);
    case Unpacked::Finite:
      break;
  }
  return round_pack(ft, x.sign, x.exp, x.man);
}

std::uint32_t from_double(DType t, double v) {
  const Format f = format_of(t);
  if (std::isnan(v)) return f.default_nan();
  if (std::isinf(v)) return f.inf(v < 0);
  if (v == 0) return f.zero(std::signbit(v));
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // v = m x 2^e, m in [0.5, 1)
  const auto man = static_cast<std::uint64_t>(std::ldexp(m, 53));
  return round_pack(f, v < 0, std::int64_t{e} - 53, man);
}

double to_double(DType t, std::uint32_t bits) {
  const Format f = format_of(t);
  const Unpacked x = unpack(f, bits);
  switch (x.cls) {
    case Unpacked::NaN:
      return std::nan("");
    case Unpacked::Inf:
      return x.sign ? -HUGE_VAL : HUGE_VAL;
    case Unpacked::Zero:
      return x.sign ? -0.0 : 0.0;
    case Unpacked::Finite:
      break;
  }
  const double v = std::ldexp(static_cast<double>(x.man), x.exp);
  return x.sign ? -v : v;
}

}  // namespace wafersim::hw::numerics
