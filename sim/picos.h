#pragma once
// Exact SystemC time in whole picoseconds for the models outside the wafers' cycle engines
// (MemoryX, SwarmX, edge links), and the rounding rules every timing formula uses.

#include <systemc>

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>

#include "sim/units/quantity.h"

namespace wafersim::sim {

// A point or span of simulated time in picoseconds (SystemC's default resolution).
class Picos {
 public:
  constexpr Picos() = default;
  constexpr explicit Picos(std::uint64_t ps) : ps_(ps) {}
  [[nodiscard]] constexpr std::uint64_t count() const { return ps_; }
  [[nodiscard]] double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  static constexpr Picos never() { return Picos(std::numeric_limits<std::uint64_t>::max()); }
  [[nodiscard]] constexpr bool is_never() const { return *this == never(); }

  constexpr Picos& operator+=(Picos o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Picos& operator-=(Picos o) {
    ps_ -= o.ps_;
    return *this;
  }
  friend constexpr Picos operator+(Picos a, Picos b) { return Picos(a.ps_ + b.ps_); }
  friend constexpr Picos operator-(Picos a, Picos b) { return Picos(a.ps_ - b.ps_); }
  friend constexpr Picos operator*(Picos a, std::uint64_t k) { return Picos(a.ps_ * k); }
  friend constexpr Picos operator*(std::uint64_t k, Picos a) { return Picos(a.ps_ * k); }
  friend constexpr bool operator==(Picos a, Picos b) { return a.ps_ == b.ps_; }
  friend constexpr bool operator!=(Picos a, Picos b) { return a.ps_ != b.ps_; }
  friend constexpr bool operator<(Picos a, Picos b) { return a.ps_ < b.ps_; }
  friend constexpr bool operator<=(Picos a, Picos b) { return a.ps_ <= b.ps_; }
  friend constexpr bool operator>(Picos a, Picos b) { return a.ps_ > b.ps_; }
  friend constexpr bool operator>=(Picos a, Picos b) { return a.ps_ >= b.ps_; }

 private:
  std::uint64_t ps_ = 0;
};

constexpr Picos operator""_ps(unsigned long long n) { return Picos(n); }

// A bandwidth as a whole number of bits per second (rounded to nearest): the exact divisor
// of every transfer time.
std::uint64_t bits_per_second(units::Bandwidth bw);

// Time to move `bytes` at `bw`: ceil(bytes * 8 * 1e12 / bits_per_second(bw)) picoseconds,
// computed in 128-bit integers (exact). A zero bandwidth means "infinitely fast" (0 ps).
Picos transfer_time(std::uint64_t bytes, units::Bandwidth bw);
// Time to process `params` parameters at `rate`: ceil(params * 1e12 / rate) picoseconds.
Picos param_time(std::uint64_t params, units::ParamRate rate);
// A configured duration rounded to the nearest picosecond.
Picos to_picos(units::Duration d);

// The current SystemC time; requires the kernel's resolution to be 1 ps (the default).
Picos now();
sc_core::sc_time to_sc_time(Picos t);

// "1.234567 us" style text for messages and reports (exact to the picosecond).
std::string format(Picos t);
inline std::ostream& operator<<(std::ostream& os, Picos t) { return os << t.count() << " ps"; }

}  // namespace wafersim::sim
