#include "fabric/traffic/standalone.h"

namespace wafersim::fabric::traffic {
namespace {

MeshOptions expecting(MeshOptions m, const MeshGeometry& geometry, const TrafficOptions& options) {
  if (!m.traffic) m.traffic = TrafficGenerator::expected_traffic(options, geometry, m.routing);
  return m;
}

}  // namespace

StandaloneTraffic::StandaloneTraffic(const FabricConfig& fabric, const MeshGeometry& geometry, MeshOptions mesh_options,
                                     const TrafficOptions& options)
    : mesh_(fabric, geometry, expecting(std::move(mesh_options), geometry, options), nullptr),
      generator_(mesh_, options, nullptr) {}

void StandaloneTraffic::step(std::uint64_t cycles) {
  for (std::uint64_t i = 0; i < cycles && !generator_.finished(); ++i) {
    const sim::Cycle now(cycle_);
    mesh_.read(now);
    generator_.read(now);
    mesh_.evaluate(now);
    generator_.evaluate(now);
    mesh_.write(now);
    generator_.write(now);
    ++cycle_;
  }
}

TrafficResult StandaloneTraffic::run(std::uint64_t max_cycles) {
  while (!generator_.finished() && cycle_ < max_cycles) step(1024);
  return generator_.result();
}

}  // namespace wafersim::fabric::traffic
