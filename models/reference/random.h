#pragma once
// The deterministic generator of the reference: splitmix64 (Steele, Lea and Flood 2014), its
// uniform doubles and per-name seeds, identical on every host.

#include <cstdint>
#include <string_view>

namespace wafersim::models::reference {

// state += 0x9E3779B97F4A7C15; z = state; z = (z ^ z>>30) * 0xBF58476D1CE4E5B9;
// z = (z ^ z>>27) * 0x94D049BB133111EB; return z ^ z>>31.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // (next() >> 11) x 2^-53: uniform in [0, 1) on a grid of 2^-53.
  double uniform();
  // lo + (hi - lo) x uniform(), in double.
  double uniform(double lo, double hi);
  // floor(uniform() x n): an integer in [0, n).
  std::uint64_t below(std::uint64_t n);

 private:
  std::uint64_t state_;
};

// The seed of a named stream: the first output of SplitMix64(seed ^ fnv1a64(name)).
std::uint64_t derive_seed(std::uint64_t seed, std::string_view name);

}  // namespace wafersim::models::reference
