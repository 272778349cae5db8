// PE cores on the real mesh (platforms::Wafer: engine, mesh, core array): a producer and a
// consumer exchanging a vector with the exact end-to-end cycle count for several hop counts
// and hop and ramp latencies, task activation by a wavelet, multicast, and bit-identical
// statistics with and without idle skipping. Each test elaborates its own SystemC kernel.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <systemc>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "fabric/route_loader.h"
#include "hw/isa/assembler.h"
#include "hw/numerics/elementary.h"
#include "hw/numerics/softfloat.h"
#include "platforms/platform_spec.h"
#include "platforms/wafer.h"
#include "sim/stats/formatters.h"
#include "tests/support/temp_dir.h"

namespace wafersim::test::core_fabric_test {
namespace {

using hw::PeCoord;

struct MeshRig {
  MeshRig(const std::vector<std::string>& overrides, const std::string& routes, bool idle_skip = true)
      : platform(platforms::load_platform("tiny", overrides)) {
    const auto& s = platform.spec;
    platforms::BuildOptions o;
    o.idle_skip = idle_skip;
    o.routes = std::make_shared<fabric::RouteTable>(fabric::parse_routes(
        routes, "routes.yaml", fabric::MeshGeometry(s.wafer.width, s.wafer.height, s.fabric.edge_io_channels),
        s.fabric.colors));
    wafer = std::make_unique<platforms::Wafer>("wafer", platform.spec, o, stats);
  }
  void load(const std::string& program) {
    for (const auto& p : hw::isa::assemble(program, "t.s")) wafer->cores().load(p);
  }
  // Simulates every cycle before `c`.
  void run_to(std::uint64_t c) { sc_core::sc_start(wafer->engine().time_of(sim::Cycle(c)) - sc_core::sc_time_stamp()); }
  void run() {
    sc_core::sc_start();
    wafer->cores().check_finished();
  }
  const hw::Core& core(unsigned x, unsigned y) const {
    return *wafer->cores().find(PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y)});
  }

  platforms::LoadedPlatform platform;
  sim::stats::Group stats{""};
  std::unique_ptr<platforms::Wafer> wafer;
};

// PE (0, 0) streams n fp16 on color 1; PE (hops, 0) receives them into memory and reads the
// cycle counter when its copy completes.
std::string stream_program(unsigned hops, unsigned n) {
  return fmt::format(R"(
.pe 0, 0
.fill x, 0x0, f16, {n}, 1.5
.dsd vx, mem, f16, base=x, len={n}
.dsd out, fabout, f16, color=1, len={n}
.task main, 0
.entry main
main:
  fmov.f16 out, vx
  ret
.pe {h}, 0
.dsd vy, mem, f16, base=0x100, len={n}
.dsd in, fabin, f16, color=1, len={n}
.task main, 0
.entry main
main:
  fmov.f16 vy, in
  tsc r2
  ret
)",
                     fmt::arg("n", n), fmt::arg("h", hops));
}

std::string row_route(unsigned hops, unsigned color) {
  std::string r = fmt::format("routes:\n  - {{color: {0}, at: [0, 0], from: ramp, to: east}}\n", color);
  if (hops >= 2) r += fmt::format("  - {{color: {}, x: 1..{}, y: 0, from: west, to: east}}\n", color, hops - 1);
  r += fmt::format("  - {{color: {}, at: [{}, 0], from: west, to: ramp}}\n", color, hops);
  return r;
}

// The end-to-end cycle count: the producer's copy issues at 2 and sends its first wavelet at
// 2 + vector_start (2) + mov latency (1) = 5, one per cycle after it; the mesh makes each
// visible at the consumer ramp + hops x hop + ramp cycles later (docs/fabric.md); the
// consumer takes one per cycle and completes 1 + mov latency (1) after the last.
struct Hop {
  unsigned hops, hop_latency, ramp_latency;
};
class EndToEnd : public ::testing::TestWithParam<Hop> {};

TEST_P(EndToEnd, ProducerAndConsumerOverTheMesh) {
  const Hop p = GetParam();
  const unsigned n = 12;
  MeshRig rig({fmt::format("fabric.hop_latency={} cycles", p.hop_latency),
               fmt::format("fabric.ramp_latency={} cycles", p.ramp_latency)},
              row_route(p.hops, 1));
  rig.load(stream_program(p.hops, n));
  const std::uint64_t first_visible = 5 + 2 * p.ramp_latency + p.hops * p.hop_latency;
  const std::uint64_t done = first_visible + (n - 1) + 1 + 1;
  rig.run_to(done);
  EXPECT_EQ(rig.core(p.hops, 0).reg(2), 0u) << "complete one cycle early";
  rig.run_to(done + 1);
  EXPECT_EQ(rig.core(p.hops, 0).reg(2), done);
  rig.run();
  const auto& k = rig.core(p.hops, 0).counters();
  EXPECT_EQ(k.stall[static_cast<int>(hw::Stall::FabricIn)], first_visible - 4);  // waiting from cycle 4
  EXPECT_EQ(k.stall_total(), first_visible - 4);
  EXPECT_EQ(rig.core(0, 0).counters().stall_total(), 0u);  // the mesh kept up with one per cycle
  for (unsigned i = 0; i < n; ++i) EXPECT_EQ(rig.core(p.hops, 0).sram().load(0x100 + 2 * i, 2), 0x3E00u) << i;
  EXPECT_EQ(rig.wafer->mesh().delivered(), n);
}

INSTANTIATE_TEST_SUITE_P(HopsAndLatencies, EndToEnd,
                         ::testing::Values(Hop{1, 1, 1}, Hop{3, 1, 1}, Hop{7, 1, 1}, Hop{3, 2, 1}, Hop{3, 1, 2},
                                           Hop{2, 3, 2}));

TEST(CoreOnMesh, AWaveletStartsADataTaskOnAnotherPe) {
  // send at cycle 2; visible at (3, 0) from 2 + 1 + 3 + 1 = 7; the data task starts there and
  // its first instruction issues after task_switch (2).
  MeshRig rig({}, row_route(3, 2));
  rig.load(R"(
.pe 0, 0
.task main, 0
.entry main
main:
  send 2, 0x1234
  ret
.pe 3, 0
.task on_w, 5, color=2
on_w:
  tsc r1
  ret
)");
  rig.run_to(7);
  EXPECT_EQ(rig.core(3, 0).counters().task_activations, 0u);
  rig.run_to(8);
  EXPECT_EQ(rig.core(3, 0).counters().task_activations, 1u);
  rig.run();
  EXPECT_EQ(rig.core(3, 0).reg(0), 0x1234u);
  EXPECT_EQ(rig.core(3, 0).reg(1), 9u);
}

const char* kMulticastRoutes = R"(
routes:
  - {color: 1, at: [0, 0], from: ramp, to: east}
  - {color: 1, at: [1, 0], from: west, to: east}
  - {color: 1, at: [2, 0], from: west, to: [east, south]}
  - {color: 1, at: [3, 0], from: west, to: ramp}
  - {color: 1, at: [2, 1], from: north, to: south}
  - {color: 1, at: [2, 2], from: north, to: ramp}
)";

std::string multicast_program() {
  return R"(
.pe 0, 0
.data x, 0x0, f16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
.dsd vx, mem, f16, base=x, len=16
.dsd out, fabout, f16, color=1, len=16
.task main, 0
.entry main
main:
  fmov.f16 out, vx
  ret
.pe 3, 0
.dsd vy, mem, f16, base=0x100, len=16
.dsd in, fabin, f16, color=1, len=16
.task main, 0
.entry main
main:
  fmov.f16 vy, in
  ret
.pe 2, 2
.dsd vy, mem, f16, base=0x100, len=16
.dsd in, fabin, f16, color=1, len=16
.task main, 0
.entry main
main:
  fexp.f16 vy, in       ; a slow consumer: 8 cycles per element
  ret
)";
}

TEST(CoreOnMesh, MulticastDeliversEveryWaveletToEachConsumer) {
  MeshRig rig({"fabric.queue_depth=2"}, kMulticastRoutes);
  rig.load(multicast_program());
  rig.run();
  for (unsigned i = 0; i < 16; ++i) {
    const std::uint32_t x = hw::numerics::from_double(hw::DType::F16, i + 1);
    EXPECT_EQ(rig.core(3, 0).sram().load(0x100 + 2 * i, 2), x) << i;
    EXPECT_EQ(rig.core(2, 2).sram().load(0x100 + 2 * i, 2), hw::numerics::exp(hw::DType::F16, x)) << i;
  }
  EXPECT_EQ(rig.wafer->mesh().delivered(), 32u);
  // The slow branch holds the stream back: the producer waits for credits.
  EXPECT_GT(rig.core(0, 0).counters().stall[static_cast<int>(hw::Stall::FabricOut)], 0u);
}

// The same run with every component ticked every cycle gives the same statistics, bytes
// for bytes (cores, mesh, the whole tree).
TEST(CoreOnMesh, IdleSkippingChangesNoStatistic) {
  // Two kernels cannot live in one process: this test runs with idle skipping, then runs
  // itself in a child process with skipping off, which writes its statistics to a file.
  const char* child_out = std::getenv("WAFERSIM_CORE_MESH_NO_SKIP");
  MeshRig rig({"fabric.queue_depth=2"}, kMulticastRoutes, /*idle_skip=*/child_out == nullptr);
  rig.load(multicast_program());
  rig.run();
  const std::string json = sim::stats::stats_file_json(rig.stats);
  if (child_out) {
    std::ofstream(child_out) << json;
    return;
  }
  TempDir dir;
  const auto path = (dir.path() / "no-skip.json").string();
  const std::string cmd = "WAFERSIM_CORE_MESH_NO_SKIP=" + path + " SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 " +
                          ::testing::internal::GetArgvs()[0] +
                          " --gtest_filter=CoreOnMesh.IdleSkippingChangesNoStatistic >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(path);
  std::stringstream other;
  other << in.rdbuf();
  EXPECT_EQ(other.str(), json);
  EXPECT_NE(json.find("\"fabric\""), std::string::npos);
  EXPECT_NE(json.find("\"cores\""), std::string::npos);
  // Skipping did skip: the engine ticked fewer components than cycles x components.
  EXPECT_LT(rig.wafer->engine().component_ticks(), 2 * rig.wafer->engine().cycles().count());
}

}  // namespace
}  // namespace wafersim::test::core_fabric_test
