#include "platforms/runtime/model_run.h"

#include <fmt/format.h>

#include <chrono>
#include <systemc>

#include "sim/errors.h"

namespace wafersim::platforms::runtime {

ModelRun::ModelRun(const PlatformSpec& spec, BuildOptions build, sim::stats::Group& root,
                   const models::compiler::CompiledModel& cm, HostData data, ModelRunOptions options, RunTrace* tracing,
                   ModelRunHooks hooks, const models::compiler::CompiledModel* first, HostData first_data)
    : cm_(cm), data_(std::move(data)), options_(options), tracing_(tracing), hooks_(std::move(hooks)), first_(first) {
  build.routes = cm.routes;
  run_ahead_ = build.run_ahead;
  build.timing_only = options_.timing_only;
  if (options_.timing_only) options_.check = false;
  cluster_ = std::make_unique<Cluster>("cluster", spec, build, root);
  if (tracing_) tracing_->attach(wafer(), 0);
  auto& model = wafer().stats().group("model");
  if (first_) {
    exec_ = std::make_unique<Executor>(*first_, wafer(), std::move(first_data), ExecOptions{options_.check});
    exec_->add_stats(model.group("prefill"));
  } else {
    exec_ = std::make_unique<Executor>(cm_, wafer(), std::move(data_), ExecOptions{options_.check});
    exec_->add_stats(model);
  }
}

void ModelRun::run_steps(sim::ProgressSink& progress, bool second) {
  std::vector<const sim::Engine*> engines;
  for (std::size_t i = 0; i < cluster_->wafer_count(); ++i) engines.push_back(&cluster_->wafer(i).engine());
  sim::RunLimits limits = options_.limits;
  limits.stop_at_last_event = true;
  // Each step runs to its end or to the cycle limit, and a trace reads the cores as they go:
  // the main threads run ahead up to the limit unless traced.
  if (run_ahead_ && !tracing_) wafer().cores().set_run_ahead(limits.max_cycles);
  for (std::size_t i = 0; i < exec_->steps(); ++i) {
    exec_->start(i);
    if (exec_->has_code(i)) {
      // A limit ends the step inside run_simulation: its time so far still counts.
      const auto t0 = std::chrono::steady_clock::now();
      try {
        wall_ += sim::run_simulation(wafer().engine(), engines, sim::Cycle::never(), limits, progress).wall_seconds;
      } catch (const sim::LimitReached&) {
        wall_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        throw;
      }
    }
    exec_->finish(i);
    if (second && hooks_.after_step)
      for (auto& c : hooks_.after_step(*exec_, i)) extra_.emplace_back(exec_->results().back().name(), std::move(c));
  }
}

void ModelRun::run(sim::ProgressSink& progress) {
  const sc_core::sc_time load = exec_->load_inputs();
  if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
  advance_load(wafer().engine(), load, options_.limits.max_cycles);
  if (first_) {
    // The first model, then what the second checks against and its inputs through the host
    // socket.
    run_steps(progress, false);
    if (hooks_.after_first) hooks_.after_first(*exec_);
    exec_->continue_with(cm_, std::move(data_));
    exec_->add_stats(wafer().stats().group("model"));
    advance_load(wafer().engine(), exec_->load_inputs(), options_.limits.max_cycles);
  }
  run_steps(progress, true);
}

void ModelRun::finish_trace() {
  if (!tracing_) return;
  for (const auto& r : results())
    tracing_->phase(0, r.name(), sim::Cycle(r.start), sim::Cycle(r.end),
                    {sim::trace::Arg::num("bound_cycles", static_cast<double>(r.bound.cycles)),
                     sim::trace::Arg::num("flops", static_cast<double>(r.executed_flops))});
  tracing_->finish(wafer().engine().cycles());
}

CheckSummary ModelRun::summary() const {
  CheckSummary s;
  auto add = [&](const std::string& name, const Check& c) {
    s.compared += c.compared;
    if (c.passed()) return;
    s.failed += c.mismatches;
    if (s.first.empty()) s.first = fmt::format("{}: {}: {}", name, c.what, c.first_mismatch);
  };
  for (const auto& r : results())
    for (const auto& c : r.checks) add(r.name(), c);
  for (const auto& [name, c] : extra_) add(name, c);
  return s;
}

}  // namespace wafersim::platforms::runtime
