#include "sim/picos.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::sim {
namespace {

__extension__ typedef unsigned __int128 u128;

std::uint64_t ceil_div(u128 num, u128 den) {
  u128 q = (num + den - 1) / den;
  if (q > std::numeric_limits<std::uint64_t>::max())
    throw SimulationError("a transfer takes longer than 2^64 ps (213 days of simulated time)");
  return static_cast<std::uint64_t>(q);
}

}  // namespace

std::uint64_t bits_per_second(units::Bandwidth bw) { return static_cast<std::uint64_t>(std::llround(bw.bits_per_s)); }

Picos transfer_time(std::uint64_t bytes, units::Bandwidth bw) {
  const std::uint64_t rate = bits_per_second(bw);
  if (rate == 0 || bytes == 0) return Picos(0);
  return Picos(ceil_div(u128(bytes) * 8u * 1'000'000'000'000u, rate));
}

Picos param_time(std::uint64_t params, units::ParamRate rate) {
  const auto r = static_cast<std::uint64_t>(std::llround(rate.per_s));
  if (r == 0 || params == 0) return Picos(0);
  return Picos(ceil_div(u128(params) * 1'000'000'000'000u, r));
}

Picos to_picos(units::Duration d) { return Picos(static_cast<std::uint64_t>(std::llround(d.seconds * 1e12))); }

Picos now() { return Picos(sc_core::sc_time_stamp().value()); }

sc_core::sc_time to_sc_time(Picos t) { return sc_core::sc_time::from_value(t.count()); }

std::string format(Picos t) {
  if (t.is_never()) return "never";
  const std::uint64_t ps = t.count();
  if (ps < 1000) return fmt::format("{} ps", ps);
  if (ps < 1'000'000) return fmt::format("{}.{:03} ns", ps / 1000, ps % 1000);
  if (ps < 1'000'000'000) return fmt::format("{}.{:06} us", ps / 1'000'000, ps % 1'000'000);
  return fmt::format("{}.{:09} ms", ps / 1'000'000'000, ps % 1'000'000'000);
}

}  // namespace wafersim::sim
