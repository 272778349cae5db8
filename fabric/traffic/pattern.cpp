#include "fabric/traffic/pattern.h"

#include <fmt/format.h>

#include "sim/config/diagnostics.h"
#include "sim/errors.h"

namespace wafersim::fabric::traffic {

const std::vector<std::string>& Pattern::names() {
  static const std::vector<std::string> n = {"uniform", "transpose", "bit-complement", "bit-reverse",
                                             "shuffle", "tornado",   "neighbor",       "hotspot"};
  return n;
}

Pattern Pattern::make(const std::string& name, std::uint32_t width, std::uint32_t height, hw::PeCoord hotspot,
                      double hotspot_fraction) {
  static const PatternKind kinds[] = {PatternKind::Uniform,    PatternKind::Transpose, PatternKind::BitComplement,
                                      PatternKind::BitReverse, PatternKind::Shuffle,   PatternKind::Tornado,
                                      PatternKind::Neighbor,   PatternKind::Hotspot};
  const auto& n = names();
  for (std::size_t i = 0; i < n.size(); ++i) {
    if (n[i] != name) continue;
    Pattern p(kinds[i], name, width, height);
    const std::uint64_t routers = std::uint64_t{width} * height;
    if (routers < 2) throw sim::InputError("synthetic traffic needs at least 2 routers");
    if (p.kind_ == PatternKind::Transpose && width != height)
      throw sim::InputError(fmt::format("pattern transpose needs a square mesh; this one is {} x {}", width, height));
    if (p.kind_ == PatternKind::BitReverse || p.kind_ == PatternKind::Shuffle) {
      if (routers & (routers - 1))
        throw sim::InputError(
            fmt::format("pattern {} needs a power-of-two number of routers; this mesh has {}", name, routers));
      while ((std::uint64_t{1} << p.bits_) < routers) ++p.bits_;
    }
    if (p.kind_ == PatternKind::Hotspot) {
      if (hotspot.x >= width || hotspot.y >= height)
        throw sim::InputError(
            fmt::format("--hotspot ({}, {}) is outside the {} x {} mesh", hotspot.x, hotspot.y, width, height));
      if (!(hotspot_fraction >= 0 && hotspot_fraction <= 1))
        throw sim::InputError(fmt::format("--hotspot-fraction {} is outside 0 .. 1", hotspot_fraction));
      p.hotspot_ = hotspot.y * width + hotspot.x;
      p.fraction_ = hotspot_fraction;
    }
    return p;
  }
  std::string list;
  for (const auto& s : n) list += (list.empty() ? "" : ", ") + s;
  std::string hint = sim::config::closest_match(name, n);
  throw sim::InputError(fmt::format("unknown traffic pattern '{}' (expected one of: {}){}", name, list,
                                    hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
}

std::uint32_t Pattern::by_kind(std::uint32_t src, SplitMix64& rng) const {
  const std::uint32_t x = src % w_, y = src / w_, n = w_ * h_;
  switch (kind_) {
    case PatternKind::Uniform:
      return uniform_other(src, rng);
    case PatternKind::Transpose:
      return x * w_ + y;
    case PatternKind::BitComplement:
      return (h_ - 1 - y) * w_ + (w_ - 1 - x);
    case PatternKind::BitReverse: {
      std::uint32_t d = 0;
      for (std::uint32_t b = 0; b < bits_; ++b)
        if (src & (1u << b)) d |= 1u << (bits_ - 1 - b);
      return d;
    }
    case PatternKind::Shuffle:
      return ((src << 1) | (src >> (bits_ - 1))) & (n - 1);
    case PatternKind::Tornado:
      return ((y + (h_ + 1) / 2 - 1) % h_) * w_ + (x + (w_ + 1) / 2 - 1) % w_;
    case PatternKind::Neighbor:
      return ((y + 1) % h_) * w_ + (x + 1) % w_;
    case PatternKind::Hotspot:
      if (src != hotspot_ && rng.unit() <= fraction_) return hotspot_;
      return uniform_other(src, rng);
  }
  return src;
}

double Pattern::bound() const {
  if (w_ != h_ || w_ < 2) return 0;
  if (kind_ == PatternKind::Uniform) return 4.0 / w_;
  if (kind_ == PatternKind::Transpose) return 1.0 / (w_ - 1);
  return 0;
}

}  // namespace wafersim::fabric::traffic
