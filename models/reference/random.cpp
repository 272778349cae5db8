#include "models/reference/random.h"

namespace wafersim::models::reference {

double SplitMix64::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

std::uint64_t SplitMix64::below(std::uint64_t n) {
  const auto k = static_cast<std::uint64_t>(uniform() * static_cast<double>(n));
  return k < n ? k : n - 1;
}

std::uint64_t derive_seed(std::uint64_t seed, std::string_view name) {
  return SplitMix64(seed ^ sim::fnv1a64(name)).next();
}

}  // namespace wafersim::models::reference
