// The engine's index containers: IndexSet (ascending sweeps) and WakeCalendar (wakes at
// cycles, near ones on a wheel, far ones on a heap).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/engine/index_set.h"
#include "sim/engine/wake_calendar.h"

namespace wafersim::sim {
namespace {

std::vector<std::uint32_t> take(WakeCalendar& w, std::uint64_t now) {
  std::vector<std::uint32_t> out;
  w.take(now, [&](std::uint32_t i) { out.push_back(i); });
  std::sort(out.begin(), out.end());
  return out;
}

TEST(IndexSet, DrainsInAscendingOrderOnceEach) {
  IndexSet s(10000);
  for (std::uint32_t i : {9999u, 5u, 64u, 63u, 4096u, 5u}) s.insert(i);
  EXPECT_EQ(s.size(), 5u);
  std::vector<std::uint32_t> out;
  s.drain([&](std::uint32_t i) { out.push_back(i); });
  EXPECT_EQ(out, (std::vector<std::uint32_t>{5, 63, 64, 4096, 9999}));
  EXPECT_TRUE(s.empty());
}

TEST(WakeCalendar, EachIndexComesInTheCycleItWasScheduledFor) {
  WakeCalendar w;
  w.schedule(1, 3);
  w.schedule(2, 4);
  w.schedule(3, 63);    // the wheel's last bucket
  w.schedule(4, 64);    // beyond the wheel: the heap
  w.schedule(5, 1000);  // far
  EXPECT_EQ(w.earliest(), 3u);
  EXPECT_TRUE(take(w, 2).empty());
  EXPECT_EQ(take(w, 3), std::vector<std::uint32_t>{1});
  EXPECT_EQ(w.earliest(), 4u);
  EXPECT_EQ(take(w, 4), std::vector<std::uint32_t>{2});
  EXPECT_EQ(w.earliest(), 63u);
  EXPECT_TRUE(take(w, 62).empty());
  EXPECT_EQ(take(w, 63), std::vector<std::uint32_t>{3});
  EXPECT_EQ(take(w, 64), std::vector<std::uint32_t>{4});
  EXPECT_EQ(w.earliest(), 1000u);
  EXPECT_TRUE(take(w, 999).empty());
  EXPECT_EQ(take(w, 1000), std::vector<std::uint32_t>{5});
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(w.earliest(), WakeCalendar::kNever);
}

TEST(WakeCalendar, AJumpTakesEverythingDueAndAPastCycleIsDueNext) {
  WakeCalendar w;
  take(w, 100);
  w.schedule(7, 50);  // already past: due at the next take
  EXPECT_EQ(w.earliest(), 101u);
  EXPECT_EQ(take(w, 101), std::vector<std::uint32_t>{7});
  for (std::uint32_t i = 0; i < 64; ++i) w.schedule(i, 102 + i);  // every bucket, wrapping
  w.schedule(99, 102);                                            // twice in one bucket
  w.schedule(98, 300);
  EXPECT_EQ(w.earliest(), 102u);
  const auto first = take(w, 110);  // a jump over several buckets
  EXPECT_EQ(first, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 99}));
  EXPECT_EQ(w.earliest(), 111u);
  EXPECT_EQ(take(w, 1000).size(), 64u - 9u + 1u);  // a jump past the wheel and the heap entry
  EXPECT_TRUE(w.empty());
}

}  // namespace
}  // namespace wafersim::sim
