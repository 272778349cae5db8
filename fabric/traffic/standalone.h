#pragma once
// Synthetic traffic on a mesh without SystemC: the mesh and the generator ticked by a
// plain loop in read / evaluate / write phases. For tests that run many loads in one
// process and for the benchmarks; `wafersim traffic` runs the same components on the
// wafer's engine (a test checks both give the same result).

#include <cstdint>
#include <memory>

#include "fabric/mesh.h"
#include "fabric/traffic/generator.h"
#include "fabric/traffic/measurement.h"
#include "fabric/traffic/traffic_options.h"

namespace wafersim::fabric::traffic {

class StandaloneTraffic {
 public:
  // Without mesh_options.traffic the mesh is told what the generator's options make it expect
  // (TrafficGenerator::expected_traffic).
  StandaloneTraffic(const FabricConfig& fabric, const MeshGeometry& geometry, MeshOptions mesh_options,
                    const TrafficOptions& options);

  // Runs until the generator finishes (or `max_cycles`); returns its result.
  TrafficResult run(std::uint64_t max_cycles = ~std::uint64_t{0});
  // Ticks `cycles` cycles (or fewer if the generator finishes).
  void step(std::uint64_t cycles);

  [[nodiscard]] Mesh& mesh() { return mesh_; }
  [[nodiscard]] TrafficGenerator& generator() { return generator_; }
  [[nodiscard]] std::uint64_t cycle() const { return cycle_; }

 private:
  Mesh mesh_;
  TrafficGenerator generator_;
  std::uint64_t cycle_ = 0;
};

}  // namespace wafersim::fabric::traffic
