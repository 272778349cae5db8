// The co-simulated cluster (issue 32), one benchmark per process (scripts/bench runs each in
// its own; SystemC elaborates once per process):
//  * BM_CosimTrainingStep/threads:T: one training step of tiny-transformer on cs2-cluster-64
//    (four systems of 64 x 64 wafers, MemoryX and SwarmX), every wafer's mesh and PEs
//    co-simulated in timing-only mode, the wafers on T host threads. Counters: wall seconds of
//    the whole run (compile, elaboration, simulation), the step's simulated cycles, wafer-cycles
//    (wafers x cycles) per wall second, windows, the process's CPU seconds (all threads) and the
//    calling thread's, and the process's peak memory. On a machine shared with other work the
//    wall time includes waiting for a core; the CPU seconds do not.
//
//   bench_cosim --benchmark_filter='BM_CosimTrainingStep/threads:2'

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <ctime>

#include "models/model_spec.h"
#include "platforms/training/training_run.h"
#include "sim/errors.h"
#include "tests/bench/bench_support.h"

namespace {

using wafersim::bench::clock_seconds;
using wafersim::bench::cpu_seconds;
using wafersim::bench::first_in_process;
using wafersim::bench::peak_rss_mb;
using wafersim::bench::wall_seconds;

namespace training = wafersim::platforms::training;

void BM_CosimTrainingStep(benchmark::State& state) {
  if (!first_in_process(state)) return;
  const auto platform = wafersim::platforms::load_platform("cs2-cluster-64");
  const auto model = wafersim::models::load_model("tiny-transformer").spec;
  training::TrainingConfig cfg;
  cfg.cluster = training::ClusterMode::Cosim;
  cfg.threads = static_cast<unsigned>(state.range(0));
  for (auto _ : state) {
    wafersim::sim::stats::Group root("");
    const double process0 = clock_seconds(CLOCK_PROCESS_CPUTIME_ID), main0 = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    const auto t0 = std::chrono::steady_clock::now();
    const training::TrainingReport r = training::run_training(platform.spec, model, cfg, root);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cycles = std::ceil(r.total().seconds() * platform.spec.wafer.clock.hz);
    state.SetIterationTime(wall);
    state.counters["cpu_s"] = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - process0;
    state.counters["caller_cpu_s"] = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - main0;
    state.counters["wall_s"] = wall;
    state.counters["cycles"] = cycles;
    state.counters["wafer_cycles_per_s"] = cycles * r.wafers / wall;
    state.counters["windows"] = static_cast<double>(r.windows);
    state.counters["threads"] = r.threads;
  }
  state.counters["peak_mb"] = peak_rss_mb();
}
BENCHMARK(BM_CosimTrainingStep)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace

int sc_main(int argc, char* argv[]) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    benchmark::RunSpecifiedBenchmarks();
  } catch (const wafersim::sim::Error& e) {
    fmt::print(stderr, "bench_cosim: {}\n", e.what());
    return static_cast<int>(e.exit_code());
  }
  benchmark::Shutdown();
  return 0;
}
