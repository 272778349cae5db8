#include "fabric/defects/defect_map.h"

#include <algorithm>
#include <cmath>

#include "sim/splitmix64.h"

namespace wafersim::fabric::defects {

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
  sim::SplitMix64 s(seed);
  return s.next() ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL);
}

DefectMap DefectMap::sample(const PhysicalArray& array, double p, std::uint64_t seed, std::uint64_t stream) {
  DefectMap m(array);
  const std::uint64_t n = array.cores();
  if (p <= 0) return m;
  if (p >= 1) {
    for (std::uint64_t i = 0; i < n; ++i) m.dead_.push_back(i);
    return m;
  }
  // Geometric gaps between dead cores: the cores up to the next dead one are Bernoulli(p)
  // failures, so the gap is floor(log(u) / log(1 - p)) for u uniform in (0, 1].
  sim::SplitMix64 rng(stream_seed(seed, stream));
  const double scale = 1.0 / std::log1p(-p);
  std::uint64_t i = 0;
  while (true) {
    const double u = static_cast<double>((rng.next() >> 11) + 1) * 0x1.0p-53;
    const double gap = std::floor(std::log(u) * scale);
    if (gap >= static_cast<double>(n - i)) break;
    i += static_cast<std::uint64_t>(gap);
    m.dead_.push_back(i);
    if (++i >= n) break;
  }
  return m;
}

DefectMap DefectMap::from_config(const PhysicalArray& array, const DefectConfig& config, std::uint32_t wafer) {
  DefectMap m = sample(array, config.core_kill_probability(), config.seed, wafer);
  for (const DeadCore& c : config.cores) m.kill(c.x, c.y);
  for (const DeadLink& l : config.links) m.kill_link(l);
  return m;
}

void DefectMap::kill(std::uint32_t x, std::uint32_t y) {
  const std::uint64_t i = array_.index(array_.line_of(x, y), array_.position_of(x, y));
  const auto it = std::lower_bound(dead_.begin(), dead_.end(), i);
  if (it == dead_.end() || *it != i) dead_.insert(it, i);
}

void DefectMap::kill_link(const DeadLink& link) {
  std::uint32_t x = link.x, y = link.y;
  if (link.port == Port::East) ++x;
  if (link.port == Port::South) ++y;
  // West and north links: (x, y) is the later core already.
  kill(x, y);
}

bool DefectMap::is_dead(std::uint32_t line, std::uint32_t position) const {
  return std::binary_search(dead_.begin(), dead_.end(), array_.index(line, position));
}

}  // namespace wafersim::fabric::defects
