// Fast-forward on a whole wafer (engine, mesh, cores): when every component waits for a known
// future event (a host activation, wavelets on long links) the engine jumps to it instead of
// ticking empty cycles, and the event still happens in exactly its cycle, not one early or
// late. Each test elaborates its own SystemC kernel.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <systemc>

#include <memory>
#include <string>

#include "fabric/route_loader.h"
#include "hw/isa/assembler.h"
#include "platforms/platform_spec.h"
#include "platforms/wafer.h"

namespace wafersim::test::fast_forward_test {
namespace {

using hw::PeCoord;

struct WaferRig {
  explicit WaferRig(const std::vector<std::string>& overrides, const std::string& routes = "routes: []\n")
      : platform(platforms::load_platform("tiny", overrides)) {
    const auto& s = platform.spec;
    platforms::BuildOptions o;
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
  const hw::Core& core(unsigned x, unsigned y) const {
    return *wafer->cores().find(PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y)});
  }
  std::uint64_t ticks() const { return wafer->engine().engine_ticks(); }

  platforms::LoadedPlatform platform;
  sim::stats::Group stats{""};
  std::unique_ptr<platforms::Wafer> wafer;
};

// The host activates a task a million cycles ahead; nothing else happens meanwhile.
TEST(FastForward, JumpsToAHostActivationAMillionCyclesAhead) {
  constexpr std::uint64_t kAt = 1'000'000;
  WaferRig rig({});
  rig.load(".task main, 0\nmain:\n  tsc r1\n  ret\n");
  rig.wafer->cores().activate(PeCoord{0, 0}, 0, sim::Cycle(kAt));
  rig.run_to(kAt);  // cycles 0 .. kAt - 1
  EXPECT_EQ(rig.core(0, 0).counters().task_activations, 0u) << "started early";
  EXPECT_EQ(rig.ticks(), 1u);  // cycle 0 (the program is loaded), then nothing until kAt
  rig.run_to(kAt + 1);
  EXPECT_EQ(rig.core(0, 0).counters().task_activations, 1u) << "started late";
  sc_core::sc_start();
  rig.wafer->cores().check_finished();
  // The first instruction issues task_switch (2) cycles after the start; ret one cycle later.
  EXPECT_EQ(rig.core(0, 0).reg(1), kAt + 2);
  EXPECT_EQ(rig.wafer->cores().finish_cycle(), kAt + 4);
  // Ticked: cycle 0 (the program is loaded), kAt (the task starts), kAt + 2 (tsc; kAt + 1
  // is skipped: the core waits out the task switch), kAt + 3 (ret) and kAt + 4 (the
  // scheduler finds no task). Every other cycle was jumped over.
  EXPECT_EQ(rig.ticks(), 5u);
  EXPECT_EQ(rig.wafer->engine().cycles(), sim::Cycle(kAt + 5));
  EXPECT_EQ(rig.wafer->engine().cycles_skipped(), kAt);
}

// A wavelet spends 1000-cycle ramps and 1000-cycle hops on the way to a data task three hops
// away: the mesh sleeps until the wavelet is due at each router and the cores until it is
// visible, so the engine ticks 14 times over 5007 cycles.
TEST(FastForward, JumpsOverWaveletsOnLongLinks) {
  WaferRig rig({"fabric.hop_latency=1000 cycles", "fabric.ramp_latency=1000 cycles"},
               "routes:\n"
               "  - {color: 2, at: [0, 0], from: ramp, to: east}\n"
               "  - {color: 2, x: 1..2, y: 0, from: west, to: east}\n"
               "  - {color: 2, at: [3, 0], from: west, to: ramp}\n");
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
  // Sent in cycle 2 (task_switch); in (0, 0)'s queue from 1002, granted then, in the next
  // routers' queues from 2002, 3002, 4002; granted to the ramp in 4002, visible from 5002.
  constexpr std::uint64_t kVisible = 2 + 1000 + 3 * 1000 + 1000;
  rig.run_to(kVisible);
  EXPECT_EQ(rig.core(3, 0).counters().task_activations, 0u) << "started early";
  rig.run_to(kVisible + 1);
  EXPECT_EQ(rig.core(3, 0).counters().task_activations, 1u) << "started late";
  sc_core::sc_start();
  rig.wafer->cores().check_finished();
  EXPECT_EQ(rig.core(3, 0).reg(1), kVisible + 2);
  EXPECT_EQ(rig.wafer->cores().finish_cycle(), kVisible + 4);
  EXPECT_EQ(rig.wafer->mesh().delivered(), 1u);
  // Ticked: 0, 2, 3, 4 (PE (0, 0) starts, sends, returns, finds no task), 1002 and 1003 (the
  // first router takes the wavelet from the ramp and forwards it; the ramp's credit returns),
  // 2002, 3002, 4002 (one tick per router), 5002 .. 5006 (PE (3, 0) takes the wavelet and
  // the mesh returns its credit, tsc, ret, no task): 14 of 5007 cycles.
  EXPECT_EQ(rig.ticks(), 14u);
  EXPECT_EQ(rig.wafer->engine().cycles(), sim::Cycle(kVisible + 5));
  EXPECT_EQ(rig.wafer->engine().cycles_skipped(), kVisible + 5 - 14);
}

}  // namespace
}  // namespace wafersim::test::fast_forward_test
