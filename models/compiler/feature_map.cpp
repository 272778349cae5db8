#include "models/compiler/feature_map.h"

#include <algorithm>

namespace wafersim::models::compiler {

std::uint32_t FeatureMap::parts_of_group(std::uint32_t g) const {
  const std::uint64_t rows = slice_of_group(g + 1) - std::uint64_t{slice_of_group(g)};
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(rows, head_dim));
}

FeatureMap::Part FeatureMap::part_of(std::uint32_t s) const {
  Part p;
  p.group = static_cast<std::uint32_t>(((std::uint64_t{s} + 1) * groups - 1) / slices);
  p.part = s - slice_of_group(p.group);
  p.parts = parts_of_group(p.group);
  if (p.part < p.parts) p.dims = split(head_dim, p.parts, p.part);
  return p;
}

std::vector<Span> FeatureMap::runs(std::uint32_t s) const {
  std::vector<Span> r;
  if (kind == Kind::HeadParts) {
    const Part p = part_of(s);
    if (p.dims.empty()) return r;
    const std::uint64_t gf = group_features();
    for (std::uint64_t h = 0; h < gf / head_dim; ++h)
      r.push_back({p.group * gf + h * head_dim + p.dims.lo, p.group * gf + h * head_dim + p.dims.hi});
    return r;
  }
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
  if (kind == Kind::HeadParts) return part_of(s).dims.size() * (group_features() / head_dim);
  std::uint64_t n = 0;
  for (std::uint32_t g = 0; g < groups; ++g) n += slice_of_group(g) == s ? group_features() : 0;
  return n;
}

std::uint64_t FeatureMap::max_count() const {
  if (kind == Kind::Even) return features == 0 ? 0 : (features + slices - 1) / slices;
  std::uint64_t most = 0;
  if (kind == Kind::HeadParts) {
    for (std::uint32_t s = 0; s < slices; ++s) most = std::max(most, count(s));
    return most;
  }
  std::uint32_t run = 0, last = ~0u;
  for (std::uint32_t g = 0; g < groups; ++g) {
    const std::uint32_t s = slice_of_group(g);
    run = s == last ? run + 1 : 1;
    last = s;
    most = std::max<std::uint64_t>(most, run);
  }
  return most * group_features();
}

bool FeatureMap::in_order() const {
  std::uint64_t next = 0;
  for (std::uint32_t s = 0; s < slices; ++s)
    for (const Span& r : runs(s)) {
      if (r.lo != next) return false;
      next = r.hi;
    }
  return next == features;
}

std::uint32_t FeatureMap::owner(std::uint64_t f) const {
  if (kind == Kind::Heads) return slice_of_group(static_cast<std::uint32_t>(f / group_features()));
  if (kind == Kind::HeadParts) {
    const auto g = static_cast<std::uint32_t>(f / group_features());
    const std::uint64_t d = f % group_features() % head_dim;
    const std::uint32_t n = parts_of_group(g);
    std::uint32_t r = static_cast<std::uint32_t>(d * n / head_dim);
    while (r > 0 && split(head_dim, n, r).lo > d) --r;
    while (split(head_dim, n, r).hi <= d) ++r;
    return slice_of_group(g) + r;
  }
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
