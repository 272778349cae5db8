// The fabric's statistics: totals, per color and per port direction always; per router and
// per link (router, port) at detail "routers"; per link and color at detail "links".

#include <cstdint>

#include "fabric/mesh.h"

namespace wafersim::fabric {

void Mesh::add_stats(sim::stats::Group& g) {
  g.formula(
      "width", [this] { return geometry_.width(); }, "routers", "mesh columns", true);
  g.formula(
      "height", [this] { return geometry_.height(); }, "routers", "mesh rows", true);
  g.counter("wavelets_forwarded", &forwarded_, "wavelets",
            "wavelets sent through router outputs (to neighbours, ramps and edge channels; a multicast counts "
            "each copy)");
  g.counter("wavelets_injected", &injected_, "wavelets", "wavelets sent into the fabric by ramps and edge channels");
  g.counter("wavelets_delivered", &delivered_, "wavelets",
            "wavelets delivered into ramp and edge-channel receive queues");
  g.counter("credit_stalls", &stalled_, "output-color-cycles",
            "cycles an output had a wavelet of a color to send but no credit for that color downstream (summed "
            "over outputs and colors)");
  g.formula(
      "occupancy_integral", [this] { return static_cast<double>(occupancy_integral()); }, "wavelet-cycles",
      "sum over cycles of the wavelets in all router input queues (divide by cycles for the mean)", true);
  g.formula(
      "wavelets_in_flight", [this] { return static_cast<double>(in_network_); }, "wavelets",
      "wavelets in router queues or on links at the end of the run", true);
  g.formula(
      "routers_used", [this] { return static_cast<double>(block_router_.size()); }, "routers",
      "routers that held a wavelet at least once", true);
  g.formula(
      "bits_forwarded",
      [this] { return static_cast<double>(forwarded_) * static_cast<double>(config_.wavelet_width.bits); }, "bits",
      "payload bits sent through router outputs (wavelets_forwarded x wavelet_width)", true);

  const std::uint32_t c = colors_;
  g.vector(
      "forwarded_by_color", [c] { return std::size_t{c}; },
      [this](std::size_t i) { return static_cast<double>(color_forwarded_[i]); }, "wavelets",
      "wavelets forwarded, per color (all routers and outputs)");
  g.vector(
      "credit_stalls_by_color", [c] { return std::size_t{c}; },
      [this](std::size_t i) { return static_cast<double>(color_stalled_[i]); }, "output-cycles",
      "credit stalls, per color (all routers and outputs)");
  g.vector(
      "occupancy_integral_by_color", [c] { return std::size_t{c}; },
      [this](std::size_t i) { return static_cast<double>(color_occupancy_[i]); }, "wavelet-cycles",
      "queue occupancy integral, per color (all routers and input ports)");
  auto by_port = [this](const std::vector<std::uint64_t>& v, std::size_t port) {
    std::uint64_t sum = 0;
    for (std::size_t b = 0; b < block_router_.size(); ++b) sum += v[b * kPorts + port];
    return static_cast<double>(sum);
  };
  g.vector(
      "forwarded_by_port", [] { return std::size_t{kPorts}; },
      [this, by_port](std::size_t p) { return by_port(port_forwarded_, p); }, "wavelets",
      "wavelets forwarded, per output direction (north, east, south, west, ramp)");
  g.vector(
      "credit_stalls_by_port", [] { return std::size_t{kPorts}; },
      [this, by_port](std::size_t p) { return by_port(port_stalled_, p); }, "output-color-cycles",
      "credit stalls, per output direction (north, east, south, west, ramp)");
  g.vector(
      "occupancy_integral_by_port", [] { return std::size_t{kPorts}; },
      [this](std::size_t p) { return static_cast<double>(dir_occupancy_[p]); }, "wavelet-cycles",
      "queue occupancy integral, per input direction (north, east, south, west, ramp)");

  if (detail_ == StatsDetail::Totals) return;
  const std::size_t n = geometry_.routers();
  auto per_router = [this](const std::vector<std::uint64_t>& v, std::size_t r) {
    const std::uint32_t b = block_[r];
    if (b == kNone) return 0.0;
    std::uint64_t sum = 0;
    for (std::uint32_t p = 0; p < kPorts; ++p) sum += v[std::size_t{b} * kPorts + p];
    return static_cast<double>(sum);
  };
  auto per_link = [this](const std::vector<std::uint64_t>& v, std::size_t i) {
    const std::uint32_t b = block_[i / kPorts];
    return b == kNone ? 0.0 : static_cast<double>(v[std::size_t{b} * kPorts + i % kPorts]);
  };
  g.vector(
      "router_forwarded", [n] { return n; },
      [this, per_router](std::size_t r) { return per_router(port_forwarded_, r); }, "wavelets",
      "wavelets forwarded by each router (index y * width + x)");
  g.vector(
      "router_credit_stalls", [n] { return n; },
      [this, per_router](std::size_t r) { return per_router(port_stalled_, r); }, "output-color-cycles",
      "credit stalls of each router (index y * width + x)");
  g.vector(
      "router_occupancy_integral", [n] { return n; },
      [this, per_router](std::size_t r) { return per_router(port_occupancy_, r); }, "wavelet-cycles",
      "queue occupancy integral of each router's input queues (index y * width + x)");
  g.vector(
      "link_forwarded", [n] { return n * kPorts; },
      [this, per_link](std::size_t i) { return per_link(port_forwarded_, i); }, "wavelets",
      "wavelets sent on each output link (index (y * width + x) * 5 + port; ports north, east, south, west, "
      "ramp)");
  g.vector(
      "link_credit_stalls", [n] { return n * kPorts; },
      [this, per_link](std::size_t i) { return per_link(port_stalled_, i); }, "color-cycles",
      "credit stalls on each output link (index (y * width + x) * 5 + port)");
  g.vector(
      "link_occupancy_integral", [n] { return n * kPorts; },
      [this, per_link](std::size_t i) { return per_link(port_occupancy_, i); }, "wavelet-cycles",
      "occupancy integral of each input port's queues (index (y * width + x) * 5 + port)");

  if (detail_ != StatsDetail::Links) return;
  auto per_link_color = [this](const std::vector<std::uint64_t>& v, std::size_t i) {
    const std::size_t stride = std::size_t{kPorts} * colors_;
    const std::uint32_t b = block_[i / stride];
    if (b == kNone) return 0.0;
    const std::size_t si = std::size_t{b} * stride + i % stride;
    return static_cast<double>(v[si]);
  };
  const std::size_t lc = n * kPorts * c;
  g.vector(
      "link_color_forwarded", [lc] { return lc; },
      [this, per_link_color](std::size_t i) { return per_link_color(link_forwarded_, i); }, "wavelets",
      "wavelets sent on each output link and color (index ((y * width + x) * 5 + port) * colors + color)");
  g.vector(
      "link_color_credit_stalls", [lc] { return lc; },
      [this, per_link_color](std::size_t i) { return per_link_color(link_stalled_, i); }, "cycles",
      "cycles each output link had a wavelet of the color but no credit (index as link_color_forwarded)");
  g.vector(
      "link_color_occupancy_integral", [lc] { return lc; },
      [this, per_link_color](std::size_t i) { return per_link_color(link_occupancy_, i); }, "wavelet-cycles",
      "occupancy integral of each input queue (port, color) (index as link_color_forwarded, input port)");
}

}  // namespace wafersim::fabric
