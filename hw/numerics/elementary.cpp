#include "hw/numerics/elementary.h"

#include <cmath>

#include "hw/numerics/softfloat.h"

namespace wafersim::hw::numerics {

double exp_double(double x) {
  if (std::isnan(x)) return x;
  if (x > 709.0) return HUGE_VAL;
  if (x < -746.0) return 0.0;
  // ln2 = kLn2Hi + kLn2Lo, kLn2Hi with 32 trailing zero bits so n x kLn2Hi is exact.
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double n = std::floor(x * kLog2e + 0.5);
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  // Taylor polynomial of e^r to degree 13 (|r| <= 0.347: truncation below 2^-60).
  double p = 1.0 / 6227020800.0;  // 1/13!
  constexpr double kInvFact[] = {1.0 / 479001600.0,
                                 1.0 / 39916800.0,
                                 1.0 / 3628800.0,
                                 1.0 / 362880.0,
                                 1.0 / 40320.0,
                                 1.0 / 5040.0,
                                 1.0 / 720.0,
                                 1.0 / 120.0,
                                 1.0 / 24.0,
                                 1.0 / 6.0,
                                 0.5,
                                 1.0,
                                 1.0};
  for (double c : kInvFact) p = p * r + c;
  return std::ldexp(p, static_cast<int>(n));
}

std::uint32_t exp(DType t, std::uint32_t a) {
  if (is_nan(t, a)) return convert(t, t, a);
  return from_double(t, exp_double(to_double(t, a)));
}

}  // namespace wafersim::hw::numerics
