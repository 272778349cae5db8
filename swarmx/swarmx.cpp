#include "swarmx/swarmx.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::swarmx {

SwarmX::SwarmX(const sc_core::sc_module_name& name, const SwarmXConfig& config, std::uint32_t endpoints,
               units::Bandwidth endpoint_link, bool functional, sim::stats::Group& stats)
    : sc_core::sc_module(name), config_(config), endpoints_(endpoints) {
  if (endpoints_ == 0) throw sim::InputError("swarmx: a tree needs at least one endpoint");
  const std::uint32_t a = config_.arity();
  std::vector<std::uint32_t> bottom_up;
  std::uint32_t w = endpoints_;
  do {
    w = (w + a - 1) / a;
    bottom_up.push_back(w);
  } while (w > 1);
  widths_.assign(bottom_up.rbegin(), bottom_up.rend());
  const TreeShape shape = tree_shape(endpoints_, config_);
  if (shape.levels != levels()) throw std::logic_error("SwarmX: tree does not match tree_shape()");

  auto& g = stats.group(basename());
  g.formula(
      "levels", [this] { return static_cast<double>(levels()); }, "levels", "switch levels per plane", true);
  g.formula(
      "switches", [this] { return static_cast<double>(nodes_.size()); }, "switches",
      "logical switches (1:4 or 1:2) over all planes", true);
  const units::Bandwidth up{std::min(config_.port_bandwidth.bits_per_s, config_.reduce_throughput.bits_per_s)};
  const sim::Picos latency = sim::to_picos(config_.node_latency);
  const std::uint32_t L = levels();
  for (std::uint32_t p = 0; p < config_.planes; ++p) {
    for (std::uint32_t level = 0; level < L; ++level) {
      const std::uint32_t below = level + 1 < L ? widths_[level + 1] : endpoints_;
      for (std::uint32_t i = 0; i < widths_[level]; ++i) {
        SwitchPorts sp;
        const std::uint32_t children = std::min(a, below - i * a);
        const units::Bandwidth down = level + 1 < L ? config_.port_bandwidth : endpoint_link;
        sp.down_bandwidth.assign(children, down);
        sp.up_bandwidth = up;
        sp.buffer_chunks = config_.buffer_chunks;
        sp.latency = latency;
        nodes_.push_back(
            std::make_unique<SwitchNode>(fmt::format("p{}_l{}_s{}", p, level, i).c_str(), sp, functional, g));
      }
    }
    for (std::uint32_t level = 0; level + 1 < L; ++level)
      for (std::uint32_t i = 0; i < widths_[level]; ++i) {
        SwitchNode& parent = node(p, level, i);
        for (std::uint32_t c = 0; c < parent.children(); ++c) {
          SwitchNode& child = node(p, level + 1, i * a + c);
          parent.down_out(c).connect(child.down_in());
          child.up_out().connect(parent.up_in(c));
        }
      }
  }
}

std::uint32_t SwarmX::index_of(std::uint32_t plane, std::uint32_t level, std::uint32_t index) const {
  std::uint32_t per_plane = 0;
  for (auto w : widths_) per_plane += w;
  std::uint32_t before = 0;
  for (std::uint32_t l = 0; l < level; ++l) before += widths_[l];
  return plane * per_plane + before + index;
}

SwitchNode& SwarmX::node(std::uint32_t plane, std::uint32_t level, std::uint32_t index) {
  if (plane >= config_.planes || level >= levels() || index >= widths_[level]) throw std::out_of_range("SwarmX::node");
  return *nodes_[index_of(plane, level, index)];
}

sim::stream::ChunkOutPort& SwarmX::leaf_out(std::uint32_t endpoint, std::uint32_t plane) {
  const std::uint32_t a = config_.arity();
  return node(plane, levels() - 1, endpoint / a).down_out(endpoint % a);
}

sim::stream::ChunkInPort& SwarmX::leaf_in(std::uint32_t endpoint, std::uint32_t plane) {
  const std::uint32_t a = config_.arity();
  return node(plane, levels() - 1, endpoint / a).up_in(endpoint % a);
}

std::string SwarmX::describe_state() const {
  std::string out;
  for (const auto& n : nodes_) out += (out.empty() ? "" : "; ") + n->describe_state();
  return out;
}

}  // namespace wafersim::swarmx
