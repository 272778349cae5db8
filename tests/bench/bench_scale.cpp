// Speed and scale of whole wafers (issue 9), one benchmark per process (scripts/bench runs
// each in its own; SystemC elaborates once per process):
//  * BM_Wafer/W/H: elaborating a W x H wafer (engine, mesh, core array, host socket), then
//    loading a program onto every PE and running it in timing-only mode: times and peak
//    memory of each step and the active PE-cycles per second of the run.
//  * BM_SmallWorkload/W/H: the same small workload (a block of 8 x 8 busy PEs and a stream
//    across it over the mesh) on a 64 x 64 and a 750 x 994 wafer: the cost per simulated
//    cycle follows the work, not the grid.
//
//   bench_scale --benchmark_filter='BM_Wafer/757/996'   (one benchmark per process)

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <systemc>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>

#include "fabric/route_loader.h"
#include "hw/isa/assembler.h"
#include "platforms/platform_spec.h"
#include "platforms/wafer.h"
#include "tests/bench/bench_support.h"

namespace {

using wafersim::bench::clock_seconds;
using wafersim::bench::cpu_seconds;
using wafersim::bench::first_in_process;
using wafersim::bench::peak_rss_mb;
using wafersim::bench::wall_seconds;

using wafersim::sim::Cycle;
namespace platforms = wafersim::platforms;

double rss_mb() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * 4096.0 / 1e6;
}

double seconds_since(double t0) { return cpu_seconds() - t0; }

// The WSE-2 preset resized, or the WSE-3 preset at its own size.
platforms::LoadedPlatform platform(unsigned w, unsigned h) {
  if (w == 762 && h == 1172) return platforms::load_platform("wse3");
  return platforms::load_platform("wse2", {fmt::format("wafer.width={}", w), fmt::format("wafer.height={}", h),
                                           fmt::format("fabric.edge_io_channels={}", std::min(h, 60u))});
}

// A vector loop on every PE: 4 x 64 fp16 additions (16 steps of 4 lanes each).
const char* kEveryPe = R"(
.dsd a, mem, f16, base=0x000, len=64
.dsd b, mem, f16, base=0x088, len=64
.dsd c, mem, f16, base=0x110, len=64
.task main, 0
.entry main
main:
  mov r1, 4
loop:
  fadd.f16 c, a, b
  sub r1, r1, 1
  bne r1, 0, loop
  ret
)";

void BM_Wafer(benchmark::State& state) {
  if (!first_in_process(state)) return;
  const auto w = static_cast<unsigned>(state.range(0)), h = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    const double rss0 = rss_mb();
    auto t0 = cpu_seconds();
    // Kept until the process ends (SystemC modules live as long as the kernel).
    auto* loaded = new platforms::LoadedPlatform(platform(w, h));
    auto* stats = new wafersim::sim::stats::Group("");
    platforms::BuildOptions o;
    o.timing_only = true;
    auto& wafer = *new platforms::Wafer("wafer", loaded->spec, o, *stats);
    state.counters["elaborate_s"] = seconds_since(t0);
    state.counters["elaborate_MB"] = rss_mb() - rss0;
    auto placements = wafersim::hw::isa::assemble(fmt::format(".pe 0..{}, 0..{}\n{}", w - 1, h - 1, kEveryPe), "pe.s");
    t0 = cpu_seconds();
    for (const auto& p : placements) wafer.cores().load(p);
    state.counters["load_s"] = seconds_since(t0);
    state.counters["loaded_MB"] = rss_mb() - rss0;
    t0 = cpu_seconds();
    sc_core::sc_start();
    const double run_s = seconds_since(t0);
    wafer.cores().check();
    wafer.cores().check_finished();
    const auto busy = static_cast<double>(wafer.cores().total(&wafersim::hw::CoreCounters::busy_cycles));
    state.counters["pes"] = static_cast<double>(w) * h;
    state.counters["run_s"] = run_s;
    state.counters["cycles"] = static_cast<double>(wafer.cores().finish_cycle());
    state.counters["active_pe_cycles_per_s"] = busy / run_s;
    state.counters["peak_rss_MB"] = peak_rss_mb();
  }
}
BENCHMARK(BM_Wafer)
    ->Args({64, 64})
    ->Args({256, 256})
    ->Args({757, 996})
    ->Args({762, 1172})
    ->ArgNames({"w", "h"})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// 64 busy PEs in the corner (64 iterations of 256 fp16 additions) and a stream of 4096 fp16
// from PE (0, 8) to PE (7, 8), seven hops east.
const char* kSmall = R"(
.pe 0..7, 0..7
.dsd a, mem, f16, base=0x000, len=256
.dsd b, mem, f16, base=0x208, len=256
.dsd c, mem, f16, base=0x410, len=256
.task main, 0
.entry main
main:
  mov r1, 64
loop:
  fadd.f16 c, a, b
  sub r1, r1, 1
  bne r1, 0, loop
  ret
.pe 0, 8
.dsd vx, mem, f16, base=0, len=4096
.dsd out, fabout, f16, color=1, len=4096
.task main, 0
.entry main
main:
  fmov.f16 out, vx
  ret
.pe 7, 8
.dsd vy, mem, f16, base=0, len=4096
.dsd in, fabin, f16, color=1, len=4096
.task main, 0
.entry main
main:
  fmov.f16 vy, in
  ret
)";

const char* kSmallRoutes = R"(routes:
  - {color: 1, at: [0, 8], from: ramp, to: east}
  - {color: 1, x: 1..6, y: 8, from: west, to: east}
  - {color: 1, at: [7, 8], from: west, to: ramp}
)";

void BM_SmallWorkload(benchmark::State& state) {
  if (!first_in_process(state)) return;
  const auto w = static_cast<unsigned>(state.range(0)), h = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    auto* loaded = new platforms::LoadedPlatform(platform(w, h));
    const auto& s = loaded->spec;
    auto* stats = new wafersim::sim::stats::Group("");
    platforms::BuildOptions o;
    o.routes = std::make_shared<wafersim::fabric::RouteTable>(wafersim::fabric::parse_routes(
        kSmallRoutes, "routes.yaml",
        wafersim::fabric::MeshGeometry(s.wafer.width, s.wafer.height, s.fabric.edge_io_channels), s.fabric.colors));
    auto& wafer = *new platforms::Wafer("wafer", s, o, *stats);
    for (const auto& p : wafersim::hw::isa::assemble(kSmall, "small.s")) wafer.cores().load(p);
    const auto t0 = cpu_seconds();
    sc_core::sc_start();
    const double run_s = seconds_since(t0);
    wafer.cores().check();
    wafer.cores().check_finished();
    const auto cycles = static_cast<double>(wafer.cores().finish_cycle());
    state.counters["cycles"] = cycles;
    state.counters["run_s"] = run_s;
    state.counters["ns_per_cycle"] = run_s / cycles * 1e9;
    state.counters["core_ticks"] = static_cast<double>(wafer.cores().core_ticks());
    state.counters["router_evaluations"] = static_cast<double>(wafer.mesh().router_evaluations());
    state.counters["peak_rss_MB"] = peak_rss_mb();
  }
}
BENCHMARK(BM_SmallWorkload)
    ->Args({64, 64})
    ->Args({750, 994})
    ->ArgNames({"w", "h"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

int sc_main(int argc, char* argv[]) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
