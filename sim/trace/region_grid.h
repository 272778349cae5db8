#pragma once
// A rectangle of routers cut into square regions of R x R (the last column and row of
// regions may be narrower), so a whole wafer's windows and heatmaps stay a bounded size.

#include <cstdint>

#include "sim/trace/trace_options.h"

namespace wafersim::sim::trace {

struct RegionGrid {
  Rect area;               // the routers covered
  std::uint32_t size = 1;  // R
  std::uint32_t cols = 1, rows = 1;

  // The smallest R whose regions over `area` number at most `max_cells`.
  static RegionGrid fit(const Rect& area, std::uint32_t max_cells);

  [[nodiscard]] std::uint32_t cells() const { return cols * rows; }
  // The region of router (x, y), which must be inside `area`.
  [[nodiscard]] std::uint32_t cell(std::uint32_t x, std::uint32_t y) const {
    return (y - area.y0) / size * cols + (x - area.x0) / size;
  }
  // The routers of region i.
  [[nodiscard]] Rect rect(std::uint32_t i) const;
};

}  // namespace wafersim::sim::trace
