#pragma once
// Bernoulli injection: in every cycle a source creates a packet with probability p,
// independently of other cycles. Drawn as geometric gaps, so a source costs nothing in
// the cycles between its packets.

#include <cmath>
#include <cstdint>

#include "fabric/traffic/rng.h"

namespace wafersim::fabric::traffic {

class BernoulliProcess {
 public:
  // `p` is the packet probability per cycle (offered wavelets per cycle / packet size).
  explicit BernoulliProcess(double p) : p_(p), log_q_(p < 1 ? std::log1p(-p) : 0) {}

  // The number of cycles without a packet before the next one (0: the very next cycle
  // considered has one). Never for p = 0 (returns a huge gap).
  [[nodiscard]] std::uint64_t gap(SplitMix64& rng) const {
    if (p_ >= 1) return 0;
    if (p_ <= 0) return kNever;
    const double g = std::floor(std::log(rng.unit()) / log_q_);
    return g >= static_cast<double>(kNever) ? kNever : static_cast<std::uint64_t>(g);
  }
  [[nodiscard]] double probability() const { return p_; }

  static constexpr std::uint64_t kNever = std::uint64_t{1} << 62;

 private:
  double p_;
  double log_q_;
};

}  // namespace wafersim::fabric::traffic
