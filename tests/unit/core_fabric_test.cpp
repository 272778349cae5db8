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

// A fabric input with repeat=4: each wavelet feeds the 4 elements of one step, so
// y[4 o + i] += w[o] x[i] takes one cycle per weight with native fp16 partials. PE (0, 0)
// streams n weights (1.5, 2.5, ...); PE (1, 0) multiplies them into its 4 tokens x = 1..4
// (x and y in different bank pairs).
std::string weights(unsigned n) {
  std::string s;
  for (unsigned k = 0; k < n; ++k) s += fmt::format("{}{}", k ? ", " : "", 1.5 + k);
  return s;
}

// PE (0, 0) streams the n weights 1.5, 2.5, ... on color 1.
std::string producer(unsigned n) {
  return fmt::format(R"(.pe 0, 0
.data w, 0x0, f16, {}
.dsd vw, mem, f16, base=w, len={}
.dsd out, fabout, f16, color=1, len={}
.task main, 0
.entry main
main:
  fmov.f16 out, vw
  ret
)",
                     weights(n), n, n);
}

std::string repeat_program(unsigned n, const std::string& acc, const std::string& second) {
  return fmt::format(R"(
{producer}.pe 1, 0
.data x, 0x0, f16, 1, 2, 3, 4
.dsd xc, circ, f16, base=x, size=4, len={m}
.dsd y, mem, {acc}, base=0x108, len={m}
.dsd w_in, fabin, f16, color=1, len={m}, repeat=4
.task main, 0
.entry main
main:
  fmac.{suffix} y, y, w_in, xc{second}
  tsc r2
  ret
)",
                     fmt::arg("n", n), fmt::arg("m", 4 * n), fmt::arg("acc", acc), fmt::arg("second", second),
                     fmt::arg("producer", producer(n)), fmt::arg("suffix", acc == "f16" ? "f16" : "f32.f16"));
}

struct RepeatRig : MeshRig {
  explicit RepeatRig(unsigned n) : MeshRig({}, row_route(1, 1)) { load(repeat_program(n, "f16", "")); }
};

TEST(FabricRepeat, EachWaveletFeedsOneStepOfFourElements) {
  const unsigned n = 6;
  RepeatRig rig(n);
  const auto& lat = rig.platform.spec.wafer.pe.latency;
  // Wavelets visible at the consumer from 5 + 2 ramps + 1 hop = 8, one a cycle: steps 8..13,
  // then the FMAC's latency.
  const std::uint64_t done = 8 + (n - 1) + 1 + lat.fmac.count();
  rig.run_to(done);
  EXPECT_EQ(rig.core(1, 0).reg(2), 0u) << "complete one cycle early";
  rig.run_to(done + 1);
  EXPECT_EQ(rig.core(1, 0).reg(2), done);
  rig.run();
  for (unsigned o = 0; o < n; ++o)
    for (unsigned i = 0; i < 4; ++i)
      EXPECT_EQ(rig.core(1, 0).sram().load(0x108 + 2 * (4 * o + i), 2),
                hw::numerics::from_double(hw::DType::F16, (1.5 + o) * (i + 1)))
          << o << " " << i;
  const auto& k = rig.core(1, 0).counters();
  EXPECT_EQ(k.wavelets_in, n);
  EXPECT_EQ(k.vector_elements, 4 * n);
  EXPECT_EQ(rig.core(0, 0).counters().stall_total(), 0u);  // one weight a cycle kept up
}

TEST(FabricRepeat, Fp32PartialsTakeTwoCyclesPerWeightOnOneWritePort) {
  // A step reads and writes two port words of fp32 partials: the one write port makes it two
  // cycles; the first step also reads x's word, a third read (three cycles).
  const unsigned n = 6;
  MeshRig rig({}, row_route(1, 1));
  rig.load(repeat_program(n, "f32", ""));
  const auto& lat = rig.platform.spec.wafer.pe.latency;
  const std::uint64_t last_step = 8 + 3 + 2 * (n - 1) - 1;
  const std::uint64_t done = last_step + 1 + lat.fmac.count();
  rig.run_to(done);
  EXPECT_EQ(rig.core(1, 0).reg(2), 0u);
  rig.run_to(done + 1);
  EXPECT_EQ(rig.core(1, 0).reg(2), done);
  rig.run();
  const auto& k = rig.core(1, 0).counters();
  EXPECT_EQ(k.stall[static_cast<int>(hw::Stall::SramPort)], n + 1);
  EXPECT_EQ(rig.core(1, 0).sram().load(0x108 + 4 * 23, 4), hw::numerics::from_double(hw::DType::F32, 6.5 * 4));
}

// Two FMACs over one stream, 3 weights each. On one ordered microthread the second issues
// while the first holds the color and takes its first step right after the first's last; an
// unordered second waits (queue) until the first completes.
std::string chain_program(const std::string& second_ut) {
  return fmt::format(R"(
{producer}.pe 1, 0
.data x, 0x0, f16, 1, 2, 3, 4
.dsd xc, circ, f16, base=x, size=4, len=12
.dsd y1, mem, f16, base=0x108, len=12
.dsd y2, mem, f16, base=0x128, len=12
.dsd w_in, fabin, f16, color=1, len=12, repeat=4
.task main, 0
.task fin, 1
.entry main
main:
  fmac.f16 y1, y1, w_in, xc, async, ut=0
  fmac.f16 y2, y2, w_in, xc, async{ut}, activate=fin
  ret
fin:
  tsc r2
  ret
)",
                     fmt::arg("producer", producer(6)), fmt::arg("ut", second_ut));
}

void check_chain(bool ordered) {
  MeshRig rig({}, row_route(1, 1));
  rig.load(chain_program(ordered ? ", ut=0" : ""));
  const auto& lat = rig.platform.spec.wafer.pe.latency;
  const std::uint64_t first_done = 8 + 2 + 1 + lat.fmac.count();  // steps 8, 9, 10
  // Ordered: steps 11..13 back to back. Unordered: issued when the first completes, its first
  // step vector_start later (the wavelets wait at the ramp).
  const std::uint64_t second_last = ordered ? 13 : first_done + lat.vector_start.count() + 2;
  const std::uint64_t done = second_last + 1 + lat.fmac.count();
  rig.run();
  EXPECT_EQ(rig.core(1, 0).reg(2), done + lat.task_switch.count());
  const auto& k = rig.core(1, 0).counters();
  EXPECT_EQ(k.stall[static_cast<int>(hw::Stall::Queue)], ordered ? 0u : first_done - 3);
  EXPECT_EQ(rig.core(1, 0).sram().load(0x128 + 2 * 11, 2), hw::numerics::from_double(hw::DType::F16, 6.5 * 4));
}

TEST(FabricRepeat, AnOrderedSuccessorIssuesBehindTheColorsHolder) { check_chain(true); }
TEST(FabricRepeat, AnUnorderedSuccessorWaitsForTheColor) { check_chain(false); }

TEST(FabricRepeat, ARepeatAboveTheLanesSplitsAWaveletsElementsOverSteps) {
  // repeat 6 on 4 lanes: steps of 4 and 2 elements, the second taking the wavelet off.
  MeshRig rig({}, row_route(1, 1));
  rig.load(producer(2) + R"(.pe 1, 0
.data x, 0x0, f16, 1, 2, 3, 4, 5, 6
.dsd xc, circ, f16, base=x, size=6, len=12
.dsd y, mem, f16, base=0x108, len=12
.dsd w_in, fabin, f16, color=1, len=12, repeat=6
.task main, 0
.entry main
main:
  fmac.f16 y, y, w_in, xc
  ret
)");
  rig.run();
  for (unsigned o = 0; o < 2; ++o)
    for (unsigned i = 0; i < 6; ++i)
      EXPECT_EQ(rig.core(1, 0).sram().load(0x108 + 2 * (6 * o + i), 2),
                hw::numerics::from_double(hw::DType::F16, (1.5 + o) * (i + 1)))
          << o << " " << i;
  EXPECT_EQ(rig.core(1, 0).counters().wavelets_in, 2u);
  EXPECT_EQ(rig.core(1, 0).counters().vector_elements, 12u);
}

TEST(FabricRepeat, ALengthThatIsNotAMultipleOfTheRepeatIsAnError) {
  MeshRig rig({}, row_route(1, 1));
  std::string prog = repeat_program(2, "f16", "");
  prog.replace(prog.find("len=8, repeat=4"), 15, "len=8, repeat=3");
  rig.load(prog);
  try {
    rig.run();
    FAIL() << "expected a simulation error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'w_in' has 8 elements, not a multiple of its repeat 3"), std::string::npos)
        << e.what();
  }
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
