#include "models/reference/random.h"

#include <cmath>

namespace wafersim::models::reference {

std::uint64_t SplitMix64::next() {
  state_ += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() { return std::ldexp(static_cast<double>(next() >> 11), -53); }

double SplitMix64::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

std::uint64_t SplitMix64::below(std::uint64_t n) {
  const auto k = static_cast<std::uint64_t>(uniform() * static_cast<double>(n));
  return k < n ? k : n - 1;
}

std::uint64_t derive_seed(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ULL;
  }
  return SplitMix64(seed ^ h).next();
}

}  // namespace wafersim::models::reference
