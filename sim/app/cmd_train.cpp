// `wafersim train`: weight-streaming training of a compiled model on a platform's cluster
// (MemoryX, SwarmX, every system in data parallel), over platforms/training's run_training.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>

#include "memoryx/optimizer.h"
#include "platforms/failure_spec.h"
#include "platforms/run_trace.h"
#include "platforms/training/training_run.h"
#include "sim/app/choices.h"
#include "sim/app/on_ranks.h"
#include "sim/app/workflows.h"
#include "sim/errors.h"
#include "sim/parallel/transport.h"

namespace wafersim::app {

void TrainArgs::add(CLI::App& cmd, const std::string& group) {
  cmd.add_option("--steps", steps, "training steps")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u))
      ->group(group);
  cmd.add_flag("--functional", functional,
               "carry values: a synthetic task, each wafer's gradients, SwarmX sums, MemoryX optimizer (the model "
               "needs a loss layer)")
      ->group(group);
  cmd.add_option("--cluster-model", cluster_model,
                 "'cosim': every wafer's mesh and PEs simulated with MemoryX and SwarmX in one run, each wafer on a "
                 "host thread; 'replay': one wafer simulated once, its layer times replayed by a stand-in per system "
                 "(clusters too large to co-simulate; docs/training.md gives its error)")
      ->check(one_of({"cosim", "replay"}))
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--wafer-arithmetic", wafer_arithmetic,
                 "replay with --functional: each wafer's gradients from the 'host' reference (models/reference, the "
                 "replay's default) or from the compiled 'programs' run on a simulated wafer per wafer and step "
                 "(a co-simulation's gradients are always the wafers' own)")
      ->check(one_of({"host", "programs"}))
      ->group(group);
  cmd.add_option("--timing", timing,
                 "each layer's compute from 'simulated' (the compiled programs at cycle level on one wafer) or "
                 "'bound' (the compiler's analytic bound; for layer kinds without PE code)")
      ->check(one_of({"simulated", "bound"}))
      ->capture_default_str()
      ->group(group);
  optimizer_option = cmd.add_option("--optimizer", optimizer,
                                    "the update rule (default: the model file's optimizer.kind, else adam); its "
                                    "hyper-parameters and schedule: the model's optimizer: section or --model-set "
                                    "optimizer.KEY=VALUE (docs/model-config.md)")
                         ->check(one_of({"sgd", "momentum", "adam", "adamw"}))
                         ->group(group);
  learning_rate_option =
      cmd.add_option("--learning-rate", learning_rate,
                     "the base learning rate (default: the model file's optimizer.learning_rate, else 0.001)")
          ->check(CLI::NonNegativeNumber)
          ->group(group);
}

memoryx::OptimizerConfig TrainArgs::optimizer_for(const models::ModelSpec& model) const {
  memoryx::OptimizerConfig c = model.optimizer;
  if (optimizer_option && optimizer_option->count() > 0) c.kind = memoryx::parse_optimizer_kind(optimizer);
  if (learning_rate_option && learning_rate_option->count() > 0) c.learning_rate = learning_rate;
  if (c.schedule.total_updates == 0) c.schedule.total_updates = steps;
  if (c.schedule.min_learning_rate > c.learning_rate)
    throw sim::InputError(fmt::format("--learning-rate {}: below the model's optimizer.schedule.min_learning_rate {}",
                                      c.learning_rate, c.schedule.min_learning_rate));
  c.validate();
  return c;
}

namespace {

nlohmann::ordered_json optimizer_json(const memoryx::OptimizerConfig& c) {
  nlohmann::ordered_json j;
  j["kind"] = memoryx::to_string(c.kind);
  j["learning_rate"] = c.learning_rate;
  j["weight_decay"] = c.weight_decay;
  j["momentum"] = c.momentum;
  j["beta1"] = c.beta1;
  j["beta2"] = c.beta2;
  j["epsilon"] = c.epsilon;
  j["schedule"] = {{"decay", memoryx::to_string(c.schedule.decay)},
                   {"warmup_steps", c.schedule.warmup_updates},
                   {"steps", c.schedule.total_updates},
                   {"min_learning_rate", c.schedule.min_learning_rate}};
  return j;
}

void print_training(const platforms::training::TrainingReport& r, const TrainArgs& t, double wall, const RunDir& dir) {
  using platforms::training::TimingSource;
  std::cout << fmt::format(
      "wafersim train: {} on {}, weight-streaming training: {} wafer{} x batch {}, {} step{}, {}\n", r.model,
      r.platform, r.wafers, r.wafers == 1 ? "" : "s", r.batch_per_wafer, t.steps, t.steps == 1 ? "" : "s",
      memoryx::to_string(r.optimizer.kind));
  using platforms::training::ClusterMode;
  if (r.mode == ClusterMode::Cosim) {
    std::cout << fmt::format(
        "  cluster model cosim: MemoryX, SwarmX and {} wafer{} (mesh, PEs, edge) in one simulation, {} host "
        "thread{}{}, {} windows of {}\n",
        r.wafers, r.wafers == 1 ? "" : "s", r.threads, r.threads == 1 ? "" : "s",
        r.ranks > 1 ? fmt::format(" on each of {} MPI ranks", r.ranks) : "", r.windows, sim::format(r.window));
    std::cout << fmt::format("  wafer compute {} cycles in wafer 0's first step (its programs as co-simulated){}\n",
                             r.wafer.cycles(),
                             r.checked ? fmt::format(", {} result elements checked on every wafer", r.checked) : "");
  } else {
    std::cout
        << "  cluster model replay: one wafer simulated once, its layer times replayed by a stand-in per system\n";
    std::cout << fmt::format("  wafer compute {} cycles per step per wafer ({}){}\n", r.wafer.cycles(),
                             r.wafer.source == TimingSource::Simulated
                                 ? "every layer program simulated at cycle level on one wafer"
                                 : "the compiler's analytic bounds",
                             r.wafer.checked ? fmt::format(", {} result elements checked", r.wafer.checked) : "");
  }
  for (const auto& f : r.failures) {
    const std::string before = f.failure.step ? fmt::format("{:.3f} us", f.step_before.seconds() * 1e6) : "-";
    std::cout << fmt::format(
        "  failure       system {} at step {} ({}): {} -> {} system{} x batch {} (global batch {}); "
        "step time {} before, {:.3f} us at step {} (the survivors resume from MemoryX)\n",
        f.failure.system, f.failure.step, f.failure.text, f.systems_before, f.systems_after,
        f.systems_after == 1 ? "" : "s", f.batch_after, f.batch_after * f.systems_after, before,
        f.step_after.seconds() * 1e6, f.failure.step);
  }
  for (const auto& f : r.outages)
    std::cout << fmt::format("  failure       wafer 0: {} at cycle {}: {}\n", f.part, f.cycle, f.outcome);
  if (!r.failures.empty())
    std::cout << fmt::format(
        "  note          the wafer compute above and the layer times below are the cluster's from step {} on\n",
        r.failures.back().failure.step);
  if (!r.uncomputed_gradients.empty())
    std::cout << fmt::format(
        "  note          no program computes the weight gradient of {}: those chunks leave "
        "when the layer's backward pass ends\n",
        fmt::join(r.uncomputed_gradients, ", "));
  if (t.functional && r.mode == ClusterMode::Cosim)
    std::cout << "  gradients     the wafers' own: the compiled programs' arithmetic on every wafer's PEs\n";
  else if (t.functional)
    std::cout << fmt::format(
        "  gradients     {}\n",
        r.trajectory ? fmt::format("the compiled programs' ({} wafer runs, {} result elements checked; MemoryX's "
                                   "weights equal their trajectory bit for bit)",
                                   r.trajectory->losses.size() * r.wafers, r.trajectory->checked)
                     : std::string("the host reference's arithmetic (models/reference)"));
  for (const auto& l : r.layers.layers) {
    std::string carries;
    for (const auto& c : l.carries) carries += (carries.empty() ? " (+ " : ", ") + c;
    if (!carries.empty()) carries += ")";
    const std::string sparse = l.kept ? fmt::format(" (sparse: {} kept, weight density {:.4g}, {} B per stream)",
                                                    l.kept, l.density, l.stream_bytes())
                                      : "";
    std::cout << fmt::format("  layer         {}{}: {} params{}, forward {}, backward {}\n", l.name, carries, l.params,
                             sparse, sim::format(l.forward), sim::format(l.backward));
  }
  if (!r.layers.loss_layers.empty())
    std::cout << fmt::format("  loss          {}: {}\n", fmt::join(r.layers.loss_layers, ", "),
                             sim::format(r.layers.loss));
  std::cout << "  per step (cluster loop: MemoryX -> SwarmX -> wafers -> SwarmX -> MemoryX; exposed = not hidden):\n";
  std::cout << platforms::training::format_report(r);
  std::cout << fmt::format("  total         {} for {} step{}: {:.1f} samples/s\n", sim::format(r.total()), t.steps,
                           t.steps == 1 ? "" : "s", r.samples_per_second());
  std::cout << fmt::format("  wall time     {:.3f} s\n", wall);
  std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json, training.json)\n",
                           dir.path().string());
}

}  // namespace

// One rank's training (the only one in one process). Rank 0 writes the run's folder; the
// others run their wafers and send rank 0 what they computed.
void train_on_rank(const Workflow& w, const TrainArgs& t, sim::parallel::Transport& transport) {
  if (w.model.model.empty()) throw sim::InputError("training needs a model (--model MODEL)");
  if (w.check.timing_only || w.check.plan_missing_code)
    throw sim::InputError(
        "--timing-only and --plan-missing-code run one step of --model ('wafersim run'), not training");
  if (w.model.inference) throw sim::InputError("training and --inference exclude each other");
  auto loaded = w.platform.load();
  auto m = w.model.load();
  platforms::training::TrainingConfig cfg;
  cfg.steps = t.steps;
  cfg.timing = platforms::training::parse_timing_source(t.timing);
  cfg.functional = t.functional;
  cfg.cluster = platforms::training::parse_cluster_mode(t.cluster_model);
  // --threads: the co-simulation's wafers over that many host threads (each wafer's mesh on one);
  // the replay's one simulated wafer swept in bands by them.
  cfg.threads = w.sim.build_options().threads;
  cfg.wafer_threads = cfg.threads;
  cfg.max_memory = w.sim.build_options().max_memory;
  cfg.explicit_arithmetic = !t.wafer_arithmetic.empty();
  cfg.arithmetic = cfg.explicit_arithmetic ? platforms::training::parse_wafer_arithmetic(t.wafer_arithmetic)
                                           : platforms::training::WaferArithmetic::Host;
  cfg.check = !w.check.no_check;
  cfg.seed = w.sim.seed;
  cfg.max_cycles = w.sim.max_cycles;
  cfg.limits = w.sim.limits();
  cfg.optimizer = t.optimizer_for(m.spec);
  cfg.compile = w.model.options(true);
  std::vector<std::string> fails = w.fails;  // the older `run --train` spelling's
  fails.insert(fails.end(), t.fails.begin(), t.fails.end());
  for (const auto& f : platforms::parse_failures(fails)) {
    if (f.kind != platforms::FailureSpec::Kind::System) {
      cfg.wafer_failures.push_back(f);
      continue;
    }
    cfg.failures.push_back(platforms::training::SystemFailure{
        f.system, static_cast<std::uint32_t>(std::min<std::uint64_t>(f.at, UINT32_MAX)), f.text});
  }
  cfg.transport = &transport;
  if (transport.rank() > 0) {
    sim::stats::Group root("");
    platforms::training::run_training(loaded.spec, m.spec, cfg, root);
    return;
  }
  RunDir dir = w.sim.run_dir("train");
  const sim::trace::TraceOptions trace_options = w.trace.options();
  std::unique_ptr<platforms::RunTrace> tracing;
  if (trace_options.any()) {
    if (trace_options.vcd && cfg.cluster == platforms::training::ClusterMode::Replay)
      throw sim::InputError("--trace vcd: the replay simulates no wafer fabric to probe (use --cluster-model cosim)");
    tracing = std::make_unique<platforms::RunTrace>(trace_options, dir.path(), loaded.spec, 0);
    cfg.trace = tracing.get();
  }
  sim::stats::Group root("");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = platforms::training::run_training(loaded.spec, m.spec, cfg, root);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_run_files(dir, loaded, root, invocation_text(), wall, sim::Cycle(r.wafer.cycles()), "ok", r.rank_use);
  std::string trace_dir;
  if (tracing) {
    tracing->finish(
        sim::Cycle(static_cast<std::uint64_t>(std::ceil(r.total().seconds() * loaded.spec.wafer.clock.hz - 1e-9))));
    trace_dir = tracing->dir().string();
  }
  auto j = platforms::training::to_json(r);
  j["optimizer_settings"] = optimizer_json(cfg.optimizer);
  dir.write("training.json", j.dump(2) + "\n");
  if (w.sim.json) {
    j["wall_seconds"] = wall;
    j["out"] = dir.path().string();
    if (!trace_dir.empty()) j["trace"] = trace_dir;
    std::cout << j.dump(2) << "\n";
    return;
  }
  print_training(r, t, wall, dir);
  if (!trace_dir.empty())
    std::cout << fmt::format("  trace         {}/ ('wafersim report {}' makes its page)\n", trace_dir,
                             dir.path().string());
}

void train(const Workflow& w, const TrainArgs& t) {
  // MPI ranks when an MPI launcher started this process (docs/parallel.md), else one process.
  const auto transport = sim::parallel::process_transport();
  if (transport->ranks() == 1) return train_on_rank(w, t, *transport);
  on_ranks(*transport, [&] {
    if (t.cluster_model != "cosim")
      throw sim::InputError(fmt::format("--cluster-model {} runs in one process, not on {} MPI ranks", t.cluster_model,
                                        transport->ranks()));
    if (w.trace.options().any())
      throw sim::InputError("--trace records a co-simulation in one process, not over MPI ranks");
    train_on_rank(w, t, *transport);
  });
}

void add_train_command(CLI::App& app) {
  auto w = std::make_shared<Workflow>();
  auto t = std::make_shared<TrainArgs>();
  CLI::App* sub = app.add_subcommand(
      "train",
      "weight-streaming training of a compiled model on a platform's cluster: MemoryX streams each layer's weights "
      "through SwarmX to every system, gradients are summed on the way back and the optimizer updates the weights; "
      "per-step breakdown");
  w->platform.add(*sub, "tiny-cluster");
  w->sim.add(*sub);
  sub->add_option("--model,-m", w->model.model,
                  "the model to train (YAML file or preset: tiny-mlp, tiny-transformer, ...)")
      ->type_name("MODEL")
      ->required();
  w->model.add(*sub, ModelArgs::Use::Train);
  t->add(*sub, "Training");
  sub->add_option("--fail", t->fails,
                  "a system that fails at the start of a step (repeatable): system:K@STEP; the survivors train on at "
                  "the same global batch from MemoryX's weights and optimizer state; or a link or PE of wafer 0 "
                  "(co-simulated): link:X,Y,DIR@CYCLE, pe:X,Y@CYCLE (docs/defects.md)")
      ->type_name("SPEC")
      ->group("Training");
  w->trace.add(*sub);
  sub->add_flag("--no-check", w->check.no_check, "do not compare the wafer's results with the host's expectation");
  sub->footer(
      "Examples:\n"
      "  wafersim train tiny-cluster --model tiny-mlp --steps 20\n"
      "  wafersim train tiny-cluster --model tiny-mlp --functional --steps 3 --threads 2\n"
      "  wafersim train cs2-cluster --model gpt3-xl --cluster-model replay --timing bound\n"
      "  wafersim train tiny-cluster --model tiny-mlp --functional --cluster-model replay --wafer-arithmetic programs\n"
      "  wafersim train tiny-cluster --model tiny-mlp --functional --steps 4 --fail system:1@2\n"
      "  wafersim train tiny-cluster --model tiny-mlp --fail link:3,3,south@100 --set redundancy.reroute=true\n"
      "Writes config.yaml, stats.json, stats.txt, run.json and training.json (every step's breakdown) into the\n"
      "output folder (docs/training.md).");
  sub->callback([w, t] { train(*w, *t); });
}

}  // namespace wafersim::app
