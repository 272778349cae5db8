#pragma once
// Arithmetic of one format on bit patterns, one rounding per operation: the PE core's
// numerics (hw/numerics) for fp16, bf16 and fp32, IEEE double for fp64.

#include <cstdint>

#include "models/reference/format.h"

namespace wafersim::models::reference {

using Bits = std::uint64_t;  // a value's bit pattern in the low bits

class Arith {
 public:
  explicit Arith(Format f) : f_(f) {}
  [[nodiscard]] Format format() const { return f_; }

  [[nodiscard]] Bits add(Bits a, Bits b) const;
  [[nodiscard]] Bits sub(Bits a, Bits b) const;
  [[nodiscard]] Bits mul(Bits a, Bits b) const;
  // a * b + c rounded once (the PE's fmac d = c + a x b).
  [[nodiscard]] Bits fma(Bits a, Bits b, Bits c) const;
  [[nodiscard]] Bits neg(Bits a) const;
  // IEEE maximum: NaN propagates, -0 < +0 (the PE's fmax).
  [[nodiscard]] Bits max(Bits a, Bits b) const;
  // Correctly rounded 1/a (the PE's frecip).
  [[nodiscard]] Bits recip(Bits a) const;
  // The PE's fexp approximation (hw/numerics/elementary.h); fp64: its double result.
  [[nodiscard]] Bits exp(Bits a) const;
  // 1/sqrt(a) by the documented Newton sequence of PE instructions (docs/reference.md); fp64:
  // 1 / sqrt(a) in IEEE double.
  [[nodiscard]] Bits rsqrt(Bits a) const;
  // Natural logarithm, the double of log_double() rounded once (the PE has no logarithm).
  [[nodiscard]] Bits log(Bits a) const;
  // 1 / (1 + exp(-a)), as recip(add(exp(neg(a)), 1)).
  [[nodiscard]] Bits sigmoid(Bits a) const;
  [[nodiscard]] bool greater(Bits a, Bits b) const;

  // A value of format `source` in this format: exact when widening, rounded once otherwise.
  [[nodiscard]] Bits from(Format source, Bits bits) const;
  // `v` rounded once to this format.
  [[nodiscard]] Bits of(double v) const;
  // The exact value.
  [[nodiscard]] double value(Bits bits) const;
  [[nodiscard]] bool is_nan(Bits bits) const;

  static constexpr Bits kZero = 0;  // +0 in every format

 private:
  Format f_;
};

// Natural logarithm in IEEE double using only +, -, x, / and exact scaling, so every host
// gives the same bits: x = m 2^e with m in [sqrt(1/2), sqrt(2)), s = (m - 1) / (m + 1),
// log m = 2 (s + s^3/3 + ... + s^23/23), plus e ln 2 (ln 2 in two parts). Relative error
// below 2^-50. log(+0) = -inf, log(x < 0) = NaN, log(+inf) = +inf.
double log_double(double x);

}  // namespace wafersim::models::reference
