// The partition of a wafer's rows into bands (sim/parallel/row_bands.h) and where balance
// moves them (sim/parallel/balance.h), checked without threads.

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace wafersim::sim::parallel
