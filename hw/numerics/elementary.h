#pragma once
// The exponential of the core's EXP instruction: a documented, host-independent approximation.
//
// exp(x) is evaluated in IEEE double arithmetic (only +, -, x and exact scaling, so every
// host gives the same bits): x = n ln2 + r with |r| <= ln2/2 (ln2 split in two parts), a
// degree-13 Taylor polynomial for e^r, scaled by 2^n, then rounded once to the format.
// The double result is within 2^-50 relative of e^x, so the final result is the correctly
// rounded one except when e^x lies within that distance of a rounding tie: at most
// 0.5 ulp + 2^-50 relative. exp(NaN) is the quiet NaN, exp(+inf) = +inf, exp(-inf) = +0.

#include <cstdint>

#include "hw/numerics/dtype.h"

namespace wafersim::hw::numerics {

std::uint32_t exp(DType t, std::uint32_t a);
// The double-precision value before the final rounding (for tests and documentation).
double exp_double(double x);

}  // namespace wafersim::hw::numerics
