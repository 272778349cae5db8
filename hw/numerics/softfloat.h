#pragma once
// Exact emulation of IEEE 754 binary16, bfloat16 and binary32 arithmetic on bit patterns.
//
// Contract: every operation computes its exact result and rounds it once to the format
// (round to nearest, ties to even), with gradual underflow (subnormals), overflow to
// infinity, and NaN rules that do not depend on the host:
// - an invalid operation (inf - inf, 0 x inf) gives the format's default NaN
//   (sign 0, quiet bit set, payload 0: 0x7E00, 0x7FC0, 0x7FC00000);
// - otherwise a NaN result is the first NaN operand, in operand order, with its quiet bit set;
// - min and max propagate NaN and order -0 below +0.
// Values travel as the low bits of a uint32_t. Only the three float DTypes are accepted.
// The results are those of the integer implementation in `reference`; for f32 without NaN
// operands, add, sub, mul and fma take the host's IEEE binary32 arithmetic, and for f16 and
// bf16 without infinite or NaN operands the host's double arithmetic rounded to odd, then
// once to the format; both give the same bits (tested against `reference`).

#include <cstdint>

#include "hw/numerics/dtype.h"

namespace wafersim::hw::numerics {

std::uint32_t add(DType t, std::uint32_t a, std::uint32_t b);
std::uint32_t sub(DType t, std::uint32_t a, std::uint32_t b);
std::uint32_t mul(DType t, std::uint32_t a, std::uint32_t b);
// a * b + c with one rounding (fused).
std::uint32_t fma(DType t, std::uint32_t a, std::uint32_t b, std::uint32_t c);
std::uint32_t min(DType t, std::uint32_t a, std::uint32_t b);
std::uint32_t max(DType t, std::uint32_t a, std::uint32_t b);
// Sign flip (also of NaN), as IEEE negate.
std::uint32_t neg(DType t, std::uint32_t a);
// Correctly rounded 1/a.
std::uint32_t recip(DType t, std::uint32_t a);

// IEEE comparisons: false when either operand is NaN; -0 == +0.
bool lt(DType t, std::uint32_t a, std::uint32_t b);
bool le(DType t, std::uint32_t a, std::uint32_t b);
bool eq(DType t, std::uint32_t a, std::uint32_t b);

// Converts between float formats (exact when widening, rounded once when narrowing; a NaN
// keeps its sign and the top bits of its payload and becomes quiet).
std::uint32_t convert(DType to, DType from, std::uint32_t bits);
// Rounds a double once to the format (used for literals and for exp()).
std::uint32_t from_double(DType t, double v);
// Exact: every value of the three formats is a double.
double to_double(DType t, std::uint32_t bits);

bool is_nan(DType t, std::uint32_t bits);
std::uint32_t default_nan(DType t);

// The bit-exact integer implementation, independent of the host's floating point.
namespace reference {
std::uint32_t add(DType t, std::uint32_t a, std::uint32_t b);
std::uint32_t sub(DType t, std::uint32_t a, std::uint32_t b);
std::uint32_t mul(DType t, std::uint32_t a, std::uint32_t b);
std::uint32_t fma(DType t, std::uint32_t a, std::uint32_t b, std::uint32_t c);
}  // namespace reference

}  // namespace wafersim::hw::numerics
