#pragma once
// A set of component indices (routers, cores) visited in ascending order: a two-level bitmap,
// so inserting is a few instructions and a sweep costs about one word per 64 indices that hold
// members.

#include <cstdint>
#include <vector>

namespace wafersim::sim {

class IndexSet {
 public:
  explicit IndexSet(std::uint32_t size = 0) : words_((size + 63) / 64, 0), summary_((words_.size() + 63) / 64, 0) {}

  // Adds r (below the size). Without branches: callers insert as often repeats as new
  // members, and a mispredicted branch costs more than the few instructions it would save.
  void insert(std::uint32_t r) {
    std::uint64_t& w = words_[r >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (r & 63u);
    size_ += static_cast<std::uint32_t>((w & bit) == 0);
    w |= bit;
    summary_[r >> 12] |= std::uint64_t{1} << ((r >> 6) & 63u);
  }
  [[nodiscard]] bool contains(std::uint32_t r) const { return (words_[r >> 6] >> (r & 63u)) & 1u; }
  [[nodiscard]] std::uint32_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }

  // Calls f(r) for every member in ascending order and leaves the set empty. `f` may
  // insert into other sets, not into this one.
  template <class F>
  void drain(F&& f) {
    for (std::size_t s = 0; s < summary_.size(); ++s) {
      std::uint64_t sm = summary_[s];
      if (!sm) continue;
      summary_[s] = 0;
      for (; sm; sm &= sm - 1) {
        const std::size_t wi = s * 64 + static_cast<std::size_t>(__builtin_ctzll(sm));
        std::uint64_t w = words_[wi];
        words_[wi] = 0;
        for (; w; w &= w - 1) f(static_cast<std::uint32_t>(wi * 64 + static_cast<std::size_t>(__builtin_ctzll(w))));
      }
    }
    size_ = 0;
  }

  // drain(f) for sweeps over components whose state outgrows the caches: in a set of at
  // least kAheadFrom indices, far(r) is called kFar members and near(r) kNear members before
  // f(r) (cache hints: far fetches what near reads to find the rest); in a smaller one it is
  // drain(f). `order` is scratch space.
  static constexpr std::size_t kAheadFrom = 4096;
  static constexpr std::size_t kFar = 8, kNear = 4;
  template <class Far, class Near, class F>
  void drain_ahead(std::vector<std::uint32_t>& order, Far&& far, Near&& near, F&& f) {
    if (words_.size() * 64 < kAheadFrom || size_ < kFar) return drain(f);
    order.clear();
    drain([&order](std::uint32_t r) { order.push_back(r); });
    const std::size_t n = order.size();
    for (std::size_t i = 0; i < kFar; ++i) far(order[i]);
    for (std::size_t i = 0; i < kNear; ++i) near(order[i]);
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kFar < n) far(order[i + kFar]);
      if (i + kNear < n) near(order[i + kNear]);
      f(order[i]);
    }
  }

  void swap(IndexSet& other) noexcept {
    words_.swap(other.words_);
    summary_.swap(other.summary_);
    std::swap(size_, other.size_);
  }

  [[nodiscard]] std::uint64_t allocated_bytes() const {
    return (words_.capacity() + summary_.capacity()) * sizeof(std::uint64_t);
  }

 private:
  std::vector<std::uint64_t> words_;    // bit r % 64 of word r / 64
  std::vector<std::uint64_t> summary_;  // bit w % 64 of word w / 64: words_[w] is not zero
  std::uint32_t size_ = 0;
};

}  // namespace wafersim::sim
