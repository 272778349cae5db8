// The engine's index containers: IndexSet (ascending sweeps) and WakeCalendar (wakes at
// cycles, near ones on a wheel, far ones on a heap).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine/index_set.h"
#include "sim/engine/wake_calendar.h"

namespace wafersim::sim::wake_calendar_test {
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

TEST(IndexSet, RepeatedInsertsAreCountedOnce) {
  IndexSet s(10000);
  for (std::uint32_t i : {9999u, 5u, 64u}) s.insert(i);
  for (std::uint32_t i : {5u, 4096u, 63u, 4096u, 9999u}) s.insert(i);
  EXPECT_EQ(s.size(), 5u);
  EXPECT_TRUE(s.contains(4096u));
  std::vector<std::uint32_t> out;
  s.drain([&](std::uint32_t i) { out.push_back(i); });
  EXPECT_EQ(out, (std::vector<std::uint32_t>{5, 63, 64, 4096, 9999}));
  EXPECT_TRUE(s.empty());
  s.insert(7);
  EXPECT_FALSE(s.empty());
}

// At the flat limit a sweep reads every word; one index above it, through the second level.
TEST(IndexSet, DrainsInOrderOnBothSidesOfTheFlatLimit) {
  for (const std::uint32_t universe : {IndexSet::kFlatUpTo, IndexSet::kFlatUpTo + 1, 300000u}) {
    IndexSet s(universe);
    std::vector<std::uint32_t> members;
    for (std::uint32_t i = 1; i < universe; i += 4093) members.push_back(i);  // about one per second-level word
    members.push_back(universe - 1);
    for (auto it = members.rbegin(); it != members.rend(); ++it) s.insert(*it);
    s.insert(members.front());
    EXPECT_EQ(s.size(), members.size()) << universe;
    std::vector<std::uint32_t> out;
    EXPECT_EQ(s.drain([&](std::uint32_t i) { out.push_back(i); }), members.size()) << universe;
    EXPECT_EQ(out, members) << universe;
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(s.drain([&](std::uint32_t i) { out.push_back(i); }), 0u);  // nothing left at either level
    s.insert(members.back());
    out.clear();
    s.drain([&](std::uint32_t i) { out.push_back(i); });
    EXPECT_EQ(out, std::vector<std::uint32_t>{members.back()}) << universe;
  }
}

// Records a drain_ahead sweep: "f r", "far r", "near r" in call order.
std::vector<std::pair<char, std::uint32_t>> sweep_ahead(IndexSet& s) {
  std::vector<std::pair<char, std::uint32_t>> calls;
  std::vector<std::uint32_t> order;
  s.drain_ahead(
      order, [&](std::uint32_t r) { calls.emplace_back('F', r); }, [&](std::uint32_t r) { calls.emplace_back('N', r); },
      [&](std::uint32_t r) { calls.emplace_back('f', r); });
  return calls;
}

TEST(IndexSet, DrainAheadHintsEachMemberAFixedDistanceBeforeVisitingIt) {
  IndexSet s(IndexSet::kAheadFrom);
  std::vector<std::uint32_t> members;
  for (std::uint32_t i = 3; i < IndexSet::kAheadFrom; i += 7) members.push_back(i);
  for (auto it = members.rbegin(); it != members.rend(); ++it) s.insert(*it);
  const auto calls = sweep_ahead(s);
  EXPECT_TRUE(s.empty());
  std::vector<std::uint32_t> visited;
  std::vector<std::size_t> far_at(members.back() + 1, 0), near_at(members.back() + 1, 0), f_at(members.back() + 1, 0);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const auto [kind, r] = calls[i];
    (kind == 'F' ? far_at : kind == 'N' ? near_at : f_at)[r] = i + 1;
    if (kind == 'f') visited.push_back(r);
  }
  ASSERT_EQ(visited, members);  // ascending, once each
  EXPECT_EQ(calls.size(), 3 * members.size());
  // Counted in visits: member k is hinted far just after visit k - kFar and near just after
  // visit k - kNear (the first ones before any visit).
  std::vector<std::size_t> visits_before(calls.size() + 1, 0);
  for (std::size_t i = 0; i < calls.size(); ++i) visits_before[i + 1] = visits_before[i] + (calls[i].first == 'f');
  for (std::size_t k = 0; k < members.size(); ++k) {
    const std::uint32_t r = members[k];
    ASSERT_GT(far_at[r], 0u);
    ASSERT_GT(near_at[r], 0u);
    EXPECT_LT(far_at[r], near_at[r]);
    EXPECT_LT(near_at[r], f_at[r]);
    EXPECT_EQ(visits_before[far_at[r] - 1], k < IndexSet::kFar ? 0 : k - IndexSet::kFar) << r;
    EXPECT_EQ(visits_before[near_at[r] - 1], k < IndexSet::kNear ? 0 : k - IndexSet::kNear) << r;
  }
}

TEST(IndexSet, DrainAheadOverFewIndicesOrFewMembersIsAPlainDrain) {
  IndexSet small(IndexSet::kAheadFrom - 64);  // a universe below the threshold
  for (std::uint32_t i = 0; i < 100; ++i) small.insert(i * 3);
  const auto calls = sweep_ahead(small);
  ASSERT_EQ(calls.size(), 100u);
  for (std::uint32_t i = 0; i < 100; ++i) EXPECT_EQ(calls[i], std::make_pair('f', i * 3));

  IndexSet sparse(IndexSet::kAheadFrom);  // a large universe, fewer members than kFar
  for (std::uint32_t i = 0; i + 1 < IndexSet::kFar; ++i) sparse.insert(i * 500);
  const auto few = sweep_ahead(sparse);
  ASSERT_EQ(few.size(), IndexSet::kFar - 1);
  for (std::uint32_t i = 0; i + 1 < IndexSet::kFar; ++i) EXPECT_EQ(few[i], std::make_pair('f', i * 500));
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

// What a core array moves between bands when they are repartitioned: every schedule with its
// cycle, the calendar then empty and its next take due where it was.
TEST(WakeCalendar, DrainAllHandsOutEveryScheduleWithItsCycle) {
  WakeCalendar w;
  take(w, 40);
  w.schedule(1, 41);
  w.schedule(2, 41);
  w.schedule(3, 104);  // the wheel's last bucket
  w.schedule(4, 105);  // the heap
  w.schedule(5, 10);   // past: due at the next take
  EXPECT_EQ(w.due_soon(40), 0u);
  EXPECT_EQ(w.due_soon(41), 3u);
  EXPECT_EQ(w.due_soon(104), 4u);
  EXPECT_EQ(w.due_soon(2000), 4u);  // the heap is not counted
  std::vector<std::pair<std::uint32_t, std::uint64_t>> all;
  w.drain_all([&](std::uint32_t i, std::uint64_t at) { all.emplace_back(i, at); });
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::pair<std::uint32_t, std::uint64_t>>{{1, 41}, {2, 41}, {3, 104}, {4, 105}, {5, 41}}));
  EXPECT_TRUE(w.empty());
  for (const auto& [i, at] : all) w.schedule(i, at);
  EXPECT_EQ(take(w, 41), (std::vector<std::uint32_t>{1, 2, 5}));
  EXPECT_EQ(take(w, 105), (std::vector<std::uint32_t>{3, 4}));
}

}  // namespace
}  // namespace wafersim::sim::wake_calendar_test
