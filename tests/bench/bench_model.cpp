// Compiled models on a simulated wafer (issue 9), one benchmark per process (scripts/bench runs
// each in its own; SystemC elaborates once per process):
//  * BM_CompiledGemm/tokens:T/features:F/side:S/timing_only:B/threads:N: one linear layer
//    Y = X W (T tokens, F -> F features, fp16, accumulating in fp16, inference) compiled by
//    models/compiler for an S x S grid of `tiny` PEs and run by platforms/runtime as `wafersim
//    run --model` does, the wafer's rows in bands on N host threads. Counters: active
//    PE-cycles (the cores' busy cycles) and core ticks per CPU second of the simulation alone
//    (loading, compiling and checking excluded), and active PE-cycles per wall second (what
//    threads speed up: the CPU time adds up every thread's). The functional run checks every
//    output bit for bit against the host.
//  * BM_Gpt3XlLayer/sequence:S: examples/models/gpt3-xl-layer.yaml forward over S tokens on a
//    whole WSE-2 (757 x 996) in timing-only mode. Every step the compiler emits PE code for is
//    simulated, the others are planned analytically (CompileOptions::plan_missing_code); the
//    label names both. The products stream the same weights whatever S (S = 4 and 8: about
//    1.25 M cycles), and the CPU time grows with the PEs each weight reaches (900 rows x S
//    columns up to S = 512): S = 4 takes about 40 minutes, 8 about 80, 32 hours, 2048 days
//    (docs/performance.md), so a bare scripts/bench leaves them all out.
//
//   bench_model --benchmark_filter='BM_CompiledGemm/tokens:256/'
//
// Under callgrind only the simulation is counted (instrumentation is on around sc_start):
//   valgrind --tool=callgrind --instr-atstart=no build/bench_model
//     --benchmark_filter='BM_CompiledGemm/tokens:256/features:128/side:8/timing_only:0'
// (one command line)

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <systemc>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>

#include "models/compiler/compiler.h"
#include "platforms/cluster.h"
#include "platforms/runtime/executor.h"
#include "sim/errors.h"
#include "tests/bench/bench_support.h"

namespace {

using wafersim::bench::clock_seconds;
using wafersim::bench::cpu_seconds;
using wafersim::bench::first_in_process;
using wafersim::bench::peak_rss_mb;
using wafersim::bench::wall_seconds;

namespace platforms = wafersim::platforms;
namespace compiler = wafersim::models::compiler;
namespace runtime = wafersim::platforms::runtime;

// A compiled model on wafer 0 of a platform, run step by step.
struct CompiledRun {
  double compile_s = 0, elaborate_s = 0, load_s = 0, simulate_s = 0;  // CPU seconds
  double simulate_wall_s = 0;
  // With threads: team jobs (both phases), the cycles whose cores were ticked in bands, and
  // the members' time in parts and at the barrier, summed (seconds).
  std::uint64_t jobs = 0, core_jobs = 0;
  double parts_s = 0, barrier_s = 0;
  std::uint64_t cycles = 0, busy_cycles = 0, core_ticks = 0, router_visits = 0, checked = 0, mismatches = 0;
  std::uint64_t planned_bound_cycles = 0;  // steps without code: their analytical bound
  std::string simulated, planned;          // step names

  CompiledRun(const platforms::LoadedPlatform& platform, const wafersim::models::ModelSpec& model,
              const compiler::CompileOptions& options, bool timing_only, unsigned threads = 1) {
    double t = cpu_seconds();
    const compiler::Target target{platform.spec.wafer, platform.spec.fabric};
    const compiler::CompiledModel cm = compiler::compile(model, target, options);
    compile_s = cpu_seconds() - t;
    t = cpu_seconds();
    platforms::BuildOptions build;
    build.routes = cm.routes;
    build.timing_only = timing_only;
    build.threads = threads;
    wafersim::sim::stats::Group root("");
    platforms::Cluster cluster("cluster", platform.spec, build, root);
    auto& wafer = cluster.wafer(0);
    runtime::Executor exec(cm, wafer, runtime::make_host_data(cm, 1), {!timing_only});
    wafer.cores().set_run_ahead(wafersim::sim::Cycle::never());  // as `run --model` and `infer` do
    elaborate_s = cpu_seconds() - t;
    t = cpu_seconds();
    sc_core::sc_start(exec.load_inputs());
    load_s = cpu_seconds() - t;
    for (std::size_t i = 0; i < exec.steps(); ++i) {
      exec.start(i);
      if (exec.has_code(i)) {
        t = cpu_seconds();
        const double w = wall_seconds();
        CALLGRIND_START_INSTRUMENTATION;
        sc_core::sc_start();
        CALLGRIND_STOP_INSTRUMENTATION;
        simulate_s += cpu_seconds() - t;
        simulate_wall_s += wall_seconds() - w;
        if (wafer.engine().failed()) wafer.engine().rethrow_failure();
      }
      const runtime::StepResult& r = exec.finish(i);
      std::string& names = r.simulated ? simulated : planned;
      names += (names.empty() ? "" : ",") + r.name();
      if (!r.simulated) planned_bound_cycles += r.bound.cycles;
      for (const auto& c : r.checks) {
        checked += c.compared;
        mismatches += c.mismatches;
      }
      cycles = r.end;
    }
    busy_cycles = wafer.cores().total(&wafersim::hw::CoreCounters::busy_cycles);
    core_ticks = wafer.cores().core_ticks();
    router_visits = wafer.mesh().router_evaluations();
    core_jobs = wafer.cores().band_jobs();
    if (const auto* team = wafer.team()) {
      jobs = team->jobs();
      for (const auto& m : team->times()) {
        parts_s += static_cast<double>(m.busy_ns) * 1e-9;
        barrier_s += static_cast<double>(m.wait_ns) * 1e-9;
      }
    }
  }
};

void BM_CompiledGemm(benchmark::State& state) {
  if (!first_in_process(state)) return;
  const auto tokens = state.range(0), features = state.range(1), side = state.range(2);
  const bool timing_only = state.range(3) != 0;
  const auto threads = static_cast<unsigned>(state.range(4));
  const auto platform =
      platforms::load_platform("tiny", {fmt::format("wafer.width={}", side), fmt::format("wafer.height={}", side),
                                        fmt::format("fabric.edge_io_channels={}", side)});
  const auto model = wafersim::models::load_model_text(fmt::format(R"(
name: gemm
dtype: fp16
batch: 1
sequence: {}
inputs: [{{name: x, kind: activations, features: {}}}]
layers:
  - {{name: fc, kind: linear, inputs: [x], features: {}}}
)",
                                                                   tokens, features, features),
                                                       "gemm.yaml");
  compiler::CompileOptions o;
  o.training = false;
  o.accumulate = compiler::Accumulate::Native;
  std::unique_ptr<CompiledRun> run;
  for (auto _ : state) run = std::make_unique<CompiledRun>(platform, model.spec, o, timing_only, threads);
  if (run->mismatches)
    state.SkipWithError(fmt::format("{} of {} outputs differ from the host", run->mismatches, run->checked).c_str());
  state.counters["cycles"] = static_cast<double>(run->cycles);
  state.counters["active_pe_cycles"] = static_cast<double>(run->busy_cycles);
  state.counters["checked"] = static_cast<double>(run->checked);
  state.counters["sim_cpu_s"] = run->simulate_s;
  state.counters["sim_active_pe_cycles_per_s"] = static_cast<double>(run->busy_cycles) / run->simulate_s;
  state.counters["sim_core_ticks_per_s"] = static_cast<double>(run->core_ticks) / run->simulate_s;
  state.counters["core_ticks"] = static_cast<double>(run->core_ticks);
  state.counters["router_visits"] = static_cast<double>(run->router_visits);
  state.counters["sim_wall_s"] = run->simulate_wall_s;
  state.counters["sim_active_pe_cycles_per_wall_s"] = static_cast<double>(run->busy_cycles) / run->simulate_wall_s;
  if (threads > 1) {
    state.counters["team_jobs"] = static_cast<double>(run->jobs);
    state.counters["core_band_jobs"] = static_cast<double>(run->core_jobs);
    state.counters["parts_s"] = run->parts_s;
    state.counters["barrier_s"] = run->barrier_s;
  }
  state.counters["peak_rss_MB"] = peak_rss_mb();
}
BENCHMARK(BM_CompiledGemm)
    ->ArgNames({"tokens", "features", "side", "timing_only", "threads"})
    ->Args({256, 128, 8, 0, 1})
    ->Args({256, 128, 8, 1, 1})
    ->Args({1024, 256, 16, 0, 1})
    ->Args({1024, 256, 16, 1, 1})
    ->Args({1024, 256, 16, 0, 2})
    ->Args({1024, 256, 16, 1, 2})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

void BM_Gpt3XlLayer(benchmark::State& state) {
  if (!first_in_process(state)) return;
  const auto platform = platforms::load_platform("wse2", {});
  const auto model = wafersim::models::load_model(WAFERSIM_SOURCE_DIR "/examples/models/gpt3-xl-layer.yaml",
                                                  {fmt::format("sequence={}", state.range(0))});
  compiler::CompileOptions o;
  o.training = false;
  o.plan_missing_code = true;
  std::unique_ptr<CompiledRun> run;
  for (auto _ : state) run = std::make_unique<CompiledRun>(platform, model.spec, o, true);
  state.counters["compile_cpu_s"] = run->compile_s;
  state.counters["elaborate_cpu_s"] = run->elaborate_s;
  state.counters["load_inputs_cpu_s"] = run->load_s;
  state.counters["sim_cpu_s"] = run->simulate_s;
  state.counters["cycles"] = static_cast<double>(run->cycles);
  state.counters["planned_bound_cycles"] = static_cast<double>(run->planned_bound_cycles);
  state.counters["active_pe_cycles"] = static_cast<double>(run->busy_cycles);
  state.counters["sim_active_pe_cycles_per_s"] =
      run->simulate_s > 0 ? static_cast<double>(run->busy_cycles) / run->simulate_s : 0;
  state.counters["peak_rss_MB"] = peak_rss_mb();
  state.SetLabel("simulated: " + run->simulated + "; planned: " + run->planned);
}
BENCHMARK(BM_Gpt3XlLayer)
    ->ArgName("sequence")
    ->Arg(4)
    ->Arg(8)
    ->Arg(32)
    ->Arg(2048)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace

int sc_main(int argc, char* argv[]) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    benchmark::RunSpecifiedBenchmarks();
  } catch (const wafersim::sim::Error& e) {
    fmt::print(stderr, "bench_model: {}\n", e.what());
    return 3;
  }
  benchmark::Shutdown();
  return 0;
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
