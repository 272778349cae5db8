#pragma once
// Resolved configuration of a wafer's redundancy (the platform's `redundancy:` section): the
// spare rows or columns of its physical array, how far the bypass links reach, what a bypass
// costs, and whether the fabric may rebuild its routes around a link that fails while running.

#include <cstdint>

#include "hw/pe_config.h"
#include "sim/config/schema.h"
#include "sim/types.h"

namespace wafersim::fabric::defects {

// The direction the spares run in: spare rows absorb dead cores along each column (a column's
// cores below a dead one move down one row), spare columns along each row.
enum class SpareAxis : std::uint8_t { Rows, Columns };

struct RedundancyConfig {
  SpareAxis axis = SpareAxis::Rows;
  std::uint32_t spares = 0;      // spare rows (or columns) per group
  std::uint32_t group = 0;       // logical rows (or columns) per group, its spares after them; 0: one group
  std::uint32_t max_offset = 1;  // the largest row (column) offset a bypass link bridges between neighbours
  sim::Cycle bypass_latency{1};  // added to a link per dead core it passes over and per row of offset
  bool reroute = false;          // links that fail while running are routed around (else a simulation error)

  [[nodiscard]] bool any() const { return spares != 0; }
  // Spare rows and spare columns are exclusive; a group larger than the logical side is one group.
  static RedundancyConfig read(sim::config::Section s, const hw::WaferConfig& wafer);
};

}  // namespace wafersim::fabric::defects
