#pragma once
// A small, fast, seedable random stream (SplitMix64); one per traffic source, so results
// do not depend on the order in which sources are processed.

#include <cstdint>

#include "sim/splitmix64.h"

namespace wafersim::fabric::traffic {

class SplitMix64 : public sim::SplitMix64 {
 public:
  using sim::SplitMix64::SplitMix64;
  // An independent stream for `stream` (e.g. a source index) under `seed`.
  static SplitMix64 stream(std::uint64_t seed, std::uint64_t stream) {
    SplitMix64 s(seed);
    return SplitMix64(s.next() ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL));
  }

  // Uniform in (0, 1].
  double unit() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }
  // Uniform in 0 .. n-1.
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(((next() >> 32) * std::uint64_t{n}) >> 32); }
};

}  // namespace wafersim::fabric::traffic
