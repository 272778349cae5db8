#include "models/compiler/feature_map.h"

#include <algorithm>

namespace wafersim::models::compiler {

std::vector<Span> FeatureMap::runs(std::uint32_t s) const {
  std::vector<Span> r;
  if (kind == Kind::Even) {
    const Span sp = split(features, slices, s);
    if (!sp.empty()) r.push_back(sp);
    return r;
  }
  const std::uint64_t gf = group_features();
  for (std::uint32_t g = 0; g < groups; ++g) {
    if (slice_of_group(g) != s) continue;
    const Span sp{g * gf, (g + 1) * gf};
    if (!r.empty() && r.back().hi == sp.lo)
      r.back().hi = sp.hi;
    else
      r.push_back(sp);
  }
  return r;
}

std::uint64_t FeatureMap::count(std::uint32_t s) const {
  if (kind == Kind::Even) return split(features, slices, s).size();
  std::uint64_t n = 0;
  for (std::uint32_t g = 0; g < groups; ++g) n += slice_of_group(g) == s ? group_features() : 0;
  return n;
}

std::uint64_t FeatureMap::max_count() const {
  if (kind == Kind::Even) return features == 0 ? 0 : (features + slices - 1) / slices;
  std::uint64_t most = 0;
  std::uint32_t run = 0, last = ~0u;
  for (std::uint32_t g = 0; g < groups; ++g) {
    const std::uint32_t s = slice_of_group(g);
    run = s == last ? run + 1 : 1;
    last = s;
    most = std::max<std::uint64_t>(most, run);
  }
  return most * group_features();
}

std::uint32_t FeatureMap::owner(std::uint64_t f) const {
  if (kind == Kind::Heads) return slice_of_group(static_cast<std::uint32_t>(f / group_features()));
  // The s with s*F/n <= f < (s+1)*F/n.
  std::uint64_t s = (f * slices + slices - 1) / features;
  while (s > 0 && split(features, slices, s).lo > f) --s;
  while (split(features, slices, s).hi <= f) ++s;
  return static_cast<std::uint32_t>(s);
}

std::uint64_t FeatureMap::position(std::uint64_t f) const {
  const std::uint32_t s = owner(f);
  std::uint64_t pos = 0;
  for (const Span& r : runs(s)) {
    if (f >= r.lo && f < r.hi) return pos + (f - r.lo);
    pos += r.size();
  }
  return pos;
}

}  // namespace wafersim::models::compiler
