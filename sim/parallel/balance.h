#pragma once
// Where the bands of a wafer's rows should lie for equal work (sim/parallel/row_bands.h): a
// pure function of the current boundaries and the work each band reported, so that its
// behaviour is checked without threads (tests/unit/parallel_bands_test.cpp).

#include <cstdint>
#include <vector>

namespace wafersim::sim::parallel {

// Work units of the cost model (docs/performance.md, "Parallel engine"): a core tick costs
// about twice a router visit, so the partition weighs them so.
constexpr std::uint64_t kCoreTickUnits = 2;
constexpr std::uint64_t kRouterVisitUnits = 1;

// The largest band's work over the mean (1: even; 0 when nothing was done).
[[nodiscard]] double imbalance(const std::vector<std::uint64_t>& work);

// New band boundaries, in granules: `first[b]` is band b's first granule (ascending, first[0]
// = 0) and the granule count last; `work[b]` what band b did. Each band's work is taken as
// spread evenly over its granules, and the new boundaries fall at equal shares of the total,
// each band keeping at least one granule. Returns `first` unchanged when nothing was done.
[[nodiscard]] std::vector<std::uint32_t> balance_bands(const std::vector<std::uint32_t>& first,
                                                       const std::vector<std::uint64_t>& work);

}  // namespace wafersim::sim::parallel
