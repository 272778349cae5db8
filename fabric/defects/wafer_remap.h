#pragma once
// The remap of one wafer of a platform with defects, as its assembly takes it: the defect map
// (the platform's list, or its density sampled for this wafer), the logical grid's detours as
// link delays for the mesh, and the figures its statistics report.

#include <cstdint>
#include <memory>

#include "fabric/defects/defect_config.h"
#include "fabric/defects/physical_array.h"
#include "fabric/defects/redundancy_config.h"
#include "fabric/defects/remap_summary.h"
#include "fabric/link_delays.h"
#include "sim/stats/stats.h"

namespace wafersim::fabric::defects {

struct WaferRemap {
  std::uint32_t wafer = 0;
  std::uint64_t physical_cores = 0, logical_cores = 0;
  RemapSummary summary;
  std::shared_ptr<const LinkDelays> delays;  // null: no link is longer than a hop
};

// Contract: deterministic in its arguments; throws sim::InputError (exit code 2) naming the
// wafer, the seed and the first group that fails when the physical array cannot present the
// logical grid.
WaferRemap remap_wafer(const PhysicalArray& array, const RedundancyConfig& redundancy, const DefectConfig& defects,
                       std::uint32_t wafer);

// The remap's figures under `g` (dead cores, detour links, extra hops, stretch); `r` must
// outlive the statistics.
void add_stats(sim::stats::Group& g, const WaferRemap& r);

}  // namespace wafersim::fabric::defects
