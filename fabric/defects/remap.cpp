#include "fabric/defects/remap.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace wafersim::fabric::defects {

// The definition itself, cell by cell: each group's logical cores take its good positions in
// order (summarize() reaches the same from the dead cores' steps).
Remap::Remap(const DefectMap& map, const RedundancyConfig& redundancy) : map_(map), redundancy_(redundancy) {
  const PhysicalArray& a = map_.array();
  const std::uint32_t n = a.logical_positions();
  pos_.resize(std::size_t{a.lines()} * n);
  std::vector<std::uint8_t> dead(a.positions());
  auto next_dead = map_.dead().begin();
  for (std::uint32_t line = 0; line < a.lines() && ok_; ++line) {
    std::fill(dead.begin(), dead.end(), 0);
    for (; next_dead != map_.dead().end() && *next_dead / a.positions() == line; ++next_dead)
      dead[*next_dead % a.positions()] = 1;
    for (std::uint32_t g = 0; g < a.groups() && ok_; ++g) {
      const std::uint32_t first = a.group_start(g), end = first + a.group_size(g) + a.spares();
      std::uint32_t p = first;
      for (std::uint32_t i = 0; i < a.group_size(g); ++i, ++p) {
        while (p < end && dead[p]) ++p;
        if (p == end) {
          ok_ = false;
          failure_ = fmt::format("{} {}, group {}: more dead cores than its {} spare{}", a.rows() ? "column" : "row",
                                 line, g, a.spares(), a.spares() == 1 ? "" : "s");
          break;
        }
        pos_[std::size_t{line} * n + a.group_logical_start(g) + i] = p;
      }
    }
  }
  if (!ok_ || redundancy_.max_offset == 0) return;
  for (std::uint32_t line = 0; line + 1 < a.lines(); ++line)
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t p = position(line, i), q = position(line + 1, i);
      if ((p > q ? p - q : q - p) > redundancy_.max_offset) {
        ok_ = false;
        failure_ = fmt::format("{}s {} and {}: logical neighbours {} positions apart, beyond redundancy.max_offset",
                               a.rows() ? "column" : "row", line, line + 1, p > q ? p - q : q - p);
        return;
      }
    }
}

void Remap::require_ok(const char* what) const {
  if (!ok_)
    throw std::logic_error(fmt::format("Remap::{} on a wafer that cannot present its grid: {}", what, failure_));
}

Cell Remap::physical(std::uint32_t x, std::uint32_t y) const {
  require_ok("physical");
  const PhysicalArray& a = array();
  const std::uint32_t line = a.line_of(x, y), p = position(line, a.position_of(x, y));
  return Cell{a.x_of(line, p), a.y_of(line, p)};
}

std::uint32_t Remap::dead_between(std::uint32_t line, std::uint32_t from, std::uint32_t to) const {
  const auto& d = map_.dead();
  const auto lo = std::upper_bound(d.begin(), d.end(), array().index(line, from));
  const auto hi = std::lower_bound(d.begin(), d.end(), array().index(line, to));
  return hi > lo ? static_cast<std::uint32_t>(hi - lo) : 0u;
}

std::uint32_t Remap::extra_hops(std::uint32_t x, std::uint32_t y, Port p) const {
  require_ok("extra_hops");
  const PhysicalArray& a = array();
  std::uint32_t nx = x, ny = y;
  if (p == Port::North) --ny;
  if (p == Port::South) ++ny;
  if (p == Port::West) --nx;
  if (p == Port::East) ++nx;
  if (nx >= a.logical_width() || ny >= a.logical_height() || p == Port::Ramp)
    throw std::logic_error("Remap::extra_hops: no logical neighbour there");
  const std::uint32_t l0 = a.line_of(x, y), l1 = a.line_of(nx, ny);
  const std::uint32_t p0 = position(l0, a.position_of(x, y)), p1 = position(l1, a.position_of(nx, ny));
  if (l0 == l1) return dead_between(l0, std::min(p0, p1), std::max(p0, p1));  // along the line
  return p0 > p1 ? p0 - p1 : p1 - p0;                                         // across: the offset
}

RemapSummary Remap::summary() const {
  require_ok("summary");
  const PhysicalArray& a = array();
  RemapSummary s;
  s.dead = map_.dead().size();
  auto link = [&s](std::uint32_t extra) {
    ++s.links;
    if (!extra) return;
    s.extra_hops += extra;
    ++s.detour_links;
    s.worst_extra = std::max(s.worst_extra, extra);
  };
  for (std::uint32_t y = 0; y < a.logical_height(); ++y)
    for (std::uint32_t x = 0; x < a.logical_width(); ++x) {
      if (x + 1 < a.logical_width()) link(extra_hops(x, y, Port::East));
      if (y + 1 < a.logical_height()) link(extra_hops(x, y, Port::South));
    }
  return s;
}

std::shared_ptr<const LinkDelays> Remap::link_delays(sim::Cycle bypass) const {
  require_ok("link_delays");
  const PhysicalArray& a = array();
  const std::uint32_t w = a.logical_width(), h = a.logical_height();
  auto delays = std::make_shared<LinkDelays>(w * h);
  for (std::uint32_t y = 0; y < h; ++y)
    for (std::uint32_t x = 0; x < w; ++x)
      for (Port p : {Port::East, Port::South}) {
        if ((p == Port::East && x + 1 == w) || (p == Port::South && y + 1 == h)) continue;
        const std::uint64_t cycles = std::uint64_t{extra_hops(x, y, p)} * bypass.count();
        if (cycles == 0) continue;
        if (cycles > std::numeric_limits<std::uint16_t>::max())
          throw std::logic_error(fmt::format("a detour of {} cycles at ({}, {})", cycles, x, y));
        const std::uint32_t r = y * w + x, n = p == Port::East ? r + 1 : r + w;
        delays->set_extra(r, index(p), static_cast<std::uint16_t>(cycles));
        delays->set_extra(n, index(opposite(p)), static_cast<std::uint16_t>(cycles));
      }
  if (!delays->any()) return nullptr;
  return delays;
}

}  // namespace wafersim::fabric::defects
