#include "fabric/traffic/standalone.h"

namespace wafersim::fabric::traffic {

StandaloneTraffic::StandaloneTraffic(const FabricConfig& fabric, const MeshGeometry& geometry, MeshOptions mesh_options,
                                     const TrafficOptions& options)
    : mesh_(fabric, geometry, std::move(mesh_options), nullptr), generator_(mesh_, options, nullptr) {}

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
