#pragma once
// What a defect map does to a wafer, without building its remap: whether the physical array
// can still present the logical grid, and the detours the logical links take. Works on the
// dead cores alone (and their neighbouring lines), so a Monte Carlo of many wafers costs time
// in proportion to their defects, not their cores (fabric/defects/yield.h).

#include <cstdint>
#include <string>

#include "fabric/defects/defect_map.h"
#include "fabric/defects/redundancy_config.h"

namespace wafersim::fabric::defects {

struct RemapSummary {
  bool ok = true;
  std::string failure;             // why not (the first group found, in line order), when !ok
  std::uint64_t dead = 0;          // dead cores
  std::uint64_t links = 0;         // logical links (each neighbour pair once)
  std::uint64_t extra_hops = 0;    // hops the detours add, over all links
  std::uint64_t detour_links = 0;  // links longer than one hop
  std::uint32_t worst_extra = 0;   // the most hops one link adds
  // Hops per link over all links, and of the longest link (1 without detours).
  [[nodiscard]] double mean_stretch() const {
    return links ? 1.0 + static_cast<double>(extra_hops) / static_cast<double>(links) : 1.0;
  }
  [[nodiscard]] std::uint32_t worst_stretch() const { return 1 + worst_extra; }
};

// Contract: equal to Remap(map, redundancy).summary() (fabric/defects/remap.h), which builds
// every logical core's place; a link's extra hops are the dead cores it passes over along a
// line plus the offset between its two cores across the lines.
RemapSummary summarize(const DefectMap& map, const RedundancyConfig& redundancy);

}  // namespace wafersim::fabric::defects
