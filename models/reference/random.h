#pragma once
// The deterministic generator of the reference: splitmix64 (Steele, Lea and Flood 2014), its
// uniform doubles and per-name seeds, identical on every host.

#include <cstdint>
#include <string_view>

#include "sim/splitmix64.h"

namespace wafersim::models::reference {

class SplitMix64 : public sim::SplitMix64 {
 public:
  using sim::SplitMix64::SplitMix64;
  using sim::SplitMix64::uniform;
  // lo + (hi - lo) x uniform(), in double.
  double uniform(double lo, double hi);
  // floor(uniform() x n): an integer in [0, n).
  std::uint64_t below(std::uint64_t n);
};

// The seed of a named stream: the first output of SplitMix64(seed ^ sim::fnv1a64(name)).
std::uint64_t derive_seed(std::uint64_t seed, std::string_view name);

}  // namespace wafersim::models::reference
