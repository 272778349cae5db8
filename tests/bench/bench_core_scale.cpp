// Scale of the PE core array: a whole WSE-2 wafer (757 x 996 PEs) elaborated with its cores
// and host socket, its memory and the cost of an idle cycle; the memory of loaded cores; the
// simulation rate of busy cores.
//
//   bench_core_scale [benchmark flags]      (BM_WholeWafer runs once per process: SystemC elaborates once)

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <systemc>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "hw/isa/assembler.h"
#include "platforms/platform_spec.h"
#include "platforms/wafer.h"
#include "tests/support/manual_engine.h"

namespace {

using wafersim::hw::PeCoord;

// Resident set size of this process, in bytes (Linux).
double rss_bytes() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * 4096.0;
}

// A busy loop on every loaded PE: 64 fp16 fadds over 256 elements.
const char* kBusy = R"(
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
)";

// A whole WSE-2 wafer, elaborated once (SystemC elaborates once per process): elaboration
// time and memory, the memory of a loaded core, the cost of idle cycles.
void BM_WholeWafer(benchmark::State& state) {
  static bool elaborated = false;
  if (elaborated) {
    state.SkipWithError("SystemC elaborates once per process: run BM_WholeWafer once");
    for (auto _ : state) {
    }
    return;
  }
  elaborated = true;
  double elaborate_s = 0, idle_bytes = 0, per_core = 0, idle_run_s = 0;
  std::uint64_t pes = 0;
  for (auto _ : state) {
    const double before = rss_bytes();
    auto t0 = std::chrono::steady_clock::now();
    // Kept until the process ends (SystemC modules are not destroyed after simulation).
    auto* platform = new wafersim::platforms::LoadedPlatform(wafersim::platforms::load_platform("wse2"));
    auto* stats = new wafersim::sim::stats::Group("");
    auto& wafer = *new wafersim::platforms::Wafer("wafer", platform->spec, {}, *stats);
    elaborate_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    idle_bytes = rss_bytes() - before;
    pes = platform->spec.wafer.pe_count();
    // A small program on 10,000 PEs (no data): memory per loaded core.
    auto placements = wafersim::hw::isa::assemble(".pe 0..99, 0..99\n.task main, 0\nmain:\n  ret\n", "idle.s");
    const double before_load = rss_bytes();
    for (const auto& p : placements) wafer.cores().load(p);
    per_core = (rss_bytes() - before_load) / 10000.0;
    // A million cycles with nothing to do: the engine skips them.
    auto t1 = std::chrono::steady_clock::now();
    sc_core::sc_start(wafer.engine().time_of(wafersim::sim::Cycle(1'000'000)));
    idle_run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  }
  state.counters["pes"] = static_cast<double>(pes);
  state.counters["elaboration_s"] = elaborate_s;
  state.counters["bytes_per_pe"] = idle_bytes / static_cast<double>(pes);
  state.counters["loaded_core_bytes"] = per_core;
  state.counters["core_object_bytes"] =
      static_cast<double>(sizeof(wafersim::hw::Core) + sizeof(wafersim::hw::VectorOp));
  state.counters["idle_Mcycles_s"] = idle_run_s;
}
BENCHMARK(BM_WholeWafer)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_BusyCores(benchmark::State& state) {
  const auto side = static_cast<unsigned>(state.range(0));
  std::uint64_t ticks = 0;
  for (auto _ : state) {
    auto spec = wafersim::platforms::load_platform(
                    "tiny", {fmt::format("wafer.width={}", side), fmt::format("wafer.height={}", side),
                             fmt::format("fabric.edge_io_channels={}", std::min(side, 60u))})
                    .spec;
    wafersim::hw::CoreArray cores("cores", spec.wafer, {spec.fabric.colors, true});
    for (auto p : wafersim::hw::isa::assemble(kBusy, "busy.s")) {
      p.x1 = static_cast<std::uint16_t>(side - 1);
      p.y1 = static_cast<std::uint16_t>(side - 1);
      cores.load(p);
    }
    wafersim::test::ManualEngine e;
    e.add(&cores);
    e.run([&] { return cores.next_wake().is_never(); });
    ticks = cores.core_ticks();
  }
  state.counters["core_cycles_per_s"] =
      benchmark::Counter(static_cast<double>(ticks), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_BusyCores)->Arg(8)->Arg(32)->Unit(benchmark::kMillisecond);

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
