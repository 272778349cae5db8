#pragma once
// The root causes of a fabric's credit stalls: each stalled output is followed downstream,
// region by region, along the most-stalled onward output, until it reaches what does not
// stall but is full: an ejection (a router's ramp towards its core), a link, or the wafer's
// edge. Outputs that lead to the same sink are one cause, with the tree of outputs behind it.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

namespace wafersim::app::report {

// The whole run's totals of one wafer's fabric on its region grid (cols x rows regions of
// `size` x `size` routers from (x0, y0)): per region and output direction (north, east,
// south, west, ramp) the wavelets forwarded, credit-stall cycles and links.
struct OutputTotals {
  std::uint32_t cols = 0, rows = 0, size = 1, x0 = 0, y0 = 0;
  std::uint64_t cycles = 0;
  std::vector<std::vector<std::uint64_t>> forwarded, stalled, links;  // [cell][dir]
};

// At most `top` causes, largest first by the stall cycles behind them: [{kind ("ejection",
// "link" or "edge"), x0, y0, x1, y1 (the sink's region), dir, utilization, stalled (cycles
// behind it), share (of all stall cycles), outputs: [{x0, y0, dir, stalled, hops}] (the
// outputs behind it, most stalled first, at most 12)}].
nlohmann::ordered_json root_causes(const OutputTotals& t, std::uint32_t top);

}  // namespace wafersim::app::report
