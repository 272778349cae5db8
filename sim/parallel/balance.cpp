#include "sim/parallel/balance.h"

#include <algorithm>
#include <cmath>

namespace wafersim::sim::parallel {

double imbalance(const std::vector<std::uint64_t>& work) {
  std::uint64_t total = 0, most = 0;
  for (const std::uint64_t w : work) {
    total += w;
    most = std::max(most, w);
  }
  if (total == 0) return 0;
  return static_cast<double>(most) * static_cast<double>(work.size()) / static_cast<double>(total);
}

std::vector<std::uint32_t> balance_bands(const std::vector<std::uint32_t>& first,
                                         const std::vector<std::uint64_t>& work) {
  const std::size_t bands = work.size();
  long double total = 0;
  for (const std::uint64_t w : work) total += static_cast<long double>(w);
  if (total == 0 || bands < 2) return first;
  const std::uint32_t granules = first.back();
  std::vector<std::uint32_t> out(bands + 1);
  out[0] = 0;
  out[bands] = granules;
  std::size_t j = 0;       // the band the next boundary falls in
  long double before = 0;  // work of bands 0 .. j-1
  for (std::size_t k = 1; k < bands; ++k) {
    const long double target = total * static_cast<long double>(k) / static_cast<long double>(bands);
    while (j + 1 < bands && before + static_cast<long double>(work[j]) <= target) before += work[j++];
    const long double share = work[j] ? (target - before) / static_cast<long double>(work[j]) : 0;
    const long double at = first[j] + share * static_cast<long double>(first[j + 1] - first[j]);
    auto g = static_cast<std::uint32_t>(std::llround(at));
    // At least one granule for this band and for each band after it.
    g = std::max(g, out[k - 1] + 1);
    g = std::min(g, granules - static_cast<std::uint32_t>(bands - k));
    out[k] = g;
  }
  return out;
}

}  // namespace wafersim::sim::parallel
