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
  g.counter("wavelets_forwarded", &counts_->forwarded, "wavelets",
            "wavelets sent through router outputs (to neighbours, ramps and edge channels; a multicast counts "
            "each copy)");
  g.counter("wavelets_injected", &injected_, "wavelets", "wavelets sent into the fabric by ramps and edge channels");
  g.counter("wavelets_delivered", &delivered_, "wavelets",
            "wavelets delivered into ramp and edge-channel receive queues");
  g.counter("credit_stalls", &counts_->stalled, "output-color-cycles",
            "cycles an output had a wavelet of a color to send but no credit for that color downstream (summed "
            "over outputs and colors)");
  g.formula(
      "occupancy_integral", [this] { return static_cast<double>(occupancy_integral()); }, "wavelet-cycles",
      "sum over cycles of the wavelets in all router input queues (divide by cycles for the mean)", true);
  g.formula(
      "wavelets_in_flight", [this] { return static_cast<double>(counts_->in_network); }, "wavelets",
      "wavelets in router queues or on links at the end of the run", true);
  g.formula(
      "routers_used", [this] { return static_cast<double>(touched_routers()); }, "routers",
      "routers that held a wavelet at least once", true);
  g.formula(
      "bits_forwarded",
      [this] { return static_cast<double>(counts_->forwarded) * static_cast<double>(config_.wavelet_width.bits); },
      "bits", "payload bits sent through router outputs (wavelets_forwarded x wavelet_width)", true);

  const std::uint32_t c = colors_;
  g.vector(
      "forwarded_by_color", [c] { return std::size_t{c}; },
      [this](std::size_t i) { return static_cast<double>(counts_->color_forwarded[i]); }, "wavelets",
      "wavelets forwarded, per color (all routers and outputs)");
  g.vector(
      "credit_stalls_by_color", [c] { return std::size_t{c}; },
      [this](std::size_t i) { return static_cast<double>(counts_->color_stalled[i]); }, "output-cycles",
      "credit stalls, per color (all routers and outputs)");
  g.vector(
      "occupancy_integral_by_color", [c] { return std::size_t{c}; },
      [this](std::size_t i) {
        return static_cast<double>(counts_->color_occupancy[i] + (cycle_unfinished() ? counts_->color_queued[i] : 0));
      },
      "wavelet-cycles", "queue occupancy integral, per color (all routers and input ports)");
  g.vector(
      "forwarded_by_port", [] { return std::size_t{kPorts}; },
      [this](std::size_t p) {
        std::uint64_t sum = 0;
        for (std::uint32_t r = 0; r < geometry_.routers(); ++r)
          sum += routers_->port_forwarded(r, static_cast<std::uint32_t>(p));
        return static_cast<double>(sum);
      },
      "wavelets", "wavelets forwarded, per output direction (north, east, south, west, ramp)");
  g.vector(
      "credit_stalls_by_port", [] { return std::size_t{kPorts}; },
      [this](std::size_t p) {
        std::uint64_t sum = 0;
        for (std::uint32_t r = 0; r < geometry_.routers(); ++r)
          sum += routers_->port_stalled(r, static_cast<std::uint32_t>(p));
        return static_cast<double>(sum);
      },
      "output-color-cycles", "credit stalls, per output direction (north, east, south, west, ramp)");
  g.vector(
      "occupancy_integral_by_port", [] { return std::size_t{kPorts}; },
      [this](std::size_t p) {
        std::uint64_t sum = counts_->dir_occupancy[p];
        if (cycle_unfinished())
          for (std::uint32_t r = 0; r < geometry_.routers(); ++r)
            sum += port_unfinished(r, static_cast<std::uint32_t>(p));
        return static_cast<double>(sum);
      },
      "wavelet-cycles", "queue occupancy integral, per input direction (north, east, south, west, ramp)");

  if (detail_ == StatsDetail::Totals) return;
  const std::size_t n = geometry_.routers();
  // Per router port: forwarded and stalled count the output, occupancy the input queues.
  enum class Counter { Forwarded, Stalled, Occupancy };
  auto port_value = [this](Counter which, std::uint32_t r, std::uint32_t p) -> std::uint64_t {
    switch (which) {
      case Counter::Forwarded:
        return routers_->port_forwarded(r, p);
      case Counter::Stalled:
        return routers_->port_stalled(r, p);
      case Counter::Occupancy:
        return port_occupancy(r, p);
    }
    return 0;
  };
  auto per_router = [port_value](Counter which, std::size_t r) {
    std::uint64_t sum = 0;
    for (std::uint32_t p = 0; p < kPorts; ++p) sum += port_value(which, static_cast<std::uint32_t>(r), p);
    return static_cast<double>(sum);
  };
  auto per_link = [port_value](Counter which, std::size_t i) {
    return static_cast<double>(
        port_value(which, static_cast<std::uint32_t>(i / kPorts), static_cast<std::uint32_t>(i % kPorts)));
  };
  g.vector(
      "router_forwarded", [n] { return n; }, [per_router](std::size_t r) { return per_router(Counter::Forwarded, r); },
      "wavelets", "wavelets forwarded by each router (index y * width + x)");
  g.vector(
      "router_credit_stalls", [n] { return n; },
      [per_router](std::size_t r) { return per_router(Counter::Stalled, r); }, "output-color-cycles",
      "credit stalls of each router (index y * width + x)");
  g.vector(
      "router_occupancy_integral", [n] { return n; },
      [per_router](std::size_t r) { return per_router(Counter::Occupancy, r); }, "wavelet-cycles",
      "queue occupancy integral of each router's input queues (index y * width + x)");
  g.vector(
      "link_forwarded", [n] { return n * kPorts; },
      [per_link](std::size_t i) { return per_link(Counter::Forwarded, i); }, "wavelets",
      "wavelets sent on each output link (index (y * width + x) * 5 + port; ports north, east, south, west, "
      "ramp)");
  g.vector(
      "link_credit_stalls", [n] { return n * kPorts; },
      [per_link](std::size_t i) { return per_link(Counter::Stalled, i); }, "color-cycles",
      "credit stalls on each output link (index (y * width + x) * 5 + port)");
  g.vector(
      "link_occupancy_integral", [n] { return n * kPorts; },
      [per_link](std::size_t i) { return per_link(Counter::Occupancy, i); }, "wavelet-cycles",
      "occupancy integral of each input port's queues (index (y * width + x) * 5 + port)");

  if (detail_ != StatsDetail::Links) return;
  auto per_link_color = [this](Counter which, std::size_t i) {
    const std::size_t stride = std::size_t{kPorts} * colors_;
    const auto r = static_cast<std::uint32_t>(i / stride), p = static_cast<std::uint32_t>(i % stride / colors_),
               color = static_cast<std::uint32_t>(i % colors_);
    const LinkCounters l = routers_->link_color_counters(r, p, color, evaluated_);
    switch (which) {
      case Counter::Forwarded:
        return static_cast<double>(l.forwarded);
      case Counter::Stalled:
        return static_cast<double>(l.stalled);
      case Counter::Occupancy:
        return static_cast<double>(l.occupancy);
    }
    return 0.0;
  };
  const std::size_t lc = n * kPorts * c;
  g.vector(
      "link_color_forwarded", [lc] { return lc; },
      [per_link_color](std::size_t i) { return per_link_color(Counter::Forwarded, i); }, "wavelets",
      "wavelets sent on each output link and color (index ((y * width + x) * 5 + port) * colors + color)");
  g.vector(
      "link_color_credit_stalls", [lc] { return lc; },
      [per_link_color](std::size_t i) { return per_link_color(Counter::Stalled, i); }, "cycles",
      "cycles each output link had a wavelet of the color but no credit (index as link_color_forwarded)");
  g.vector(
      "link_color_occupancy_integral", [lc] { return lc; },
      [per_link_color](std::size_t i) { return per_link_color(Counter::Occupancy, i); }, "wavelet-cycles",
      "occupancy integral of each input queue (port, color) (index as link_color_forwarded, input port)");
}

}  // namespace wafersim::fabric
