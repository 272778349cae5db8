#pragma once
// A seeded random source whose sequence is fixed by its definition (SplitMix64), so sampled
// sweeps expand to the same points on every compiler and standard library.

#include <cstdint>

namespace wafersim::app::sweep {

class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n) for n > 0, without modulo bias.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return x % n;
  }

 private:
  std::uint64_t state_;
};

}  // namespace wafersim::app::sweep
