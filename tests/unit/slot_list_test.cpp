// The core's in-object list of vector-operation slots (hw/core/slot_list.h): the order of
// insertion and erasure as a std::vector keeps it, and its capacity of 64 slots.

#include "hw/core/slot_list.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace wafersim::hw {
namespace {

TEST(SlotList, KeepsTheOrderAVectorKeeps) {
  SlotList s;
  std::vector<std::uint8_t> v;
  unsigned x = 7;
  for (int round = 0; round < 2000; ++round) {
    x = x * 1103515245u + 12345u;
    const unsigned r = (x >> 16) % 3;
    if (r < 2 && v.size() < SlotList::kCapacity) {  // insert at a random place
      const std::size_t at = v.empty() ? 0 : (x >> 8) % (v.size() + 1);
      const auto slot = static_cast<std::uint8_t>(round % 64);
      v.insert(v.begin() + static_cast<long>(at), slot);
      s.insert(s.begin() + at, slot);
    } else if (!v.empty()) {  // erase at a random place
      const std::size_t at = (x >> 8) % v.size();
      v.erase(v.begin() + static_cast<long>(at));
      s.erase(s.begin() + at);
    }
    ASSERT_EQ(s.size(), v.size());
    ASSERT_TRUE(std::equal(v.begin(), v.end(), s.begin(), s.end())) << "round " << round;
  }
  s.clear();
  EXPECT_TRUE(s.empty());
}

TEST(SlotList, HoldsSixtyFourSlotsAndRefusesMore) {
  SlotList s;
  for (unsigned i = 0; i < 64; ++i) s.push_back(static_cast<std::uint8_t>(i));
  EXPECT_EQ(s.size(), 64u);
  EXPECT_EQ(s[63], 63u);
  EXPECT_THROW(s.push_back(0), std::logic_error);
  EXPECT_THROW(s.insert(s.begin(), 0), std::logic_error);
  s.erase(s.begin());
  EXPECT_EQ(s[0], 1u);
  s.push_back(99);
  EXPECT_EQ(s[63], 99u);
}

}  // namespace
}  // namespace wafersim::hw
