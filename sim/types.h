#pragma once
// Strong value types shared by every model: cycles and the never-cycle sentinel.

#include <cstdint>
#include <limits>

namespace wafersim::sim {

// A count of cycles (or a cycle number) of one clock domain.
class Cycle {
 public:
  constexpr Cycle() = default;
  constexpr explicit Cycle(std::uint64_t count) : count_(count) {}
  [[nodiscard]] constexpr std::uint64_t count() const { return count_; }

  static constexpr Cycle never() { return Cycle(std::numeric_limits<std::uint64_t>::max()); }
  [[nodiscard]] constexpr bool is_never() const { return *this == never(); }

  constexpr Cycle& operator+=(Cycle o) { count_ += o.count_; return *this; }
  constexpr Cycle& operator-=(Cycle o) { count_ -= o.count_; return *this; }
  constexpr Cycle& operator++() { ++count_; return *this; }
  friend constexpr Cycle operator+(Cycle a, Cycle b) { return Cycle(a.count_ + b.count_); }
  friend constexpr Cycle operator-(Cycle a, Cycle b) { return Cycle(a.count_ - b.count_); }
  friend constexpr Cycle operator*(Cycle a, std::uint64_t k) { return Cycle(a.count_ * k); }
  friend constexpr bool operator==(Cycle a, Cycle b) { return a.count_ == b.count_; }
  friend constexpr bool operator!=(Cycle a, Cycle b) { return a.count_ != b.count_; }
  friend constexpr bool operator<(Cycle a, Cycle b) { return a.count_ < b.count_; }
  friend constexpr bool operator<=(Cycle a, Cycle b) { return a.count_ <= b.count_; }
  friend constexpr bool operator>(Cycle a, Cycle b) { return a.count_ > b.count_; }
  friend constexpr bool operator>=(Cycle a, Cycle b) { return a.count_ >= b.count_; }

 private:
  std::uint64_t count_ = 0;
};

constexpr Cycle operator""_cy(unsigned long long n) { return Cycle(n); }

}  // namespace wafersim::sim
