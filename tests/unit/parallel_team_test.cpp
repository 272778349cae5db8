// sim/parallel/team: every part once, on its member, visible to the caller; failures; many
// jobs in a row, with the workers spinning or asleep; teams larger than the machine's cores.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sim/parallel/team.h"

namespace wafersim::sim::parallel::parallel_team_test {
namespace {

TEST(Team, EveryPartRunsOnceOnItsMember) {
  for (unsigned size : {1u, 2u, 3u, 4u, 8u}) {
    Team team(size);
    ASSERT_EQ(team.size(), size);
    for (std::size_t parts : {0u, 1u, 3u, 7u, 100u}) {
      std::vector<int> runs(parts, 0);
      std::vector<std::thread::id> where(parts);
      team.run(parts, [&](std::size_t p) {
        ++runs[p];
        where[p] = std::this_thread::get_id();
      });
      for (std::size_t p = 0; p < parts; ++p) {
        EXPECT_EQ(runs[p], 1) << "size " << size << " part " << p;
        EXPECT_EQ(where[p], where[p % size]) << "size " << size << " part " << p;
      }
      if (parts) {
        EXPECT_EQ(where[0], std::this_thread::get_id());
      }
      if (parts > 1 && size > 1) {
        EXPECT_NE(where[1], where[0]);
      }
    }
  }
}

TEST(Team, WhatThePartsWriteIsVisibleAndTheNextJobSeesIt) {
  Team team(4);
  std::vector<std::uint64_t> v(1000);
  std::iota(v.begin(), v.end(), 0);
  for (int round = 0; round < 50; ++round) team.run(v.size(), [&](std::size_t p) { v[p] = v[p] * 3 + 1; });
  std::uint64_t x = 7;
  for (int round = 0; round < 50; ++round) x = x * 3 + 1;
  EXPECT_EQ(v[7], x);
}

TEST(Team, TheLowestFailingPartIsRethrownAfterTheOthersRan) {
  Team team(3);
  std::vector<int> ran(10, 0);
  try {
    team.run(10, [&](std::size_t p) {
      ran[p] = 1;
      if (p == 5 || p == 3 || p == 8) throw std::runtime_error("part " + std::to_string(p));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 3");
  }
  EXPECT_EQ(std::accumulate(ran.begin(), ran.end(), 0), 10);
  // The team is usable afterwards.
  std::atomic<int> n{0};
  team.run(6, [&](std::size_t) { ++n; });
  EXPECT_EQ(n.load(), 6);
}

// Oversubscribed (8 threads on fewer cores), many short jobs, and jobs after the workers have
// gone to sleep: none lost.
TEST(Team, ManyJobsSpinningAndAfterSleep) {
  Team team(8);
  std::atomic<std::uint64_t> sum{0};
  for (int j = 0; j < 2000; ++j) team.run(8, [&](std::size_t p) { sum += p; });
  EXPECT_EQ(sum.load(), 2000u * 28u);
  for (int j = 0; j < 3; ++j) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    team.run(16, [&](std::size_t p) { sum += p; });
  }
  EXPECT_EQ(sum.load(), 2000u * 28u + 3u * 120u);
  EXPECT_EQ(team.jobs(), 2003u);
}

TEST(Team, TimedTeamsCountPartsPerMember) {
  Team team(2, true);
  team.run(5, [](std::size_t) { std::this_thread::sleep_for(std::chrono::microseconds(200)); });
  ASSERT_EQ(team.times().size(), 2u);
  EXPECT_EQ(team.times()[0].parts, 3u);  // parts 0, 2, 4
  EXPECT_EQ(team.times()[1].parts, 2u);  // parts 1, 3
  EXPECT_GE(team.times()[0].busy_ns, 600000u);
  EXPECT_GE(team.times()[1].busy_ns, 400000u);
  EXPECT_THROW(Team(0), std::invalid_argument);
}

}  // namespace
}  // namespace wafersim::sim::parallel::parallel_team_test
