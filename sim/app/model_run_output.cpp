#include "sim/app/model_run_output.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <memory>

#include "platforms/failure_spec.h"
#include "platforms/inference/decode_run.h"
#include "platforms/run_trace.h"
#include "platforms/runtime/model_run.h"
#include "sim/app/progress.h"
#include "sim/app/resident_report.h"
#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::app {
namespace {

using platforms::runtime::ModelRun;

struct RunView {
  const Workflow& w;
  const std::string& command;
  const platforms::LoadedPlatform& loaded;
  const models::compiler::CompiledModel& cm;
  const models::resident::ResidentPlan* plan;
  const models::resident::ResidentDecode* decode;
  const RunDir& dir;
  const platforms::RunTrace* tracing;
  [[nodiscard]] bool resident() const { return cm.options.placement == models::compiler::PlacementKind::Resident; }
  [[nodiscard]] const models::compiler::CompiledModel* prefill() const {
    return decode && decode->prefill ? &decode->prefill->cm : nullptr;
  }
  [[nodiscard]] double hz() const { return loaded.spec.wafer.clock.hz; }
};

nlohmann::ordered_json summary_json(const RunView& v, ModelRun& run) {
  const auto s = run.summary();
  const std::uint64_t end = run.end_cycle();
  nlohmann::ordered_json j;
  j["platform"] = v.loaded.spec.name;
  j["model"] = v.cm.model.name;
  j["cycles"] = end;
  j["timing_only"] = v.w.check.timing_only;
  j["sram_allocated_bytes"] = run.wafer().cores().sram_allocated_bytes();
  j["simulated_seconds"] = static_cast<double>(end) / v.hz();
  j["wall_seconds"] = run.wall_seconds();
  j["checked"] = s.compared;
  j["mismatches"] = s.failed;
  j["steps"] = run_json(v.cm, run.results());
  if (v.decode)
    j["inference"] = decode_run_json(*v.decode, run.results(), v.hz());
  else if (v.resident())
    j["inference"] = resident_run_json(v.cm, run.results(), v.plan, v.hz());
  j["out"] = v.dir.path().string();
  if (v.tracing) j["trace"] = v.tracing->dir().string();
  return j;
}

std::string workload_text(const RunView& v) {
  if (v.cm.options.training) return "one training step (forward and backward)";
  if (v.decode && v.prefill())
    return "inference: the prompt in one parallel prefill (its keys and values copied into the KV caches), then "
           "decode steps";
  if (v.decode) return "inference: the prompt token by token (filling the KV caches), then decode steps";
  return v.resident() ? "inference: prefill of the prompt" : "inference (forward)";
}

void print_decode_checks(const RunView& v, const ModelRun& run) {
  std::uint64_t n = 0, filled = 0;  // elements checked by attention steps, by the fills
  for (const auto& [name, c] : run.extra_checks())
    (name.find(".kv_fill") != std::string::npos ? filled : n) += c.compared;
  std::cout << fmt::format(
      "  attention     {} steps, {} elements (outputs and the new KV cache entries) checked against "
      "models/reference attention over the cached keys{}\n",
      v.decode->attention.size(), n,
      v.decode->fills.empty() ? ""
                              : fmt::format("; {} cache fill{}, {} elements, against the prefill's keys and values",
                                            v.decode->fills.size(), v.decode->fills.size() == 1 ? "" : "s", filled));
}

void print_summary(const RunView& v, ModelRun& run) {
  const auto s = run.summary();
  const std::uint64_t end = run.end_cycle();
  const auto& spec = v.loaded.spec;
  std::cout << fmt::format("wafersim {}: {} on {} ({} x {} PEs at {}), {}, {}\n", v.command, v.cm.model.name, spec.name,
                           spec.wafer.width, spec.wafer.height, units::format(spec.wafer.clock),
                           v.resident() ? "weights resident in SRAM" : "weight streaming", workload_text(v));
  std::cout << fmt::format("  layout        {}\n", v.prefill() ? v.prefill()->layout_reason : v.cm.layout_reason);
  print_run(std::cout, v.cm, run.results());
  std::cout << fmt::format("  cycles        {} ({} simulated), wall time {:.3f} s\n", end,
                           units::pretty(static_cast<double>(end) / v.hz(), "s"), run.wall_seconds());
  const bool check = !v.w.check.no_check && !v.w.check.timing_only;
  if (v.decode) {
    print_decode_run(std::cout, *v.decode, run.results(), v.hz());
    if (check) print_decode_checks(v, run);
  } else if (v.resident()) {
    print_resident_run(std::cout, v.cm, run.results(), v.plan, v.hz());
  }
  for (const auto& r : run.results())
    for (const auto& c : r.checks)
      if (c.value)
        std::cout << fmt::format("  loss          {} (layer '{}': the wafer's sums, the host's log)\n", *c.value,
                                 r.layer);
  for (const auto& f : run.wafer().mesh().outage_records())
    std::cout << fmt::format("  failure       {} at cycle {}: {}\n", f.part, f.cycle, f.outcome);
  std::cout << fmt::format("  checks        {}\n",
                           v.w.check.timing_only ? std::string("off (--timing-only: no values computed)")
                           : v.w.check.no_check  ? std::string("off (--no-check)")
                           : s.failed            ? fmt::format("{} of {} result elements differ", s.failed, s.compared)
                                                 : fmt::format("all {} result elements as expected", s.compared));
  std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json, model.json)\n",
                           v.dir.path().string());
  if (v.tracing)
    std::cout << fmt::format("  trace         {}/ ('wafersim report {}' makes an HTML page of it)\n",
                             v.tracing->dir().string(), v.dir.path().string());
}

}  // namespace

void refuse_sparse_model(const models::ModelSpec& model, const std::string& command) {
  if (!model.sparsity.any()) return;
  throw sim::InputError(fmt::format(
      "model '{}': sparsity: {} sparse layer(s), but 'wafersim {}' runs dense layer programs and cannot apply it; "
      "train the model with 'wafersim train' (MemoryX streams only the kept weights) or remove its sparsity: section",
      model.name, model.sparsity.layers.size(), command));
}

void run_compiled_model(const Workflow& w, const std::string& command, const platforms::LoadedPlatform& loaded,
                        const models::compiler::CompiledModel& cm, platforms::runtime::HostData data,
                        const models::resident::ResidentPlan* plan, const models::resident::ResidentDecode* decode,
                        platforms::runtime::HostData prefill_data) {
  refuse_sparse_model(cm.model, command);
  platforms::BuildOptions build = w.sim.build_options();
  build.failures = platforms::parse_failures(w.fails);
  RunDir dir = w.sim.run_dir(command);
  // Traces: windows start at one cycle and double (the length is known only afterwards);
  // each layer step becomes a phase on the timeline.
  sim::trace::TraceOptions trace_options = w.trace.options();
  if (trace_options.any() && trace_options.window_cycles == 0) {
    trace_options.window_cycles = 1;
    if (!w.trace.max_windows_given()) trace_options.max_windows = 200;
  }
  std::unique_ptr<platforms::RunTrace> tracing;
  if (trace_options.any()) {
    tracing = std::make_unique<platforms::RunTrace>(trace_options, dir.path(), loaded.spec, 0);
    tracing->configure(build);
  }
  sim::stats::Group root("");
  platforms::runtime::ModelRunOptions options;
  options.check = !w.check.no_check;
  options.timing_only = w.check.timing_only;
  options.limits = w.sim.limits();
  platforms::runtime::ModelRunHooks hooks;
  if (decode && options.check && !options.timing_only) hooks = platforms::inference::decode_hooks(*decode);
  const models::compiler::CompiledModel* prefill = decode && decode->prefill ? &decode->prefill->cm : nullptr;
  ModelRun run(loaded.spec, build, root, cm, std::move(data), options, tracing.get(), std::move(hooks), prefill,
               std::move(prefill_data));
  if (cm.options.placement == models::compiler::PlacementKind::Resident)
    add_inference_stats(run.wafer().stats(), cm, decode);
  Progress progress("run", 0, "cycles", Progress::terminal() && !w.sim.json);
  auto write = [&](const std::string& status) {
    // A limit may stop the run in simulated time the engine did not tick (an input load).
    const sim::Engine& engine = run.wafer().engine();
    const sim::Cycle cycles = status == "limit"
                                  ? std::max(engine.cycles(), engine.first_cycle_at_or_after(sc_core::sc_time_stamp()))
                                  : engine.cycles();
    write_run_files(dir, loaded, root, invocation_text(), run.wall_seconds(), cycles, status);
    nlohmann::ordered_json j = mapping_json(cm, loaded.spec.name);
    j["results"] = run_json(cm, run.results());
    dir.write("model.json", j.dump(2) + "\n");
    run.finish_trace();
  };
  try {
    run.run(progress);
  } catch (const sim::LimitReached&) {
    write("limit");
    throw;
  } catch (const sim::SimulationError&) {
    write("error");
    throw;
  }
  const auto s = run.summary();
  write(s.failed ? "error" : "ok");
  const RunView view{w, command, loaded, cm, plan, decode, dir, tracing.get()};
  if (w.sim.json)
    std::cout << summary_json(view, run).dump(2) << "\n";
  else
    print_summary(view, run);
  if (s.failed)
    throw sim::SimulationError(fmt::format("{} of {} result elements differ from the host's expectation; first: {}",
                                           s.failed, s.compared, s.first));
}

}  // namespace wafersim::app
