#pragma once
// The SwarmX tree: `planes` identical trees of switches between MemoryX (the root) and N
// wafer endpoints (the leaves), all leaves at the same depth (tree_shape()). Weights are
// broadcast down; gradients are summed up. Plane p carries the chunks i with i % planes == p.

#include <systemc>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/stats/stats.h"
#include "swarmx/swarmx_config.h"
#include "swarmx/switch_node.h"

namespace wafersim::swarmx {

class SwarmX : public sc_core::sc_module {
 public:
  // `endpoint_link` is the bandwidth of the links between a leaf switch and an endpoint
  // (each direction, per plane); SwarmX drives the downward one.
  SwarmX(const sc_core::sc_module_name& name, const SwarmXConfig& config, std::uint32_t endpoints,
         units::Bandwidth endpoint_link, bool functional, sim::stats::Group& stats);

  [[nodiscard]] std::uint32_t planes() const { return config_.planes; }
  [[nodiscard]] std::uint32_t endpoints() const { return endpoints_; }
  [[nodiscard]] std::uint32_t levels() const { return static_cast<std::uint32_t>(widths_.size()); }
  // Switches at `level` (0: the top, next to MemoryX; levels()-1: the leaves).
  [[nodiscard]] std::uint32_t width(std::uint32_t level) const { return widths_.at(level); }
  [[nodiscard]] const SwarmXConfig& config() const { return config_; }

  // Root side of plane p: weights in from MemoryX, reduced gradients out to MemoryX.
  sim::stream::ChunkInPort& root_in(std::uint32_t plane) { return top(plane).down_in(); }
  sim::stream::ChunkOutPort& root_out(std::uint32_t plane) { return top(plane).up_out(); }
  // Leaf side of plane p for endpoint e: weights out to it, its gradients in.
  sim::stream::ChunkOutPort& leaf_out(std::uint32_t endpoint, std::uint32_t plane);
  sim::stream::ChunkInPort& leaf_in(std::uint32_t endpoint, std::uint32_t plane);

  SwitchNode& node(std::uint32_t plane, std::uint32_t level, std::uint32_t index);
  [[nodiscard]] std::string describe_state() const;

 private:
  SwitchNode& top(std::uint32_t plane) { return node(plane, 0, 0); }
  std::uint32_t index_of(std::uint32_t plane, std::uint32_t level, std::uint32_t index) const;

  SwarmXConfig config_;
  std::uint32_t endpoints_;
  std::vector<std::uint32_t> widths_;               // switches per level, top first
  std::vector<std::unique_ptr<SwitchNode>> nodes_;  // plane-major, then level, then index
};

}  // namespace wafersim::swarmx
