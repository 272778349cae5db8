#pragma once
// A seeded random source whose sequence is fixed by its definition (SplitMix64), so sampled
// sweeps expand to the same points on every compiler and standard library.

#include <cstdint>

#include "sim/splitmix64.h"

namespace wafersim::app::sweep {

class Random : public sim::SplitMix64 {
 public:
  using sim::SplitMix64::SplitMix64;

  // Uniform in [0, n) for n > 0, without modulo bias.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return x % n;
  }
};

}  // namespace wafersim::app::sweep
