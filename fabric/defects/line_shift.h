#pragma once
// How the dead cores of one group of one line shift its logical cores. The group's logical
// cores take its good physical positions in order (the first n of them; the rest are spares
// left unused), so logical core i sits at physical position i + k(i), where k(i) counts the dead
// cores before it. With the group's dead positions d_0 < d_1 < ... (relative to its first
// position), dead core j lies before logical core i exactly when d_j - j <= i: its step
// s_j = d_j - j. Steps never decrease; a step of 0 lies before the group's first logical core,
// a step of n or more after its last (in the spares).

#include <algorithm>
#include <cstdint>
#include <vector>

namespace wafersim::fabric::defects {

// The steps of sorted, distinct relative dead positions.
inline std::vector<std::uint32_t> shift_steps(const std::vector<std::uint32_t>& dead) {
  std::vector<std::uint32_t> s(dead.size());
  for (std::size_t j = 0; j < dead.size(); ++j) s[j] = dead[j] - static_cast<std::uint32_t>(j);
  return s;
}

// k(i): the dead cores before logical core i.
inline std::uint32_t shift_at(const std::vector<std::uint32_t>& steps, std::uint32_t i) {
  return static_cast<std::uint32_t>(std::upper_bound(steps.begin(), steps.end(), i) - steps.begin());
}

// The offsets |k_a(i) - k_b(i)| of two neighbouring lines over logical cores 0 .. n-1: their
// sum and their largest value.
struct Offsets {
  std::uint64_t sum = 0;
  std::uint32_t max = 0;
  std::uint64_t nonzero = 0;  // logical cores with an offset
};
inline Offsets line_offsets(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b, std::uint32_t n) {
  Offsets out;
  std::size_t ia = 0, ib = 0;
  std::uint32_t i = 0;
  while (i < n) {
    while (ia < a.size() && a[ia] <= i) ++ia;
    while (ib < b.size() && b[ib] <= i) ++ib;
    // k_a = ia and k_b = ib hold until the next step of either line.
    std::uint32_t next = n;
    if (ia < a.size()) next = std::min(next, a[ia]);
    if (ib < b.size()) next = std::min(next, b[ib]);
    const std::uint32_t d = static_cast<std::uint32_t>(ia > ib ? ia - ib : ib - ia);
    if (d) {
      out.sum += std::uint64_t{d} * (next - i);
      out.nonzero += next - i;
      out.max = std::max(out.max, d);
    }
    i = next;
  }
  return out;
}

}  // namespace wafersim::fabric::defects
