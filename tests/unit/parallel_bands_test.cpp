// The partition of a wafer's rows into bands (sim/parallel/row_bands.h) and where balance
// moves them (sim/parallel/balance.h), checked without threads where the work is given.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/parallel/balance.h"
#include "sim/parallel/row_bands.h"
#include "sim/parallel/team.h"

namespace wafersim::sim::parallel {
namespace {

using Firsts = std::vector<std::uint32_t>;
using Work = std::vector<std::uint64_t>;

TEST(ParallelBands, ImbalanceIsTheLargestOverTheMean) {
  EXPECT_DOUBLE_EQ(imbalance({10, 10, 10, 10}), 1.0);
  EXPECT_DOUBLE_EQ(imbalance({30, 10, 0, 0}), 3.0);
  EXPECT_DOUBLE_EQ(imbalance({0, 0}), 0.0);
}

TEST(ParallelBands, BoundariesFallAtEqualSharesOfTheWork) {
  // Even work stays where it is; nothing done changes nothing.
  EXPECT_EQ(balance_bands({0, 4, 8}, {50, 50}), (Firsts{0, 4, 8}));
  EXPECT_EQ(balance_bands({0, 4, 8}, {0, 0}), (Firsts{0, 4, 8}));
  // All the work in band 1's four granules: the boundary moves to the middle of them.
  EXPECT_EQ(balance_bands({0, 4, 8}, {0, 80}), (Firsts{0, 6, 8}));
  // Three bands, the work in the first: each keeps at least one granule.
  EXPECT_EQ(balance_bands({0, 2, 4, 6}, {90, 0, 0}), (Firsts{0, 1, 2, 6}));
  // Spread over granules 0-5 as 30 / 30 / 0 by bands of two: thirds at 2 and 4.
  EXPECT_EQ(balance_bands({0, 2, 4, 6}, {30, 30, 0}), (Firsts{0, 1, 3, 6}));
}

TEST(ParallelBands, BandsHoldWholeGranulesAndKnowTheirRows) {
  Team team(3);
  RowBands bands(&team, 40, 8, 3);  // five granules in three bands
  ASSERT_EQ(bands.count(), 3u);
  EXPECT_TRUE(bands.parallel());
  EXPECT_EQ(bands.firsts(), (Firsts{0, 8, 24, 40}));
  EXPECT_EQ(bands.band_of_row(7), 0u);
  EXPECT_EQ(bands.band_of_row(8), 1u);
  EXPECT_EQ(bands.band_of_row(39), 2u);
  // Fewer granules than threads: one band per granule; one thread or no team: one band.
  EXPECT_EQ(RowBands(&team, 16, 8, 3).count(), 2u);
  Team one(1);
  EXPECT_EQ(RowBands(&one, 64, 8, 4).count(), 1u);
  EXPECT_EQ(RowBands(nullptr, 64, 8, 4).count(), 1u);
  EXPECT_THROW(RowBands(&team, 0, 8, 2), std::invalid_argument);
}

TEST(ParallelBands, RepartitionChecksItsBoundariesAndRunsEveryBand) {
  Team team(2);
  RowBands bands(&team, 32, 8, 2);
  EXPECT_THROW(bands.repartition({0, 4, 32}), std::invalid_argument);      // not a whole granule
  EXPECT_THROW(bands.repartition({0, 8, 16, 32}), std::invalid_argument);  // another band count
  EXPECT_THROW(bands.repartition({0, 32, 32}), std::invalid_argument);     // an empty band
  bands.repartition({0, 24, 32});
  EXPECT_EQ(bands.band_of_row(23), 0u);
  EXPECT_EQ(bands.rebalances(), 1u);
  std::vector<int> seen(2, 0);
  bool inside = false;
  bands.run([&](std::size_t b) {
    seen[b] += 1;
    if (b == 0) inside = bands.in_parts();
  });
  EXPECT_EQ(seen, (std::vector<int>{1, 1}));
  EXPECT_TRUE(inside);
  EXPECT_FALSE(bands.in_parts());
}

// Parts whose cost is 2 us of spinning per row of 0-15 they hold: weighed by wall time, the
// boundary of two bands over 64 rows moves from 32 to 16, then to 8 (equal time), where the
// rounding to whole granules keeps it.
TEST(ParallelBands, WallTimeMovesTheBoundaryToEqualTime) {
  Team team(2);
  RowBands bands(&team, 64, 8, 2);
  bands.set_measure(BandMeasure::wall_time);
  ASSERT_EQ(bands.first_row(1), 32u);
  auto spin_in = [](const RowBands& in) {
    return [&in](std::size_t b) {
      const std::uint32_t hot = std::min(in.end_row(b), 16u) - std::min(in.first_row(b), 16u);
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(2 * hot);
      while (std::chrono::steady_clock::now() < until) {
      }
    };
  };
  const auto spin = spin_in(bands);
  std::uint32_t lowest = bands.first_row(1);
  for (int job = 0; job < 1024 * 6; ++job) {  // six looks at the time
    bands.run(spin);
    if (bands.maybe_rebalance()) lowest = std::min(lowest, bands.first_row(1));
  }
  EXPECT_EQ(lowest, 8u);
  EXPECT_GE(bands.rebalances(), 2u);
  // Units: nothing was reported, so the same parts move nothing.
  RowBands units(&team, 64, 8, 2);
  for (int job = 0; job < 128 * 2; ++job) {
    units.run(spin_in(units));
    EXPECT_FALSE(units.maybe_rebalance());
  }
  EXPECT_EQ(units.first_row(1), 32u);
}

}  // namespace
}  // namespace wafersim::sim::parallel
