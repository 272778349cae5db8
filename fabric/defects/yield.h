#pragma once
// Yield of wafers under random defects, by Monte Carlo: how many sampled wafers can still
// present their logical grid, how many cores die and what their detours cost; over a range of
// defect densities and core sizes (docs/defects.md; `wafersim yield`).

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/defects/physical_array.h"
#include "fabric/defects/redundancy_config.h"

namespace wafersim::fabric::defects {

// Trials of one wafer design at one defect density and core area.
struct YieldPoint {
  double density_per_mm2 = 0, core_area_mm2 = 0;
  std::uint32_t width = 0, height = 0;  // the logical grid
  std::uint64_t physical_cores = 0, logical_cores = 0;
  std::uint32_t trials = 0, good = 0;  // wafers sampled; those presenting the logical grid
  double mean_dead = 0;                // dead cores per wafer
  // Over the good wafers: hops per logical link (mean of the wafers' means), the longest link
  // of any, and the mean share of links that take a detour.
  double mean_stretch = 1;
  std::uint32_t worst_stretch = 1;
  double detour_share = 0;
  // The closed form for independent defects: every group of every line keeps at most its
  // spares dead (exact when no offset can exceed redundancy.max_offset, an upper bound otherwise).
  double independent_yield = 1;
  [[nodiscard]] double yield() const { return trials ? static_cast<double>(good) / trials : 0.0; }
  [[nodiscard]] double active_share() const {
    return physical_cores ? static_cast<double>(logical_cores) / static_cast<double>(physical_cores) : 0.0;
  }
};

// `trials` wafers of `array`, each core dead independently with probability
// 1 - exp(-density x area); trial t samples stream t of `seed` (the same points for the same
// arguments).
YieldPoint yield_point(const PhysicalArray& array, const RedundancyConfig& redundancy, double density_per_mm2,
                       double core_area_mm2, std::uint32_t trials, std::uint64_t seed);

// The closed form of YieldPoint::independent_yield for a per-core kill probability p.
double independent_yield(const PhysicalArray& array, double p);

// The same silicon in cores of another size: the logical grid scaled by sqrt(base / area) on
// each side (at least 1 x 1), with the same redundancy per group.
PhysicalArray scaled_array(const PhysicalArray& array, const RedundancyConfig& redundancy, double base_area_mm2,
                           double area_mm2);

struct YieldStudy {
  YieldPoint point;               // at the density and core area asked for
  std::vector<YieldPoint> curve;  // every density for every core area (area-major)
  std::vector<double> densities;  // per mm^2
  std::vector<double> areas;      // mm^2
};

struct YieldOptions {
  double density_per_mm2 = 0.001;
  double core_area_mm2 = 0.05;
  std::uint32_t trials = 100;
  std::uint64_t seed = 1;
  // The curve: the density times each of these, for the core area times each of those.
  std::vector<double> density_factors{0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000};
  std::vector<double> area_factors{0.25, 1, 4, 16, 64};
};

// Contract: the point and the curve as yield_point() gives them, the array scaled per area
// (scaled_array); deterministic in the options.
YieldStudy yield_study(const PhysicalArray& array, const RedundancyConfig& redundancy, const YieldOptions& options);

nlohmann::ordered_json to_json(const YieldPoint& p);
nlohmann::ordered_json to_json(const YieldStudy& s);

}  // namespace wafersim::fabric::defects
