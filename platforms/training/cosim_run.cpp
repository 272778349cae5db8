#include <fmt/format.h>

#include <memory>

#include "models/compiler/compiler.h"
#include "models/reference/task.h"
#include "platforms/training/cosim_ranks.h"
#include "platforms/training/cosim_wafer.h"
#include "platforms/training/training_run.h"
#include "sim/errors.h"
#include "sim/parallel/team.h"
#include "sim/parallel/thread_policy.h"
#include "sim/parallel/transport.h"

namespace wafersim::platforms::training {

namespace {

platforms::ClusterParts cluster_parts(const TrainingConfig& config, const models::compiler::CompiledModel& cm,
                                      const ClusterModel& layers, const memoryx::OptimizerConfig& optimizer) {
  platforms::ClusterParts parts;
  parts.layers = layers.memoryx_layers();
  parts.optimizer = optimizer;
  parts.functional = config.functional;
  parts.seed = config.seed;
  parts.build.seed = config.seed;
  parts.build.max_memory = config.max_memory;
  parts.build.routes = cm.routes;
  parts.build.timing_only = !config.functional;
  if (config.max_cycles) parts.build.max_cycles = sim::Cycle(config.max_cycles);
  parts.window = config.window;
  parts.build.failures = config.wafer_failures;
  parts.transport = config.transport;
  return parts;
}

// Every wafer's programs as trace phases, step by step.
void trace_phases(platforms::RunTrace& trace, const models::compiler::CompiledModel& cm,
                  const std::vector<std::shared_ptr<CosimWafer>>& wafers) {
  for (std::uint32_t e = 0; e < wafers.size(); ++e)
    for (std::size_t s = 0; s < wafers[e]->programs().size(); ++s)
      for (std::size_t i = 0; i < cm.programs.size(); ++i) {
        const auto& p = wafers[e]->programs()[s][i];
        trace.phase(e, fmt::format("step {} {}", s, cm.programs[i].name()), sim::Cycle(p.first_in), sim::Cycle(p.end),
                    {sim::trace::Arg::num("step", static_cast<double>(s)),
                     sim::trace::Arg::num("waited_cycles", static_cast<double>(p.first_in - p.start))});
      }
}

}  // namespace

TrainingReport run_cosim(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                         const TrainingConfig& config, sim::stats::Group& stats) {
  if (config.timing != TimingSource::Simulated)
    throw sim::InputError(
        "a co-simulated cluster runs the compiled programs on every wafer: '--timing bound' needs "
        "'--cluster-model replay'");
  if (config.functional && config.arithmetic == WaferArithmetic::Host && config.explicit_arithmetic)
    throw sim::InputError(
        "a co-simulated cluster computes the gradients on the wafers (the programs' arithmetic): "
        "'--wafer-arithmetic host' needs '--cluster-model replay'");
  TrainingReport r;
  r.mode = ClusterMode::Cosim;
  r.model = model.name;
  r.platform = spec.name;
  r.wafers = spec.cluster.systems;
  r.batch_per_wafer = model.batch;
  r.arithmetic = WaferArithmetic::Programs;
  models::compiler::CompileOptions options = config.compile;
  options.training = true;
  options.emit = true;
  auto cm = std::make_shared<const models::compiler::CompiledModel>([&] {
    try {
      return models::compiler::compile(model, models::compiler::Target{spec.wafer, spec.fabric}, options);
    } catch (const sim::InputError& e) {
      throw sim::InputError(std::string(e.what()) +
                            "; '--cluster-model replay --timing bound' takes such layers' time from the compiler's "
                            "analytic bound");
    }
  }());
  auto ref = std::make_shared<const models::reference::Model>(model);
  // The layers' structure; their times come from the run.
  auto layers = std::make_shared<ClusterModel>(cluster_model(*ref, bound_programs(spec, *cm), false));
  for (const auto& l : layers->layers)
    if (l.kept)
      throw sim::InputError(fmt::format(
          "sparse layer '{}': the compiled programs are dense; a sparse model trains with '--cluster-model replay'",
          l.name));
  r.optimizer = config.optimizer;
  r.optimizer.gradient_scale = 1.0F / static_cast<float>(r.wafers);
  r.optimizer.validate();

  platforms::ClusterParts parts = cluster_parts(config, *cm, *layers, r.optimizer);
  r.ranks = config.transport ? config.transport->ranks() : 1;
  r.rank = config.transport ? config.transport->rank() : 0;
  if (r.ranks > r.wafers)
    throw sim::InputError(fmt::format("{} MPI ranks for {} wafers: at most one rank per wafer", r.ranks, r.wafers));
  parts.threads =
      sim::parallel::resolve_wafer_threads(config.threads, sim::parallel::rank_items(r.wafers, r.ranks, r.rank).size(),
                                           sim::parallel::Team::hardware_threads());
  if (config.trace && r.ranks > 1)
    throw sim::InputError("--trace records a co-simulation in one process, not over MPI ranks");
  if (config.trace) {
    config.trace->configure(parts.build);
    parts.threads = 1;
  }
  r.cluster = std::make_shared<platforms::Cluster>("cluster", spec, std::move(parts), stats);
  auto& cluster = *r.cluster;
  if (config.trace) {
    for (std::uint32_t e = 0; e < r.wafers; ++e) config.trace->attach(cluster.wafer(e), e);
    config.trace->attach(cluster);
  }
  std::shared_ptr<const models::reference::SyntheticTask> task;
  if (config.functional)
    task = std::make_shared<const models::reference::SyntheticTask>(model, ref->format(), config.seed);
  // This rank's wafers (every wafer in one process).
  std::vector<std::shared_ptr<CosimWafer>> wafers(r.wafers);
  for (std::size_t e = cluster.local_wafers().begin; e < cluster.local_wafers().end; ++e) {
    CosimPlan plan;
    plan.steps = config.steps;
    plan.wafer = static_cast<std::uint32_t>(e);
    plan.wafers = r.wafers;
    plan.functional = config.functional;
    plan.seed = config.seed;
    plan.task = task.get();
    plan.first_step = config.first_step;
    wafers[e] = std::make_shared<CosimWafer>(*cm, cluster.wafer(e), cluster.wafer_edge(e), *layers, plan);
    cluster.set_driver(e, wafers[e].get());
  }
  std::vector<WaferOutcome> outcomes(r.wafers);
  auto outcome = [&](std::size_t e) {
    return WaferOutcome{wafers[e]->finished(), wafers[e]->losses(), wafers[e]->checked()};
  };
  if (r.rank > 0) {
    cluster.serve();
    std::vector<WaferOutcome> local;
    for (std::size_t e = cluster.local_wafers().begin; e < cluster.local_wafers().end; ++e) local.push_back(outcome(e));
    send_outcomes(cluster, local, stats);
    r.keep = {cm, ref, layers, task};
    for (auto& w : wafers)
      if (w) r.keep.push_back(w);
    return r;
  }
  if (config.functional) {
    r.initial = ref->initial_parameters(config.seed);
    for (std::uint32_t l = 0; l < layers->layers.size(); ++l)
      cluster.memoryx().set_weights(l, layers->flatten(l, r.initial));
    start_from(config, *layers, cluster.memoryx(), r.initial);
  }
  try {
    r.timeline = platforms::run_training_steps(cluster, config.steps, config.limits);
  } catch (...) {
    cluster.end_ranks();
    throw;
  }
  cluster.end_ranks();
  for (std::size_t e = cluster.local_wafers().begin; e < cluster.local_wafers().end; ++e) outcomes[e] = outcome(e);
  number_steps(r.timeline, config.first_step);
  r.rank_use = gather_outcomes(cluster, outcomes, stats);
  if (!config.segment) add_training_stats(stats.group("training"), r, config.steps);
  for (std::uint32_t e = 0; e < r.wafers; ++e)
    if (!outcomes[e].finished)
      throw sim::SimulationError(fmt::format("wafer {} did not finish its programs:\n{}", e, cluster.describe_state()));
  if (config.trace) {
    config.trace->record_steps(cluster, r.timeline);
    trace_phases(*config.trace, *cm, wafers);
  }

  // Wafer 0's first step as the wafer's times (each program from its first wavelet in); each
  // layer's compute from them.
  r.wafer.source = TimingSource::Simulated;
  r.wafer.clock_hz = spec.wafer.clock.hz;
  for (std::size_t i = 0; i < cm->programs.size(); ++i)
    r.wafer.programs.push_back(
        ProgramTime{cm->programs[i].layer, cm->programs[i].phase, wafers[0]->programs()[0][i].computing(), 0});
  const ClusterModel timed = cluster_model(*ref, r.wafer, false);
  for (std::size_t l = 0; l < layers->layers.size(); ++l) {
    layers->layers[l].forward = timed.layers[l].forward;
    layers->layers[l].backward = timed.layers[l].backward;
  }
  layers->loss = timed.loss;
  r.layers = *layers;
  for (const auto& step : wafers[0]->programs()) {
    auto& row = r.program_cycles.emplace_back();
    auto& wait = r.program_waits.emplace_back();
    for (const auto& p : step) {
      row.push_back(p.computing());
      wait.push_back(p.first_in - p.start);
    }
  }
  if (config.functional) {
    for (std::uint32_t s = 0; s < config.steps; ++s) {
      double sum = 0;
      for (const auto& o : outcomes) sum += o.losses.at(s);
      r.losses.push_back(sum / r.wafers);
    }
    for (const auto& o : outcomes) r.checked += o.checked;
    for (std::uint32_t l = 0; l < r.layers.layers.size(); ++l)
      r.layers.unflatten(l, cluster.memoryx().weights(l), r.final_parameters);
    r.state = std::make_shared<const TrainingState>(capture_state(cluster.memoryx()));
  }
  r.uncomputed_gradients = wafers[0]->uncomputed_gradients();
  r.outages = cluster.wafer(0).mesh().outage_records();
  r.threads = cluster.threads();
  r.windows = cluster.windows();
  r.window = cluster.window();
  r.keep = {cm, ref, layers, task};
  for (auto& w : wafers)
    if (w) r.keep.push_back(w);
  return r;
}

}  // namespace wafersim::platforms::training
