#include "platforms/training/training_run.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>

#include "models/compiler/compiler.h"
#include "models/reference/task.h"
#include "platforms/memory_estimate.h"
#include "platforms/training/replica_gradients.h"
#include "sim/errors.h"
#include "sim/stats/recorded.h"

namespace wafersim::platforms::training {

double TrainingReport::samples_per_second() const {
  const double s = total().seconds();
  return s > 0 ? static_cast<double>(batch_per_wafer * wafers * timeline.steps.size()) / s : 0.0;
}

std::uint64_t TrainingReport::stream_bytes_per_step() const {
  std::uint64_t b = 0;
  for (const auto& l : layers.layers) b += 2 * l.stream_bytes();
  return b;
}

sim::Picos TrainingReport::total() const { return timeline.steps.empty() ? sim::Picos(0) : timeline.steps.back().end; }

void add_training_stats(sim::stats::Group& training, const TrainingReport& r, std::uint32_t steps) {
  platforms::add_stats(training, r.timeline);
  const double samples = static_cast<double>(r.batch_per_wafer) * r.wafers * steps;
  training.formula(
      "samples", [samples] { return samples; }, "samples", "samples trained on: batch x wafers x steps", true);
}

void start_from(const TrainingConfig& config, const ClusterModel& layers, memoryx::MemoryX& memoryx,
                models::reference::TensorMap& initial) {
  if (!config.start) return;
  resume_state(memoryx, *config.start);
  for (std::uint32_t l = 0; l < layers.layers.size(); ++l) layers.unflatten(l, memoryx.weights(l), initial);
}

void number_steps(platforms::StepTimeline& timeline, std::uint32_t first_step) {
  for (auto& s : timeline.steps) s.step += first_step;
  for (auto& i : timeline.intervals)
    if (i.kind != Activity::Compute) i.step += first_step;
}

TrainingReport run_training(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                            const TrainingConfig& config, sim::stats::Group& stats) {
  if (config.steps == 0) throw sim::InputError("training needs at least one step");
  if (!config.failures.empty() && config.transport && config.transport->ranks() > 1)
    throw sim::InputError(fmt::format("--fail {}: a system failure runs in one process, not on {} MPI ranks",
                                      config.failures[0].text, config.transport->ranks()));
  if (!config.failures.empty()) return run_with_failures(spec, model, config, stats);
  if (config.cluster == ClusterMode::Cosim) return run_cosim(spec, model, config, stats);
  if (!config.wafer_failures.empty())
    throw sim::InputError(fmt::format(
        "--fail {}: links and PEs fail on a co-simulated wafer (the replay's wafer runs apart): use --cluster-model "
        "cosim",
        config.wafer_failures[0].text));
  if (config.transport && config.transport->ranks() > 1)
    throw sim::InputError(
        fmt::format("--cluster-model replay runs in one process, not on {} MPI ranks", config.transport->ranks()));
  const bool programs = config.functional && config.arithmetic == WaferArithmetic::Programs;
  if (config.arithmetic == WaferArithmetic::Programs && !config.functional)
    throw sim::InputError("the programs' wafer arithmetic needs a functional run (--functional)");
  if (programs && config.timing != TimingSource::Simulated)
    throw sim::InputError("the programs' wafer arithmetic runs the compiled programs: it needs '--timing simulated'");
  TrainingReport r;
  r.model = model.name;
  r.platform = spec.name;
  r.wafers = spec.cluster.systems;
  r.batch_per_wafer = model.batch;
  const models::compiler::Target target{spec.wafer, spec.fabric};
  models::compiler::CompileOptions options = config.compile;
  options.training = true;
  options.emit = config.timing == TimingSource::Simulated;
  const models::compiler::CompiledModel cm = [&] {
    try {
      return models::compiler::compile(model, target, options);
    } catch (const sim::InputError& e) {
      if (!options.emit) throw;
      throw sim::InputError(
          std::string(e.what()) +
          "; for training, '--timing bound' takes such layers' time from the compiler's analytic bound");
    }
  }();
  if (config.timing == TimingSource::Simulated) {
    // The wafer is built in a child process: its memory is checked here, before the fork.
    check_memory(estimate_memory(spec, Workload{false, 1}), config.max_memory);
    r.wafer =
        simulate_programs(spec, cm, config.seed, config.check, config.max_cycles, config.wafer_threads, config.limits);
    if (r.wafer.mismatches)
      throw sim::SimulationError(
          fmt::format("the wafer run of '{}': {} of {} result elements differ from the host; first: {}", model.name,
                      r.wafer.mismatches, r.wafer.checked, r.wafer.first_mismatch));
  } else {
    r.wafer = bound_programs(spec, cm);
  }
  const models::reference::Model ref(model);
  r.layers = cluster_model(ref, r.wafer, config.functional);
  r.optimizer = config.optimizer;
  r.optimizer.gradient_scale = 1.0F / static_cast<float>(r.wafers);
  r.optimizer.validate();

  platforms::edge::ModelEndpointConfig ec = r.layers.endpoint_config();
  std::unique_ptr<models::reference::SyntheticTask> task;
  std::shared_ptr<ReplicaGradients> grads;
  if (config.functional) {
    task = std::make_unique<models::reference::SyntheticTask>(model, ref.format(), config.seed);
    grads = std::make_shared<ReplicaGradients>(ref, r.layers, *task, model.batch * r.wafers, r.wafers);
    grads->start_at(config.first_step);
    ReplicaGradients::attach(grads, ec);
  }
  r.arithmetic = config.functional ? config.arithmetic : WaferArithmetic::Host;
  if (programs) {
    // Before the cluster's modules exist: each wafer run forks a child whose SystemC kernel must
    // hold nothing but its wafer. Dense layers only, so MemoryX keeps the initial weights as set.
    TrajectoryPlan plan;
    plan.steps = config.steps;
    plan.wafers = r.wafers;
    plan.arity = spec.swarmx.arity();
    plan.seed = config.seed;
    plan.max_cycles = config.max_cycles;
    plan.limits = config.limits;
    plan.optimizer = r.optimizer;
    r.trajectory = std::make_shared<const ProgramTrajectory>(
        program_trajectory(spec, cm, r.layers, *task, ref.initial_parameters(config.seed), plan));
    grads->serve(r.trajectory);
  }
  platforms::ClusterParts parts;
  parts.layers = r.layers.memoryx_layers();
  parts.optimizer = r.optimizer;
  parts.functional = config.functional;
  parts.seed = config.seed;
  parts.stand_ins = platforms::model_endpoints(ec);
  r.cluster = std::make_shared<platforms::Cluster>("cluster", spec, std::move(parts), stats);
  auto& cluster = *r.cluster;
  if (config.trace) config.trace->attach(cluster);
  if (config.functional) {
    r.initial = ref.initial_parameters(config.seed);
    // MemoryX prunes the masked weights of sparse layers (exactly zero from the start).
    for (std::uint32_t l = 0; l < r.layers.layers.size(); ++l) {
      cluster.memoryx().set_weights(l, r.layers.flatten(l, r.initial));
      r.layers.unflatten(l, cluster.memoryx().weights(l), r.initial);
    }
    start_from(config, r.layers, cluster.memoryx(), r.initial);
  }
  r.timeline = platforms::run_training_steps(cluster, config.steps, config.limits);
  number_steps(r.timeline, config.first_step);
  auto& training = stats.group("training");
  if (!config.segment) add_training_stats(training, r, config.steps);
  if (!r.wafer.wafer_stats.is_null())
    sim::stats::add_recorded(training.group("wafer_run"), r.wafer.wafer_stats["values"],
                             r.wafer.wafer_stats["descriptions"], "wafer0");
  if (config.trace) config.trace->record_steps(cluster, r.timeline);
  if (config.functional) {
    r.losses = grads->step_losses();
    for (std::uint32_t l = 0; l < r.layers.layers.size(); ++l)
      r.layers.unflatten(l, cluster.memoryx().weights(l), r.final_parameters);
    r.state = std::make_shared<const TrainingState>(capture_state(cluster.memoryx()));
  }
  if (programs)
    for (std::uint32_t l = 0; l < r.layers.layers.size(); ++l)
      if (const auto& w = cluster.memoryx().weights(l), &want = r.trajectory->weights.back()[l];
          w.size() != want.size() || std::memcmp(w.data(), want.data(), w.size() * sizeof(float)) != 0)
        throw sim::SimulationError(
            fmt::format("layer '{}': MemoryX's final weights differ from the trajectory of the programs' gradients",
                        r.layers.layers[l].name));
  return r;
}

const char* to_string(ClusterMode m) { return m == ClusterMode::Cosim ? "cosim" : "replay"; }

ClusterMode parse_cluster_mode(const std::string& text) {
  if (text == "cosim") return ClusterMode::Cosim;
  if (text == "replay") return ClusterMode::Replay;
  throw sim::InputError(fmt::format("unknown cluster model '{}': expected 'cosim' or 'replay'", text));
}

nlohmann::ordered_json to_json(const TrainingReport& r) {
  nlohmann::ordered_json j;
  j["model"] = r.model;
  j["platform"] = r.platform;
  j["cluster_model"] = to_string(r.mode);
  j["wafers"] = r.wafers;
  j["batch_per_wafer"] = r.batch_per_wafer;
  j["optimizer"] = memoryx::to_string(r.optimizer.kind);
  j["wafer_timing"] = to_string(r.wafer.source);
  j["wafer_cycles"] = r.wafer.cycles();
  j["wafer_checked"] = r.wafer.checked;
  if (!r.losses.empty()) j["wafer_arithmetic"] = to_string(r.arithmetic);
  if (r.trajectory) j["wafer_runs_checked"] = r.trajectory->checked;
  auto layers = nlohmann::ordered_json::array();
  for (const auto& l : r.layers.layers) {
    nlohmann::ordered_json o;
    o["layer"] = l.name;
    o["params"] = l.params;
    o["carries"] = l.carries;
    o["kept"] = l.kept ? l.kept : l.params;
    o["density"] = l.density;
    o["stream_bytes"] = l.stream_bytes();
    o["forward_ps"] = l.forward.count();
    o["backward_ps"] = l.backward.count();
    layers.push_back(o);
  }
  j["layers"] = layers;
  j["loss_layers"] = r.layers.loss_layers;
  j["loss_ps"] = r.layers.loss.count();
  j["stream_bytes_per_step"] = r.stream_bytes_per_step();
  j["steps"] = platforms::to_json(r.timeline);
  if (r.mode == ClusterMode::Cosim) {
    j["threads"] = r.threads;
    j["window_ps"] = r.window.count();
    j["windows"] = r.windows;
    j["program_cycles"] = r.program_cycles;
    j["program_waits"] = r.program_waits;
    if (!r.uncomputed_gradients.empty()) j["uncomputed_gradients"] = r.uncomputed_gradients;
    if (r.checked) j["result_elements_checked"] = r.checked;
  }
  if (!r.losses.empty()) j["losses"] = r.losses;
  if (!r.failures.empty()) {
    auto fs = nlohmann::ordered_json::array();
    for (const auto& f : r.failures)
      fs.push_back({{"spec", f.failure.text},
                    {"system", f.failure.system},
                    {"step", f.failure.step},
                    {"systems_before", f.systems_before},
                    {"systems_after", f.systems_after},
                    {"batch_before", f.batch_before},
                    {"batch_after", f.batch_after},
                    {"step_time_before_ps", f.step_before.count()},
                    {"step_time_after_ps", f.step_after.count()}});
    j["failures"] = fs;
  }
  j["total_ps"] = r.total().count();
  j["samples_per_second"] = r.samples_per_second();
  return j;
}

std::string format_report(const TrainingReport& r) {
  auto us = [](sim::Picos t) { return fmt::format("{:.3f}", t.seconds() * 1e6); };
  std::string out = fmt::format("  {:<5} {:>10}", "step", "time us");
  for (std::size_t k = 0; k < platforms::kActivities; ++k)
    out += fmt::format(" {:>10} {:>9}", platforms::to_string(static_cast<platforms::Activity>(k)), "exposed");
  out += fmt::format(" {:>9}", "idle");
  if (!r.losses.empty()) out += fmt::format(" {:>9}", "loss");
  out += "\n";
  for (const auto& s : r.timeline.steps) {
    out += fmt::format("  {:<5} {:>10}", s.step, us(s.duration()));
    for (std::size_t k = 0; k < platforms::kActivities; ++k)
      out += fmt::format(" {:>10} {:>9}", us(s.busy[k]), us(s.exposed[k]));
    out += fmt::format(" {:>9}", us(s.idle));
    if (s.step < r.losses.size()) out += fmt::format(" {:>9.5f}", r.losses[s.step]);
    out += "\n";
  }
  return out;
}

}  // namespace wafersim::platforms::training
