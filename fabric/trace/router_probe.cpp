#include "fabric/trace/router_probe.h"

#include <fmt/format.h>

namespace wafersim::fabric::trace {

RouterProbe::RouterProbe(const Mesh& mesh, sim::Engine& engine, sim::trace::VcdFile& vcd,
                         std::vector<std::uint32_t> routers, const std::string& scope)
    : mesh_(mesh), engine_(engine), routers_(std::move(routers)), ports_(routers_.size() * kPorts) {
  const MeshGeometry& g = mesh.geometry();
  for (std::size_t i = 0; i < routers_.size(); ++i) {
    const hw::PeCoord pc = g.coord(routers_[i]);
    for (std::uint32_t p = 0; p < kPorts; ++p) {
      Port& port = ports_[i * kPorts + p];
      const std::string base = fmt::format("{}.r{}_{}.{}", scope, pc.x, pc.y, port_name(port_at(p)));
      vcd.add(port.queued, base + "_queued", 16);
      vcd.add(port.sent, base + "_sent", 1);
      vcd.add(port.stalled, base + "_stalled", 8);
    }
  }
  engine.add(this);
  engine.add_observer(this);
}

void RouterProbe::after_tick(sim::Cycle now) {
  bool sent = false;
  for (std::size_t i = 0; i < routers_.size(); ++i)
    for (std::uint32_t p = 0; p < kPorts; ++p) {
      Port& port = ports_[i * kPorts + p];
      const LinkCounters k = mesh_.link_counters(routers_[i], p);
      port.queued = k.queued;
      port.sent = static_cast<std::uint32_t>(k.forwarded - port.forwarded);
      port.stalled = static_cast<std::uint32_t>(k.stalled - port.stalls);
      port.forwarded = k.forwarded;
      port.stalls = k.stalled;
      sent |= port.sent != 0;
    }
  if (sent) engine_.wake(this, now + sim::Cycle(1));
}

std::string RouterProbe::describe() const { return fmt::format("router probe ({} routers)", routers_.size()); }

}  // namespace wafersim::fabric::trace
