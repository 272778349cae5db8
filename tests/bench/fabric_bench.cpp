// Fabric benchmarks (run by scripts/bench, one benchmark per process so peak memory is its
// own): router-cycles per second under uniform random traffic; elaboration time, memory
// and the cost of an idle cycle of a whole-wafer (750 x 994) mesh.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <systemc>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "fabric/mesh.h"
#include "fabric/traffic/standalone.h"
#include "sim/parallel/row_bands.h"
#include "sim/parallel/team.h"

namespace wafersim::fabric {
namespace {

// The WSE-2 router (platforms/wse2.yaml): 24 colors, 8-deep queues, 1-cycle hops and ramps.
FabricConfig wse2_fabric() {
  FabricConfig c;
  c.colors = 24;
  c.queue_depth = 8;
  c.hop_latency = sim::Cycle(1);
  c.ramp_latency = sim::Cycle(1);
  c.edge_io_channels = 60;
  c.deadlock_timeout = sim::Cycle(10000);
  c.stats_detail = StatsDetail::Auto;
  return c;
}

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;
}

// Uniform random traffic, `wafersim traffic` defaults (1-wavelet packets on 4 colors),
// at rate/100 wavelets per node per cycle on a k x k mesh. One iteration = one cycle of
// the whole mesh, after a 1000-cycle warm-up.
void BM_UniformRandom(benchmark::State& state) {
  const auto k = static_cast<std::uint32_t>(state.range(0));
  const double rate = static_cast<double>(state.range(1)) / 100.0;
  traffic::TrafficOptions o;
  o.rate = rate;
  o.warmup = 0;
  o.measure = std::uint64_t{1} << 31;
  o.drain = 0;
  MeshOptions m;
  m.routing = Routing::XY;
  const FabricConfig f = wse2_fabric();
  traffic::StandaloneTraffic t(f, MeshGeometry(k, k, std::min<std::uint32_t>(60, k)), m, o);
  t.step(1000);
  const std::uint64_t forwarded0 = t.mesh().forwarded(), cycle0 = t.cycle();
  for (auto _ : state) t.step(1);
  const double cycles = static_cast<double>(t.cycle() - cycle0);
  state.counters["router_cycles_per_s"] =
      benchmark::Counter(static_cast<double>(k) * k, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["grants_per_cycle"] = static_cast<double>(t.mesh().forwarded() - forwarded0) / cycles;
  state.counters["peak_rss_MB"] = peak_rss_bytes() / 1e6;
}
BENCHMARK(BM_UniformRandom)
    ->ArgsProduct({{8, 32, 128}, {10, 30}})
    ->ArgNames({"k", "rate_pct"})
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(2.0);

// BM_UniformRandom with the mesh's rows swept in bands by `threads` host threads (1: the
// one-thread sweep). The ratio of the two rates at the same k is the speed-up; run both in
// the same minutes. Every count simulates the same 500 cycles after the same 1000: beyond
// saturation the source queues grow, so a cycle's cost depends on which cycles are timed.
void BM_UniformRandomThreads(benchmark::State& state) {
  const auto k = static_cast<std::uint32_t>(state.range(0));
  const auto threads = static_cast<unsigned>(state.range(2));
  traffic::TrafficOptions o;
  o.rate = static_cast<double>(state.range(1)) / 100.0;
  o.warmup = 0;
  o.measure = std::uint64_t{1} << 31;
  o.drain = 0;
  sim::parallel::Team team(threads, true);
  sim::parallel::RowBands bands(&team, k, Mesh::kBandRows, threads);
  MeshOptions m;
  m.routing = Routing::XY;
  m.bands = &bands;
  traffic::StandaloneTraffic t(wse2_fabric(), MeshGeometry(k, k, std::min<std::uint32_t>(60, k)), m, o);
  t.step(1000);
  const std::uint64_t forwarded0 = t.mesh().forwarded(), cycle0 = t.cycle();
  std::vector<sim::parallel::MemberTime> before = team.times();
  for (auto _ : state) t.step(1);
  const double cycles = static_cast<double>(t.cycle() - cycle0);
  state.counters["router_cycles_per_s"] =
      benchmark::Counter(static_cast<double>(k) * k, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["grants_per_cycle"] = static_cast<double>(t.mesh().forwarded() - forwarded0) / cycles;
  state.counters["bands"] = bands.count();
  double busy = 0, wait = 0;
  for (std::size_t i = 0; i < team.times().size(); ++i) {
    busy += static_cast<double>(team.times()[i].busy_ns - before[i].busy_ns);
    wait += static_cast<double>(team.times()[i].wait_ns - before[i].wait_ns);
  }
  // Per cycle, summed over the threads: sweeping bands, and waiting for the last band.
  state.counters["band_ns_per_cycle"] = busy / cycles;
  state.counters["barrier_ns_per_cycle"] = wait / cycles;
  // The calling thread's time in jobs (its bands and its wait for the others): the rest of
  // its wall time is the cycle's serial share (docs/performance.md, "Parallel engine").
  const auto& caller = team.times()[0];
  state.counters["caller_job_ns_per_cycle"] =
      static_cast<double>(caller.busy_ns - before[0].busy_ns + caller.wait_ns - before[0].wait_ns) / cycles;
  state.counters["jobs_per_cycle"] = static_cast<double>(team.jobs()) / static_cast<double>(t.cycle());
}
BENCHMARK(BM_UniformRandomThreads)
    ->ArgsProduct({{32, 128, 256}, {10}, {1, 2}})
    ->ArgNames({"k", "rate_pct", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(500);

// One fork-join job with empty parts, one per member: the synchronisation a parallel cycle
// pays per job on top of its work.
void BM_TeamJob(benchmark::State& state) {
  const auto threads = static_cast<unsigned>(state.range(0));
  sim::parallel::Team team(threads);
  const std::function<void(std::size_t)> nothing = [](std::size_t) {};
  for (auto _ : state) team.run(threads, nothing);
}
BENCHMARK(BM_TeamJob)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kNanosecond);

// Building the mesh of a whole wafer's usable rectangle (750 x 994 routers), idle.
void BM_IdleWaferElaboration(benchmark::State& state) {
  const FabricConfig f = wse2_fabric();
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    auto mesh = std::make_unique<Mesh>(f, MeshGeometry(750, 994, 60), MeshOptions{}, nullptr);
    bytes = mesh->allocated_bytes();
    benchmark::DoNotOptimize(mesh.get());
  }
  state.counters["mesh_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["peak_rss_MB"] = peak_rss_bytes() / 1e6;
}
BENCHMARK(BM_IdleWaferElaboration)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// One cycle of the idle 750 x 994 mesh when something ticks it (the engine does not: an
// idle mesh sleeps and costs nothing at all).
void BM_IdleWaferCycle(benchmark::State& state) {
  Mesh mesh(wse2_fabric(), MeshGeometry(750, 994, 60), MeshOptions{}, nullptr);
  std::uint64_t c = 0;
  for (auto _ : state) {
    const sim::Cycle now(c++);
    mesh.read(now);
    mesh.evaluate(now);
    benchmark::DoNotOptimize(mesh.write(now));
  }
  state.counters["router_cycles_per_s"] =
      benchmark::Counter(750.0 * 994, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_rss_MB"] = peak_rss_bytes() / 1e6;
}
BENCHMARK(BM_IdleWaferCycle)->Unit(benchmark::kNanosecond);

// The 750 x 994 mesh with one PE streaming packets of 8 wavelets corner to corner
// (1743 hops): the cost follows the few hundred busy routers, not the 745,500 idle ones.
void BM_WaferOneStream(benchmark::State& state) {
  traffic::TrafficOptions o;
  o.rate = 0;
  o.warmup = 0;
  o.measure = 1;
  o.drain = std::uint64_t{1} << 31;
  MeshOptions m;
  m.routing = Routing::XY;
  traffic::StandaloneTraffic t(wse2_fabric(), MeshGeometry(750, 994, 60), m, o);
  for (std::uint64_t i = 0; i < 200000; ++i) t.generator().add_packet({0, 0}, {749, 993}, 8, sim::Cycle(i * 8));
  t.step(3000);
  for (auto _ : state) t.step(1);
  state.counters["busy_routers"] = static_cast<double>(t.mesh().touched_routers());
  state.counters["router_cycles_per_s"] =
      benchmark::Counter(750.0 * 994, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_WaferOneStream)->Unit(benchmark::kNanosecond)->MinTime(1.0);

}  // namespace
}  // namespace wafersim::fabric

// SystemC provides main(); the benchmarks need no simulation kernel.
int sc_main(int argc, char* argv[]) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
