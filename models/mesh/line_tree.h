#pragma once
// The reduction tree of an allreduce along one line of PEs (a column or a row of a mesh
// region), MeshGEMV's two-level K-tree (WaferLLM, OSDI 2025, arXiv 2502.04563): the line's
// root M sits in the middle; on each side the PEs are cut, from M outward, into groups of K;
// phase 1 chains each group's partial sums toward its root (the member nearest M), phase 2
// chains the group roots toward M, and M broadcasts the result back along the line. A value
// crosses at most K + (side / K) PEs on its way to M instead of side (docs/compiler.md,
// "Mesh placement").

#include <cstdint>
#include <functional>
#include <vector>

namespace wafersim::models::mesh {

// One PE's part in the tree.
struct LineRole {
  enum class Side : std::uint8_t { Root, Before, After };  // Before: indices below M (north or west)
  Side side = Side::Root;
  std::uint32_t distance = 0;                  // from M (0 for M)
  std::uint32_t group = 0;                     // from M outward, on its side
  bool group_root = false;                     // the member nearest M
  bool chain_start = false;                    // the member farthest from M (receives no phase-1 input)
  bool outermost = false;                      // its group is the farthest from M (its root receives no phase-2 input)
  bool has_before = false, has_after = false;  // M: a side to receive from
  [[nodiscard]] bool root() const { return side == Side::Root; }
};

// Contract: length >= 1, group >= 1; deterministic.
struct LineTree {
  std::uint32_t length = 1;
  std::uint32_t group = 1;  // K
  [[nodiscard]] std::uint32_t root() const { return length / 2; }
  [[nodiscard]] std::uint32_t side_length(LineRole::Side s) const {
    return s == LineRole::Side::Before ? root() : s == LineRole::Side::After ? length - 1 - root() : 1;
  }
  [[nodiscard]] LineRole role(std::uint32_t index) const;
  // PEs a partial sum crosses on the longest way to M, and PEs M's result crosses to the
  // farthest end: the tree's depth in hops (for the bound's latency term).
  [[nodiscard]] std::uint32_t reduce_hops() const;
  [[nodiscard]] std::uint32_t chain_stages() const;  // PE-to-PE steps on the longest path to M
};

// The group size that minimises the tree's latency for a line of `length` PEs when a PE-to-PE
// step costs `stage` cycles besides one cycle per hop: about sqrt(side).
std::uint32_t best_group(std::uint32_t length, std::uint32_t stage);

// The host's allreduce of one value per PE in the tree's order: phase 1 adds each received
// partial to the member's own (op(received, own)), a group root then op(that, phase-2 input),
// M op(op(own, before), after). `op` is applied as the PE applies it (two operands, one
// rounding), so the result is bit-exact with the simulated tree.
using Combine = std::function<std::uint64_t(std::uint64_t received, std::uint64_t own)>;
std::uint64_t tree_reduce(const LineTree& t, const std::vector<std::uint64_t>& parts, const Combine& op);

}  // namespace wafersim::models::mesh
