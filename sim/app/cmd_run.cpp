// `wafersim run`: build a platform and simulate it: idle for --cycles, or one step of a
// compiled model's programs on wafer 0 (--model). The older spellings `run --train` and
// `run --inference` hand on to `train` and `infer` with a one-line notice.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "models/compiler/compiler.h"
#include "platforms/cluster.h"
#include "platforms/run_trace.h"
#include "platforms/runtime/host_data.h"
#include "sim/app/model_run_output.h"
#include "sim/app/progress.h"
#include "sim/app/workflows.h"
#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::app {

void CheckArgs::add(CLI::App& cmd) {
  cmd.add_flag("--no-check", no_check, "timing only: do not compare results with the host's expectation (faster)");
  cmd.add_flag("--timing-only", timing_only,
               "the PEs compute no values (SRAM holds only what the host and scalar stores write, and the "
               "compiler's chunk tables); every cycle, stall and access as in the functional run; no checks");
  cmd.add_flag("--plan-missing-code", plan_missing_code,
               "steps the code generator cannot lower (a kind without PE code, buffers that do not fit the SRAM) are "
               "planned analytically and not simulated instead of an error (with --timing-only or --no-check)");
}

void add_fail_option(CLI::App& cmd, std::vector<std::string>& fails) {
  cmd.add_option("--fail", fails,
                 "a link or PE of wafer 0 that fails while the model runs (repeatable): link:X,Y,DIR@CYCLE or "
                 "pe:X,Y@CYCLE; a static route over it stops the run (exit 3) unless redundancy.reroute rebuilds "
                 "the routes around it (docs/defects.md)")
      ->type_name("SPEC");
}

void note_new_spelling(const std::string& old_spelling, const std::string& new_spelling) {
  static bool noted = false;
  if (noted) return;
  noted = true;
  std::cerr << fmt::format("wafersim: note: '{}' is now '{}' (the old spelling still works for now)\n", old_spelling,
                           new_spelling);
}

namespace {

struct RunCommand {
  Workflow w;
  std::uint64_t cycles = 10000;
  bool train = false;  // the older spelling of `wafersim train`
  TrainArgs training;  // with it
  InferArgs inference;

  void execute() const {
    if ((w.check.timing_only || w.check.plan_missing_code) && w.model.model.empty())
      throw sim::InputError("--timing-only and --plan-missing-code need a model (--model MODEL)");
    if (train) {
      note_new_spelling("wafersim run --train", "wafersim train");
      return app::train(w, training);
    }
    if (w.model.inference || inference.any()) {
      note_new_spelling("wafersim run --inference", "wafersim infer");
      if (!w.model.inference)
        throw sim::InputError("--prompt-len, --decode-tokens and --pipeline are inference: use 'wafersim infer'");
      return infer(w, inference);
    }
    if (w.model.placement == "resident")
      throw sim::InputError("--placement resident runs inference only: use 'wafersim infer'");
    if (w.check.plan_missing_code && !w.check.timing_only && !w.check.no_check)
      throw sim::InputError(
          "--plan-missing-code skips steps, so later steps read values nobody wrote: add --timing-only or --no-check");
    if (!w.model.model.empty()) return model_step();
    idle();
  }

  // One training step (forward and backward) of the compiled model on wafer 0.
  void model_step() const {
    auto loaded = w.platform.load();
    auto m = w.model.load();
    const models::compiler::Target target{loaded.spec.wafer, loaded.spec.fabric};
    models::compiler::CompileOptions options = w.model.options(true);
    options.plan_missing_code = w.check.plan_missing_code;
    const auto cm = models::compiler::compile(m.spec, target, options);
    run_compiled_model(w, "run", loaded, cm, platforms::runtime::make_host_data(cm, w.sim.seed));
  }

  // The platform with nothing loaded, for --cycles.
  void idle() const {
    auto loaded = w.platform.load();
    const sim::trace::TraceOptions trace_options = w.trace.options();
    RunDir dir = w.sim.run_dir("run");
    platforms::BuildOptions build = w.sim.build_options();
    std::unique_ptr<platforms::RunTrace> tracing;
    if (trace_options.any()) {
      tracing = std::make_unique<platforms::RunTrace>(trace_options, dir.path(), loaded.spec, cycles);
      tracing->configure(build);
    }
    sim::stats::Group root("");
    platforms::Cluster cluster("cluster", loaded.spec, build, root);
    if (tracing)
      for (std::size_t i = 0; i < cluster.wafer_count(); ++i)
        tracing->attach(cluster.wafer(i), static_cast<std::uint32_t>(i));
    std::vector<const sim::Engine*> engines;
    for (std::size_t i = 0; i < cluster.wafer_count(); ++i) engines.push_back(&cluster.wafer(i).engine());
    const sim::Engine& ref = cluster.wafer(0).engine();

    Progress progress("run", cycles, "cycles", Progress::terminal() && !w.sim.json);
    sim::RunOutcome outcome = sim::run_simulation(ref, engines, sim::Cycle(cycles), w.sim.limits(), progress);
    write_run_files(dir, loaded, root, invocation_text(), outcome.wall_seconds, outcome.cycles, "ok");
    if (tracing) tracing->finish(outcome.cycles);
    print_idle(loaded, outcome, dir);
  }

  void print_idle(const platforms::LoadedPlatform& loaded, const sim::RunOutcome& outcome, const RunDir& dir) const {
    const auto& spec = loaded.spec;
    const double seconds = static_cast<double>(outcome.cycles.count()) / spec.wafer.clock.hz;
    if (w.sim.json) {
      nlohmann::ordered_json j;
      j["platform"] = spec.name;
      j["systems"] = spec.cluster.systems;
      j["pe_count"] = spec.wafer.pe_count();
      j["cycles"] = outcome.cycles.count();
      j["simulated_seconds"] = seconds;
      j["wall_seconds"] = outcome.wall_seconds;
      j["out"] = dir.path().string();
      std::cout << j.dump(2) << "\n";
      return;
    }
    const double rate =
        outcome.wall_seconds > 0 ? static_cast<double>(outcome.cycles.count()) / outcome.wall_seconds : 0;
    std::cout << fmt::format("wafersim run: {} ({} system{}, {} x {} PEs at {})\n", spec.name, spec.cluster.systems,
                             spec.cluster.systems == 1 ? "" : "s", spec.wafer.width, spec.wafer.height,
                             units::format(spec.wafer.clock));
    std::cout << "  workload      idle platform (no program loaded)\n";
    std::cout << fmt::format("  cycles        {} ({} simulated)\n", outcome.cycles.count(),
                             units::pretty(seconds, "s"));
    std::cout << fmt::format("  wall time     {:.3f} s ({})\n", outcome.wall_seconds, units::pretty(rate, "cycles/s"));
    std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json)\n",
                             dir.path().string());
  }
};

}  // namespace

void add_run_command(CLI::App& app) {
  auto cmd = std::make_shared<RunCommand>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "simulate a platform and print a summary (default: the 'tiny' preset): idle for --cycles, or with --model one "
      "training step (forward and backward) of a compiled model's programs on wafer 0, with per-layer cycles, bounds "
      "and checked results");
  cmd->w.platform.add(*sub, "tiny");
  cmd->w.sim.add(*sub);
  cmd->w.trace.add(*sub);
  sub->add_option("--cycles", cmd->cycles, "cycles to simulate when no workload ends the run by itself")
      ->capture_default_str();
  sub->add_option("--model,-m", cmd->w.model.model,
                  "run one step of a model (YAML file or preset: tiny-mlp, tiny-transformer, ...) compiled for this "
                  "platform")
      ->type_name("MODEL");
  cmd->w.model.add(*sub, ModelArgs::Use::Run);
  cmd->w.check.add(*sub);
  add_fail_option(*sub, cmd->w.fails);
  // The older spellings, hidden: `run --train` (now `train`) and `run --inference` (now `infer`).
  sub->add_flag("--train", cmd->train, "now 'wafersim train'")->group("");
  cmd->training.add(*sub, "");
  cmd->inference.add(*sub, "");
  sub->footer(
      "Examples:\n"
      "  wafersim run tiny --cycles 1000\n"
      "  wafersim run tiny --model tiny-mlp\n"
      "  wafersim run tiny --model tiny-transformer --trace windows\n"
      "  wafersim run tiny --model tiny-transformer --timing-only\n"
      "  wafersim run tiny --model tiny-mlp --fail link:1,0,east@100 --set redundancy.reroute=true\n"
      "Writes config.yaml, stats.json, stats.txt and run.json into the output folder (with --model also\n"
      "model.json: the mapping and every step's figures). With --model, inputs are loaded through the wafer's\n"
      "TLM-2.0 host socket, each layer's programs run in turn while weights stream in through the west edge\n"
      "channels and weight gradients out through the east ones, and every result is compared with the host's\n"
      "computation (exit code 3 if one differs). Training over a cluster: 'wafersim train'; inference (weights\n"
      "resident, decode, the pipeline): 'wafersim infer'.");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
