// Synthetic traffic on a wafer's cycle engine (as `wafersim traffic` runs it) gives exactly
// the result of the stand-alone loop used by the other traffic tests and the benchmarks.

#include <gtest/gtest.h>

#include <systemc>

#include "fabric/traffic/generator.h"
#include "fabric/traffic/standalone.h"
#include "platforms/platform_spec.h"
#include "platforms/wafer.h"

namespace wafersim::fabric_traffic_engine_test {
namespace {

TEST(TrafficOnTheEngine, MatchesTheStandAloneLoop) {
  const auto loaded = platforms::load_platform("tiny", {"fabric.queue_depth=4"});
  fabric::traffic::TrafficOptions o;
  o.pattern = "bit-complement";
  o.rate = 0.2;
  o.packet_size = 3;
  o.colors = 2;
  o.warmup = 300;
  o.measure = 1500;
  o.seed = 9;

  platforms::BuildOptions build;
  build.routing = fabric::Routing::XY;
  sim::stats::Group root("");
  platforms::Wafer wafer("wafer0", loaded.spec, build, root);
  fabric::traffic::TrafficGenerator gen(wafer.mesh(), o, &wafer.engine());
  sc_core::sc_start();
  wafer.engine().rethrow_failure();
  ASSERT_TRUE(gen.finished());
  const auto on_engine = gen.result();

  fabric::MeshOptions mesh;
  mesh.routing = fabric::Routing::XY;
  fabric::traffic::StandaloneTraffic alone(
      loaded.spec.fabric,
      fabric::MeshGeometry(loaded.spec.wafer.width, loaded.spec.wafer.height, loaded.spec.fabric.edge_io_channels),
      mesh, o);
  const auto standalone = alone.run();

  EXPECT_TRUE(on_engine.drained);
  EXPECT_EQ(on_engine.cycles, standalone.cycles);
  EXPECT_EQ(on_engine.offered, standalone.offered);
  EXPECT_EQ(on_engine.accepted, standalone.accepted);
  EXPECT_EQ(on_engine.latency_avg, standalone.latency_avg);
  EXPECT_EQ(on_engine.latency_p99, standalone.latency_p99);
  EXPECT_EQ(on_engine.latency_max, standalone.latency_max);
  EXPECT_EQ(on_engine.packets, standalone.packets);
  EXPECT_EQ(wafer.mesh().forwarded(), alone.mesh().forwarded());
  EXPECT_EQ(wafer.mesh().occupancy_integral(), alone.mesh().occupancy_integral());
  // The engine stopped in the cycle the generator finished.
  EXPECT_EQ(wafer.engine().cycles().count(), on_engine.cycles + 1);
}

}  // namespace
}  // namespace wafersim::fabric_traffic_engine_test
