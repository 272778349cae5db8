// A defective wafer's logical grid on the mesh (docs/defects.md): a detour costs its extra
// hops on exactly the links it replaces, to the cycle, in both directions; XY packets take
// them too; and a compiled model runs unchanged on a defective wafer, its timing with the
// detours in it.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fabric/link_delays.h"
#include "fabric/mesh.h"
#include "fabric/route_loader.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_pes.h"

namespace wafersim::fabric::defects_mesh_test {
namespace {

using hw::PeCoord;

FabricConfig config(std::uint64_t hop, std::uint64_t ramp) {
  FabricConfig c;
  c.colors = 24;
  c.queue_depth = 8;
  c.hop_latency = sim::Cycle(hop);
  c.ramp_latency = sim::Cycle(ramp);
  c.edge_io_channels = 8;
  c.deadlock_timeout = sim::Cycle(1000);
  return c;
}

// PE (1, 1) to PE (5, 4) on color 0 (east along row 1, south along column 5: 7 hops), and back
// from (5, 4) to (1, 1) on color 1 (north, then west).
const char* kThereAndBack = R"(routes:
  - {color: 0, at: [1, 1], from: ramp, to: east}
  - {color: 0, x: 2..4, y: 1, from: west, to: east}
  - {color: 0, at: [5, 1], from: west, to: south}
  - {color: 0, x: 5, y: 2..3, from: north, to: south}
  - {color: 0, at: [5, 4], from: north, to: ramp}
  - {color: 1, at: [5, 4], from: ramp, to: north}
  - {color: 1, x: 5, y: 2..3, from: south, to: north}
  - {color: 1, at: [5, 1], from: south, to: west}
  - {color: 1, x: 2..4, y: 1, from: east, to: west}
  - {color: 1, at: [1, 1], from: east, to: ramp}
)";

// Two detours on the path: the link (3, 1)-(4, 1) takes 2 cycles more, (5, 2)-(5, 3) 3 more.
std::shared_ptr<const LinkDelays> detours() {
  auto d = std::make_shared<LinkDelays>(64);
  auto link = [&](std::uint32_t r, Port p, std::uint32_t n, std::uint16_t cycles) {
    d->set_extra(r, index(p), cycles);
    d->set_extra(n, index(opposite(p)), cycles);
  };
  link(1 * 8 + 3, Port::East, 1 * 8 + 4, 2);
  link(2 * 8 + 5, Port::South, 3 * 8 + 5, 3);
  return d;
}

struct Rig {
  Rig(const FabricConfig& c, std::shared_ptr<const LinkDelays> d, Routing routing = Routing::Static)
      : delays(std::move(d)),
        geometry(8, 8, c.edge_io_channels),
        engine("engine", sim::EngineOptions{units::Frequency{1e9}, true, sim::Cycle::never()}),
        mesh(c, geometry, options(c, routing), &engine),
        pes(mesh, engine) {}
  MeshOptions options(const FabricConfig& c, Routing routing) const {
    MeshOptions o;
    o.routing = routing;
    if (routing == Routing::Static)
      o.routes = std::make_shared<RouteTable>(parse_routes(kThereAndBack, "routes.yaml", geometry, c.colors));
    o.link_delays = delays.get();
    return o;
  }
  void run() {
    sc_core::sc_start();
    engine.rethrow_failure();
  }
  std::shared_ptr<const LinkDelays> delays;
  MeshGeometry geometry;
  sim::Engine engine;
  Mesh mesh;
  test::TestPes pes;
};

struct Timing {
  std::uint64_t hop, ramp;
};
class Detour : public ::testing::TestWithParam<Timing> {};

// Without detours a wavelet is visible at t + 2 ramp + 7 hop (ZeroLoad, fabric_mesh_test.cpp);
// with them 5 cycles later, each way. The receiving PEs poll every cycle: one cycle early or late fails.
TEST_P(Detour, CostsExactlyItsExtraCyclesEachWay) {
  const Timing tm = GetParam();
  Rig rig(config(tm.hop, tm.ramp), detours());
  EXPECT_FALSE(rig.mesh.uniform_links());
  EXPECT_EQ(rig.mesh.link_latency(1 * 8 + 3, index(Port::East)), tm.hop + 2);
  EXPECT_EQ(rig.mesh.link_latency(1 * 8 + 4, index(Port::West)), tm.hop + 2);
  EXPECT_EQ(rig.mesh.link_latency(1 * 8 + 4, index(Port::East)), tm.hop);
  rig.pes.send({1, 1}, 0, 0xabc, 10);
  rig.pes.send({5, 4}, 1, 0xdef, 20);
  rig.pes.poll_until(200);
  rig.run();
  const std::uint64_t base = 2 * tm.ramp + 7 * tm.hop, extra = 5;
  const auto& there = rig.pes.received({5, 4});
  const auto& back = rig.pes.received({1, 1});
  ASSERT_EQ(there.size(), 1u);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(there[0].cycle, 10 + base + extra);
  EXPECT_EQ(back[0].cycle, 20 + base + extra);
  EXPECT_EQ(rig.mesh.forwarded(), 16u);
  EXPECT_EQ(rig.mesh.in_network(), 0u);
}

INSTANTIATE_TEST_SUITE_P(HopAndRamp, Detour, ::testing::Values(Timing{1, 1}, Timing{2, 1}, Timing{1, 3}),
                         [](const auto& p) {
                           return "hop" + std::to_string(p.param.hop) + "_ramp" + std::to_string(p.param.ramp);
                         });

// A stream over a detour still moves one wavelet per cycle (credits return in a cycle, as over
// any link): the detour delays it, it does not thin it.
TEST(Detour, AStreamKeepsItsRateAndOrder) {
  Rig rig(config(1, 1), detours());
  for (std::uint32_t i = 0; i < 30; ++i) rig.pes.send({1, 1}, 0, i, 5);
  rig.run();
  const auto& got = rig.pes.received({5, 4});
  ASSERT_EQ(got.size(), 30u);
  for (std::uint32_t i = 0; i < 30; ++i) {
    EXPECT_EQ(got[i].payload, i);
    EXPECT_EQ(got[i].cycle, 5 + 9 + 5 + i) << i;
  }
}

// XY packets take the detours too: (3, 1) to (4, 1) is one hop plus two cycles.
TEST(Detour, XyPacketsTakeThem) {
  Rig rig(config(1, 1), detours(), Routing::XY);
  rig.pes.send({3, 1}, 0, pack_destination(4, 1), 7);
  rig.pes.poll_until(100);
  rig.run();
  const auto& got = rig.pes.received({4, 1});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].cycle, 7 + 2 + 1 + 2);
}

// A compiled model runs unchanged on a defective wafer: every result checks, and the detours
// cost cycles. The same defect list gives the same statistics, byte for byte.
TEST(Detour, ACompiledModelRunsUnchangedOnADefectiveWafer) {
  test::TempDir dir;
  dir.write("defects.yaml", "cores:\n  - {at: [0, 1]}\n  - {at: [3, 2]}\n  - {at: [6, 4]}\n");
  const std::string plat = dir.write("p.yaml", "base: tiny\ndefects:\n  file: defects.yaml\n");
  const auto plain = test::wafersim("run tiny --model tiny-mlp --json -o " + (dir.path() / "plain").string());
  const auto bad = test::wafersim("run " + plat + " --model tiny-mlp --json -o " + (dir.path() / "a").string());
  const auto again = test::wafersim("run " + plat + " --model tiny-mlp --json -o " + (dir.path() / "b").string());
  ASSERT_EQ(plain.code, 0) << plain.out;
  ASSERT_EQ(bad.code, 0) << bad.out;
  ASSERT_EQ(again.code, 0);
  auto cycles = [](const std::string& json) {
    const auto at = json.find("\"cycles\":");
    return std::stoull(json.substr(at + 9));
  };
  EXPECT_GT(cycles(bad.out), cycles(plain.out));
  EXPECT_NE(bad.out.find("\"mismatches\": 0"), std::string::npos) << bad.out;
  const std::string stats = test::slurp(dir.path() / "a" / "stats.json");
  EXPECT_EQ(stats, test::slurp(dir.path() / "b" / "stats.json"));
  EXPECT_NE(stats.find("\"dead_cores\": 3"), std::string::npos);
}

}  // namespace
}  // namespace wafersim::fabric::defects_mesh_test
