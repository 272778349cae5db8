#pragma once
// Indices (cores) to wake at given cycles: a wheel of buckets for the next kSlots cycles, so
// scheduling and taking are a few instructions, and a heap for anything later.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace wafersim::sim {

class WakeCalendar {
 public:
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};

  // Schedules index i for cycle `at`; a cycle before the next take() is due at that take().
  void schedule(std::uint32_t i, std::uint64_t at) {
    at = std::max(at, next_);
    if (at - next_ < kSlots) {
      buckets_[at & kMask].push_back(i);
      used_ |= std::uint64_t{1} << (at & kMask);
    } else {
      far_.push(Entry{at, i});
    }
  }

  // Calls f(i) for every index scheduled at or before `now`, once per schedule() (an index
  // scheduled twice comes twice), in no particular order. `now` must not precede the cycle
  // after the last take's.
  template <class F>
  void take(std::uint64_t now, F&& f) {
    const std::uint64_t n = now < next_ ? 0 : std::min<std::uint64_t>(now - next_ + 1, kSlots);
    for (std::uint64_t c = next_; c < next_ + n && used_; ++c) {
      const std::uint64_t bit = std::uint64_t{1} << (c & kMask);
      if (!(used_ & bit)) continue;
      std::vector<std::uint32_t>& b = buckets_[c & kMask];
      for (std::uint32_t i : b) f(i);
      b.clear();
      used_ &= ~bit;
    }
    while (!far_.empty() && far_.top().cycle <= now) {
      f(far_.top().index);
      far_.pop();
    }
    next_ = now + 1;
  }

  // How many schedules take(now) would hand out from the wheel (those in the heap not counted:
  // an estimate of the work due, for callers that choose how to do it).
  [[nodiscard]] std::uint64_t due_soon(std::uint64_t now) const {
    std::uint64_t n = 0;
    if (now < next_ || !used_) return 0;
    for (std::uint64_t c = next_; c <= now && c < next_ + kSlots; ++c)
      if (used_ >> (c & kMask) & 1u) n += buckets_[c & kMask].size();
    return n;
  }

  // Calls f(i, cycle) for everything scheduled (in no particular order) and leaves the calendar
  // empty, its next take still due at the same cycle.
  template <class F>
  void drain_all(F&& f) {
    for (std::uint64_t c = next_; c < next_ + kSlots && used_; ++c) {
      const std::uint64_t bit = std::uint64_t{1} << (c & kMask);
      if (!(used_ & bit)) continue;
      for (std::uint32_t i : buckets_[c & kMask]) f(i, c);
      buckets_[c & kMask].clear();
      used_ &= ~bit;
    }
    for (; !far_.empty(); far_.pop()) f(far_.top().index, far_.top().cycle);
  }

  // The earliest cycle anything is scheduled for (kNever: nothing).
  [[nodiscard]] std::uint64_t earliest() const {
    std::uint64_t e = far_.empty() ? kNever : far_.top().cycle;
    if (used_) {
      const unsigned s = static_cast<unsigned>(next_ & kMask);
      const std::uint64_t rotated = s ? (used_ >> s) | (used_ << (kSlots - s)) : used_;
      e = std::min(e, next_ + static_cast<std::uint64_t>(__builtin_ctzll(rotated)));
    }
    return e;
  }

  [[nodiscard]] bool empty() const { return !used_ && far_.empty(); }

 private:
  static constexpr std::uint64_t kSlots = 64;  // one bit of used_ per bucket
  static constexpr std::uint64_t kMask = kSlots - 1;
  struct Entry {
    std::uint64_t cycle;
    std::uint32_t index;
    bool operator>(const Entry& o) const { return cycle != o.cycle ? cycle > o.cycle : index > o.index; }
  };
  std::vector<std::uint32_t> buckets_[kSlots];  // [cycle % kSlots], cycles next_ .. next_ + kSlots - 1
  std::uint64_t used_ = 0;                      // bit b: bucket b is not empty
  std::uint64_t next_ = 0;                      // the earliest cycle the next take() may be for
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> far_;
};

}  // namespace wafersim::sim
