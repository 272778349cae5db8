#pragma once
// SplitMix64 (Steele, Lea and Flood 2014) and FNV-1a: the one definition behind every seeded
// stream (traffic sources, sampled sweeps, host data, the reference's initial values, sparsity
// masks), so a seed gives the same sequence on every compiler and standard library.

#include <cstdint>
#include <string_view>

namespace wafersim::sim {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed = 0) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // (next() >> 11) x 2^-53: uniform in [0, 1) on a grid of 2^-53.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

// 64-bit FNV-1a of the bytes of `s`.
inline std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

}  // namespace wafersim::sim
