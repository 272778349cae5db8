#pragma once
// A set of component indices (routers, cores) visited in ascending order: a bitmap, so
// inserting is a few instructions. Over more than kFlatUpTo indices a second level marks the
// words that hold members, so a sweep costs about one word per 64 indices that hold members;
// over fewer a sweep reads every word (a few hundred at most), and inserts skip the second level.

#include <cstdint>
#include <vector>

namespace wafersim::sim {

class IndexSet {
 public:
  static constexpr std::uint32_t kFlatUpTo = 16384;

  explicit IndexSet(std::uint32_t size = 0)
      : words_((size + 63) / 64, 0),
        summary_(size > kFlatUpTo ? (words_.size() + 63) / 64 : 0, 0),
        flat_(size <= kFlatUpTo) {}

  // Adds r (below the size). Without data-dependent branches: callers insert as often
  // repeats as new members, and a mispredicted branch costs more than it would save.
  void insert(std::uint32_t r) {
    words_[r >> 6] |= std::uint64_t{1} << (r & 63u);
    ++inserts_;
    if (!flat_) summary_[r >> 12] |= std::uint64_t{1} << ((r >> 6) & 63u);
  }
  [[nodiscard]] bool contains(std::uint32_t r) const { return (words_[r >> 6] >> (r & 63u)) & 1u; }
  [[nodiscard]] bool empty() const { return inserts_ == 0; }
  // Inserts since the last drain: at least the members (an estimate for callers that choose
  // how to sweep).
  [[nodiscard]] std::uint64_t inserts() const { return inserts_; }
  // Members (counts the bits: for reports, not sweeps).
  [[nodiscard]] std::uint32_t size() const {
    std::uint32_t n = 0;
    if (!empty())
      for (const std::uint64_t w : words_) n += static_cast<std::uint32_t>(__builtin_popcountll(w));
    return n;
  }

  // Calls f(r) for every member in ascending order and leaves the set empty; returns the
  // number of members. `f` may insert into other sets, not into this one.
  template <class F>
  std::uint32_t drain(F&& f) {
    std::uint32_t n = 0;
    auto visit = [&](std::size_t wi) {
      std::uint64_t w = words_[wi];
      words_[wi] = 0;
      for (; w; w &= w - 1, ++n) f(static_cast<std::uint32_t>(wi * 64 + static_cast<std::size_t>(__builtin_ctzll(w))));
    };
    if (inserts_ == 0) return 0;
    inserts_ = 0;
    if (flat_) {
      for (std::size_t wi = 0; wi < words_.size(); ++wi)
        if (words_[wi]) visit(wi);
      return n;
    }
    for (std::size_t s = 0; s < summary_.size(); ++s) {
      std::uint64_t sm = summary_[s];
      if (!sm) continue;
      summary_[s] = 0;
      for (; sm; sm &= sm - 1) visit(s * 64 + static_cast<std::size_t>(__builtin_ctzll(sm)));
    }
    return n;
  }

  // drain(f) for sweeps over components whose state outgrows the caches: in a set of at
  // least kAheadFrom indices and kFar members, far(r) is called kFar members and near(r) kNear
  // members before f(r) (cache hints: far fetches what near reads to find the rest); otherwise
  // it is drain(f). Returns the number of members. `order` is scratch space.
  static constexpr std::size_t kAheadFrom = 4096;
  static constexpr std::size_t kFar = 8, kNear = 4;
  template <class Far, class Near, class F>
  std::uint32_t drain_ahead(std::vector<std::uint32_t>& order, Far&& far, Near&& near, F&& f) {
    if (words_.size() * 64 < kAheadFrom) return drain(f);
    order.clear();
    drain([&order](std::uint32_t r) { order.push_back(r); });
    const std::size_t n = order.size();
    if (n < kFar) {
      for (const std::uint32_t r : order) f(r);
      return static_cast<std::uint32_t>(n);
    }
    for (std::size_t i = 0; i < kFar; ++i) far(order[i]);
    for (std::size_t i = 0; i < kNear; ++i) near(order[i]);
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kFar < n) far(order[i + kFar]);
      if (i + kNear < n) near(order[i + kNear]);
      f(order[i]);
    }
    return static_cast<std::uint32_t>(n);
  }

  void swap(IndexSet& other) noexcept {
    words_.swap(other.words_);
    summary_.swap(other.summary_);
    std::swap(inserts_, other.inserts_);
    std::swap(flat_, other.flat_);
  }

  [[nodiscard]] std::uint64_t allocated_bytes() const {
    return (words_.capacity() + summary_.capacity()) * sizeof(std::uint64_t);
  }

 private:
  std::vector<std::uint64_t> words_;    // bit r % 64 of word r / 64
  std::vector<std::uint64_t> summary_;  // unless flat_: bit w % 64 of word w / 64: words_[w] is not zero
  std::uint64_t inserts_ = 0;           // since the last drain (0: the set is empty)
  bool flat_ = true;                    // summary_.empty(), kept as a flag: testing the vector costs the
                                        // insert two loads (+0.3% instructions on the fabric sweep)
};

}  // namespace wafersim::sim
