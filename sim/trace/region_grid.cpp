#include "sim/trace/region_grid.h"

#include <algorithm>
#include <stdexcept>

namespace wafersim::sim::trace {

RegionGrid RegionGrid::fit(const Rect& area, std::uint32_t max_cells) {
  if (max_cells == 0) throw std::logic_error("RegionGrid::fit: max_cells must be at least 1");
  RegionGrid g;
  g.area = area;
  const std::uint32_t w = area.width(), h = area.height();
  auto count = [&](std::uint32_t r) { return std::uint64_t{(w + r - 1) / r} * ((h + r - 1) / r); };
  // count() only falls as R grows; search the smallest R that fits.
  std::uint32_t lo = 1, hi = std::max(w, h);
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (count(mid) <= max_cells)
      hi = mid;
    else
      lo = mid + 1;
  }
  g.size = lo;
  g.cols = (w + lo - 1) / lo;
  g.rows = (h + lo - 1) / lo;
  return g;
}

Rect RegionGrid::rect(std::uint32_t i) const {
  const std::uint32_t cx = i % cols, cy = i / cols;
  Rect r;
  r.x0 = area.x0 + cx * size;
  r.y0 = area.y0 + cy * size;
  r.x1 = std::min(area.x1, r.x0 + size - 1);
  r.y1 = std::min(area.y1, r.y0 + size - 1);
  return r;
}

}  // namespace wafersim::sim::trace
