#include "models/mesh/line_tree.h"

#include <algorithm>
#include <stdexcept>

namespace wafersim::models::mesh {

LineRole LineTree::role(std::uint32_t index) const {
  if (index >= length) throw std::logic_error("LineTree::role: index beyond the line");
  LineRole r;
  const std::uint32_t m = root();
  if (index == m) {
    r.has_before = side_length(LineRole::Side::Before) > 0;
    r.has_after = side_length(LineRole::Side::After) > 0;
    return r;
  }
  r.side = index < m ? LineRole::Side::Before : LineRole::Side::After;
  r.distance = index < m ? m - index : index - m;
  const std::uint32_t side = side_length(r.side);
  r.group = (r.distance - 1) / group;
  r.group_root = (r.distance - 1) % group == 0;
  r.chain_start = r.distance == std::min((r.group + 1) * group, side);
  r.outermost = r.group == (side - 1) / group;
  return r;
}

std::uint32_t LineTree::chain_stages() const {
  const std::uint32_t side = std::max(side_length(LineRole::Side::Before), side_length(LineRole::Side::After));
  if (side == 0) return 0;
  return (std::min(group, side) - 1) + (side + group - 1) / group;
}

std::uint32_t LineTree::reduce_hops() const {
  return std::max(side_length(LineRole::Side::Before), side_length(LineRole::Side::After));
}

std::uint32_t best_group(std::uint32_t length, std::uint32_t stage) {
  const LineTree probe{length, 1};
  const std::uint32_t side =
      std::max(probe.side_length(LineRole::Side::Before), probe.side_length(LineRole::Side::After));
  std::uint32_t best = 1;
  std::uint64_t best_cost = ~std::uint64_t{0};
  for (std::uint32_t k = 1; k <= std::max(side, 1u); ++k) {
    const LineTree t{length, k};
    const std::uint64_t cost = std::uint64_t{t.chain_stages()} * stage + t.reduce_hops();
    if (cost < best_cost) {
      best_cost = cost;
      best = k;
    }
  }
  return best;
}

std::uint64_t tree_reduce(const LineTree& t, const std::vector<std::uint64_t>& parts, const Combine& op) {
  if (parts.size() != t.length) throw std::logic_error("tree_reduce: one part per PE of the line");
  const std::uint32_t m = t.root();
  auto side_value = [&](LineRole::Side s, bool* any) {
    const std::uint32_t side = t.side_length(s);
    *any = side > 0;
    std::uint64_t incoming = 0;
    if (!side) return incoming;
    auto at = [&](std::uint32_t d) { return parts[s == LineRole::Side::Before ? m - d : m + d]; };
    const std::uint32_t groups = (side - 1) / t.group + 1;
    for (std::uint32_t g = groups; g-- > 0;) {
      const std::uint32_t near = g * t.group + 1, far = std::min((g + 1) * t.group, side);
      std::uint64_t acc = at(far);
      for (std::uint32_t d = far; d-- > near;) acc = op(acc, at(d));
      if (g + 1 < groups) acc = op(incoming, acc);
      incoming = acc;
    }
    return incoming;
  };
  bool before = false, after = false;
  const std::uint64_t b = side_value(LineRole::Side::Before, &before);
  const std::uint64_t a = side_value(LineRole::Side::After, &after);
  std::uint64_t v = parts[m];
  if (before) v = op(b, v);
  if (after) v = op(a, v);
  return v;
}

}  // namespace wafersim::models::mesh
