// `wafersim run`: build a platform and simulate it: idle, or one training (or inference)
// step of a compiled model (--model).

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <iostream>
#include <optional>

#include "memoryx/optimizer.h"
#include "models/compiler/compiler.h"
#include "models/resident/resident_plan.h"
#include "platforms/cluster.h"
#include "platforms/inference/decode_run.h"
#include "platforms/inference/pipeline_run.h"
#include "platforms/inference/place_weights.h"
#include "platforms/run_trace.h"
#include "platforms/runtime/executor.h"
#include "platforms/training/training_run.h"
#include "sim/app/cli.h"
#include "sim/app/model_report.h"
#include "sim/app/resident_report.h"
#include "sim/app/trace_args.h"
#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::app {
namespace {

struct RunCommand {
  PlatformArgs platform;
  SimArgs sim;
  ModelArgs model;
  TraceArgs trace;
  std::uint64_t cycles = 10000;
  bool no_check = false;
  std::uint64_t prompt_len = 0;
  std::uint64_t decode_tokens = 0;
  bool token_by_token = false;
  bool timing_only = false;
  bool plan_missing_code = false;
  bool train = false;
  bool pipeline = false;
  std::uint32_t pipeline_replicas = 0;
  std::string pipeline_cut = "rows-out";
  std::uint32_t steps = 1;
  bool functional = false;
  std::string wafer_arithmetic = "host";
  std::string timing = "simulated";
  std::string optimizer = "adam";
  float learning_rate = 1e-3F;

  void execute() const {
    if ((timing_only || plan_missing_code) && model.model.empty())
      throw sim::InputError("--timing-only and --plan-missing-code need a model (--model MODEL)");
    if ((timing_only || plan_missing_code) && train)
      throw sim::InputError("--timing-only and --plan-missing-code run one step of --model, not --train");
    if (plan_missing_code && !timing_only && !no_check)
      throw sim::InputError(
          "--plan-missing-code skips steps, so later steps read values nobody wrote: add --timing-only or --no-check");
    if (train) return run_training();
    if (!model.model.empty()) return run_model();
    auto loaded = platform.load();
    const sim::trace::TraceOptions trace_options = trace.options();
    RunDir dir = sim.run_dir("run");
    platforms::BuildOptions build = sim.build_options();
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

    Progress progress("run", cycles, "cycles", Progress::terminal() && !sim.json);
    RunOutcome outcome = run_simulation(ref, engines, sim::Cycle(cycles), sim.limits(), progress);
    write_run_files(dir, loaded, root, invocation_text(), outcome.wall_seconds, outcome.cycles, "ok");
    if (tracing) tracing->finish(outcome.cycles);

    const double rate =
        outcome.wall_seconds > 0 ? static_cast<double>(outcome.cycles.count()) / outcome.wall_seconds : 0;
    if (sim.json) {
      nlohmann::ordered_json j;
      j["platform"] = loaded.spec.name;
      j["systems"] = loaded.spec.cluster.systems;
      j["pe_count"] = loaded.spec.wafer.pe_count();
      j["cycles"] = outcome.cycles.count();
      j["simulated_seconds"] = static_cast<double>(outcome.cycles.count()) / loaded.spec.wafer.clock.hz;
      j["wall_seconds"] = outcome.wall_seconds;
      j["out"] = dir.path().string();
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << fmt::format("wafersim run: {} ({} system{}, {} x {} PEs at {})\n", loaded.spec.name,
                             loaded.spec.cluster.systems, loaded.spec.cluster.systems == 1 ? "" : "s",
                             loaded.spec.wafer.width, loaded.spec.wafer.height, units::format(loaded.spec.wafer.clock));
    std::cout << "  workload      idle platform (no program loaded)\n";
    std::cout << fmt::format(
        "  cycles        {} ({} simulated)\n", outcome.cycles.count(),
        units::pretty(static_cast<double>(outcome.cycles.count()) / loaded.spec.wafer.clock.hz, "s"));
    std::cout << fmt::format("  wall time     {:.3f} s ({})\n", outcome.wall_seconds, units::pretty(rate, "cycles/s"));
    std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json)\n",
                             dir.path().string());
  }

  // K weight-streaming training steps of a compiled model on the platform's cluster.
  void run_training() const {
    if (model.model.empty()) throw sim::InputError("--train needs a model (--model MODEL)");
    auto loaded = platform.load();
    auto m = model.load();
    platforms::training::TrainingConfig cfg;
    cfg.steps = steps;
    cfg.timing = platforms::training::parse_timing_source(timing);
    cfg.functional = functional;
    cfg.arithmetic = platforms::training::parse_wafer_arithmetic(wafer_arithmetic);
    cfg.check = !no_check;
    cfg.seed = sim.seed;
    cfg.max_cycles = sim.max_cycles;
    cfg.optimizer.kind = memoryx::parse_optimizer_kind(optimizer);
    cfg.optimizer.learning_rate = learning_rate;
    if (model.inference) throw sim::InputError("--train and --inference exclude each other");
    cfg.compile = model.options(true);
    RunDir dir = sim.run_dir("train");
    sim::stats::Group root("");
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = platforms::training::run_training(loaded.spec, m.spec, cfg, root);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_run_files(dir, loaded, root, invocation_text(), wall, sim::Cycle(r.wafer.cycles()), "ok");
    auto j = platforms::training::to_json(r);
    dir.write("training.json", j.dump(2) + "\n");
    if (sim.json) {
      j["wall_seconds"] = wall;
      j["out"] = dir.path().string();
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << fmt::format(
        "wafersim run: {} on {}, weight-streaming training: {} wafer{} x batch {}, {} step{}, {}\n", r.model,
        r.platform, r.wafers, r.wafers == 1 ? "" : "s", r.batch_per_wafer, steps, steps == 1 ? "" : "s",
        memoryx::to_string(r.optimizer.kind));
    std::cout << fmt::format("  wafer compute {} cycles per step per wafer ({}){}\n", r.wafer.cycles(),
                             r.wafer.source == platforms::training::TimingSource::Simulated
                                 ? "every layer program simulated at cycle level on one wafer"
                                 : "the compiler's analytic bounds",
                             r.wafer.checked ? fmt::format(", {} result elements checked", r.wafer.checked) : "");
    if (functional)
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
      std::cout << fmt::format("  layer         {}{}: {} params{}, forward {}, backward {}\n", l.name, carries,
                               l.params, sparse, sim::format(l.forward), sim::format(l.backward));
    }
    if (!r.layers.loss_layers.empty())
      std::cout << fmt::format("  loss          {}: {}\n", fmt::join(r.layers.loss_layers, ", "),
                               sim::format(r.layers.loss));
    std::cout << "  per step (cluster loop: MemoryX -> SwarmX -> wafers -> SwarmX -> MemoryX; exposed = not hidden):\n";
    std::cout << platforms::training::format_report(r);
    std::cout << fmt::format("  total         {} for {} step{}: {:.1f} samples/s\n", sim::format(r.total()), steps,
                             steps == 1 ? "" : "s", r.samples_per_second());
    std::cout << fmt::format("  wall time     {:.3f} s\n", wall);
    std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json, training.json)\n",
                             dir.path().string());
  }

  // One step of a compiled model on wafer 0 of the platform.
  void run_model() const {
    auto loaded = platform.load();
    auto m = model.load();
    const models::compiler::Target target{loaded.spec.wafer, loaded.spec.fabric};
    if (model.placement == "resident") return run_resident(loaded, m, target);
    if (prompt_len) throw sim::InputError("--prompt-len needs --placement resident");
    if (pipeline) throw sim::InputError("--pipeline needs --placement resident --inference");
    models::compiler::CompileOptions options = model.options(true);
    options.plan_missing_code = plan_missing_code;
    const auto cm = models::compiler::compile(m.spec, target, options);
    run_compiled(loaded, cm, platforms::runtime::make_host_data(cm, sim.seed));
  }

  // Weight-resident inference: the prefill of the prompt with every linear layer's weights
  // placed in SRAM once (step 0), then the plan's decode figures beside it.
  void run_resident(const platforms::LoadedPlatform& loaded, models::LoadedModel m,
                    const models::compiler::Target& target) const {
    if (!model.inference) throw sim::InputError("--placement resident runs inference only: add --inference");
    if (token_by_token && !decode_tokens) throw sim::InputError("--token-by-token needs --decode-tokens");
    if (pipeline) return run_pipeline(loaded, m, target);
    if (decode_tokens) return run_decode(loaded, m, target);
    if (prompt_len) m = models::load_model(model.model, with_sequence(prompt_len));
    auto rp = models::resident::compile_resident_program(m.spec, target, model.options(true).accumulate);
    auto data = platforms::runtime::make_host_data(rp.cm, sim.seed);
    platforms::inference::place_weights(rp, data);
    const models::resident::ClusterTarget ct{target, loaded.spec.cluster.systems,
                                             loaded.spec.system.io_bandwidth_bits_per_s()};
    std::optional<models::resident::ResidentPlan> plan;
    try {
      plan = models::resident::plan_resident(m.spec, ct);
    } catch (const sim::InputError&) {
      // The pipeline over regions needs more SRAM than the layer-by-layer run: no figures.
    }
    run_compiled(loaded, rp.cm, std::move(data), plan ? &*plan : nullptr);
  }

  // Decode steps after the prompt: the prompt as one parallel prefill whose keys and values are
  // copied into the KV caches (or, with --token-by-token, fed one position per step), then
  // --decode-tokens steps; every attention step checked against models/reference.
  void run_decode(const platforms::LoadedPlatform& loaded, const models::LoadedModel& m,
                  const models::compiler::Target& target) const {
    const std::uint64_t capacity = m.spec.sequence;
    if (decode_tokens >= capacity)
      throw sim::InputError(
          fmt::format("--decode-tokens {} leaves no prompt in the model's sequence of {} (the KV "
                      "cache's length)",
                      decode_tokens, capacity));
    const std::uint64_t prompt = prompt_len ? prompt_len : capacity - decode_tokens;
    const auto one = models::load_model(model.model, with_sequence(1));
    std::optional<models::LoadedModel> whole;
    if (!token_by_token) whole = models::load_model(model.model, with_sequence(prompt));
    auto rd = models::resident::compile_resident_decode(one.spec, target, prompt, prompt + decode_tokens, capacity,
                                                        model.options(true).accumulate, whole ? &whole->spec : nullptr);
    auto data = platforms::runtime::make_host_data(rd.rp.cm, sim.seed);
    platforms::runtime::HostData prefill_data;
    if (rd.prefill) {
      prefill_data = platforms::runtime::make_host_data(rd.prefill->cm, sim.seed);
      platforms::inference::add_position_inputs(rd, data, sim.seed, &prefill_data);
      platforms::inference::place_weights(*rd.prefill, prefill_data);
    } else {
      platforms::inference::add_position_inputs(rd, data, sim.seed);
      platforms::inference::place_weights(rd.rp, data);
    }
    run_compiled(loaded, rd.rp.cm, std::move(data), nullptr, &rd, std::move(prefill_data));
  }

  // The pipeline simulated: every linear layer on its own column of PEs, all at once, the
  // batch's tokens flowing from column to column over the fabric.
  void run_pipeline(const platforms::LoadedPlatform& loaded, const models::LoadedModel& m,
                    const models::compiler::Target& target) const {
    if (prompt_len)
      throw sim::InputError(
          "--pipeline runs the model's batch x sequence tokens through the pipeline (with --decode-tokens D, the "
          "last D positions as decode steps after the prefill of the others): drop --prompt-len");
    if (pipeline_cut != "rows-out" && pipeline_cut != "rows-in")
      throw sim::InputError(fmt::format("--pipeline-cut: expected 'rows-out' or 'rows-in', got '{}'", pipeline_cut));
    const auto p = models::resident::compile_pipeline(
        m.spec, target, sim.seed,
        pipeline_cut == "rows-in" ? models::resident::PipelineCut::RowsIn : models::resident::PipelineCut::RowsOut,
        pipeline_replicas, decode_tokens);
    platforms::BuildOptions build = sim.build_options();
    build.routes = p.routes;
    RunDir dir = sim.run_dir("run");
    sim::stats::Group root("");
    platforms::Cluster cluster("cluster", loaded.spec, build, root);
    auto& wafer = cluster.wafer(0);
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = platforms::inference::run_pipeline(p, wafer, !no_check);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const models::resident::ClusterTarget ct{target, loaded.spec.cluster.systems,
                                             loaded.spec.system.io_bandwidth_bits_per_s()};
    std::optional<models::resident::ResidentPlan> plan;
    try {
      plan = models::resident::plan_resident(m.spec, ct);
    } catch (const sim::InputError&) {
    }
    const double hz = loaded.spec.wafer.clock.hz;
    const double tps = r.cycles() ? static_cast<double>(p.tokens) * hz / static_cast<double>(r.cycles()) : 0;
    auto& g = wafer.stats().group("pipeline");
    g.formula(
        "tokens", [v = static_cast<double>(p.tokens)] { return v; }, "tokens", "tokens through the pipeline");
    g.formula(
        "cycles", [v = static_cast<double>(r.cycles())] { return v; }, "cycles",
        "simulated cycles of the pipelined run");
    g.formula(
        "bound_cycles", [v = static_cast<double>(p.bound_cycles())] { return v; }, "cycles",
        "lower bound of the simulated mapping");
    g.formula(
        "tokens_per_s", [v = tps] { return v; }, "tokens/s", "tokens per second at the platform clock");
    write_run_files(dir, loaded, root, invocation_text(), wall, wafer.engine().cycles(), r.mismatches ? "error" : "ok");
    nlohmann::ordered_json j;
    j["platform"] = loaded.spec.name;
    j["model"] = m.spec.name;
    j["tokens"] = p.tokens;
    j["replicas"] = p.replicas;
    j["cut"] = models::resident::to_string(p.cut);
    j["cycles"] = r.cycles();
    j["prompt"] = p.prompt;
    j["decode_tokens"] = p.phases.size() - 1;
    j["prefill_cycles"] = r.phase_cycles.front();
    j["decode_step_cycles"] = std::vector<std::uint64_t>(r.phase_cycles.begin() + 1, r.phase_cycles.end());
    j["bound_cycles"] = p.bound_cycles();
    j["interval_bound_cycles"] = p.interval_cycles();
    if (plan) j["plan_bound_cycles"] = plan->prefill_cycles(m.spec.batch);
    j["tokens_per_s"] = tps;
    j["checked"] = r.compared;
    j["mismatches"] = r.mismatches;
    nlohmann::ordered_json stages = nlohmann::json::array();
    for (const auto& s : p.stages)
      stages.push_back({{"layer", s.name},
                        {"up", s.up},
                        {"fused", s.fused},
                        {"column", s.x},
                        {"rows", s.rows},
                        {"v", s.v},
                        {"form", s.embedding    ? "embedding"
                                 : s.attention  ? "attention"
                                 : s.layer_norm ? "layernorm"
                                 : s.norm       ? "rmsnorm"
                                 : s.add        ? "add"
                                 : s.dot        ? "dot"
                                                : "fmac"},
                        {"kv_cache_bytes", s.cache_bytes},
                        {"latency_bound", s.latency_bound},
                        {"interval_bound", s.interval_bound}});
    j["stages"] = stages;
    dir.write("pipeline.json", j.dump(2) + "\n");
    if (sim.json) {
      j["wall_seconds"] = wall;
      j["out"] = dir.path().string();
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << fmt::format(
          "wafersim run: {} on {} ({} x {} PEs at {}), weights resident in SRAM, pipelined: "
          "every layer on its own column, all at once\n",
          m.spec.name, loaded.spec.name, loaded.spec.wafer.width, loaded.spec.wafer.height,
          units::format(loaded.spec.wafer.clock));
      for (const auto& s : p.stages)
        std::cout << fmt::format(
            "  stage         {}{}: column {}, {} rows, {} -> {} ({}{}); bound per token {} (latency), {} "
            "(interval)\n",
            s.gated ? s.name + " & " + s.up
            : s.qkv ? s.name + " & " + s.up + " & " + s.v
                    : s.name,
            s.fused.empty() ? "" : " + " + s.fused, s.x, s.rows, s.f_in, s.f_out,
            s.add ? fmt::format("residual add: the previous stage's outputs and stage {}'s input, carried", s.skip_from)
            : s.attention
                ? fmt::format("causal attention, {} heads / {} kv heads: every row its heads over the cached keys; KV "
                              "cache {} B per row ({} sequences x {} positions)",
                              s.heads, s.kv_heads, s.cache_bytes, s.cache_sequences, s.capacity)
            : s.embedding
                ? fmt::format("embedding of {} ids: every row its features of the table, copies the token's row{}",
                              s.vocabulary, s.positions ? " plus its position's" : "")
            : s.layer_norm ? "layernorm: every row the mean and variance of the whole input, then its features"
            : s.norm       ? "rmsnorm: every row the statistics of the whole input, then its features"
            : s.dot        ? "a dot product per output"
                           : "an FMAC per input",
            s.carry_out ? fmt::format("; then passes on {} skip values", s.carry_out) : std::string(), s.latency_bound,
            s.interval_bound);
      std::cout << fmt::format(
          "  tokens        {} (batch x sequence), in flight together{} on {} pipeline{} (bands of {} rows; {})\n",
          p.tokens, p.phases.size() > 1 ? " within each phase" : "", p.replicas, p.replicas == 1 ? "" : "s",
          p.stages.front().rows, models::resident::to_string(p.cut));
      if (p.phases.size() > 1) {
        std::vector<std::uint64_t> decode_steps(r.phase_cycles.begin() + 1, r.phase_cycles.end());
        std::cout << fmt::format(
            "  phases        prefill of positions [0, {}) of each sequence ({} tokens): {} cycles; then {} decode "
            "step{} of one token per sequence, each loaded when the one before has finished, reading the KV caches: "
            "{} cycles\n",
            p.prompt, p.phases.front().tokens.size(), r.phase_cycles.front(), decode_steps.size(),
            decode_steps.size() == 1 ? "" : "s", fmt::join(decode_steps, ", "));
      }
      std::cout << fmt::format(
          "  cycles        {} simulated ({}), {:.0f} tokens/s; bound {} ({:.0f}% of the "
          "simulated cycles){}\n",
          r.cycles(), units::pretty(static_cast<double>(r.cycles()) / hz, "s"), tps, p.bound_cycles(),
          r.cycles() ? 100.0 * static_cast<double>(p.bound_cycles()) / static_cast<double>(r.cycles()) : 0.0,
          plan && p.phases.size() == 1 ? fmt::format(", the plan's {}", plan->prefill_cycles(m.spec.batch)) : "");
      std::cout << fmt::format(
          "  checks        {}\n",
          no_check ? std::string("off (--no-check)")
          : r.mismatches
              ? fmt::format("{} of {} outputs differ", r.mismatches, r.compared)
              : fmt::format(
                    "all {} outputs as expected (linear: models/reference's order; gelu, silu, relu: "
                    "the elementwise programs' order; swiglu, add: their programs'; rmsnorm, layernorm, attention, "
                    "embedding: models/reference rmsnorm_forward, layernorm_forward, attention_forward, "
                    "embedding_forward)",
                    r.compared));
      std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json, pipeline.json)\n",
                               dir.path().string());
    }
    if (r.mismatches)
      throw sim::SimulationError(fmt::format("{} of {} outputs differ from models/reference; first: {}", r.mismatches,
                                             r.compared, r.first_mismatch));
  }

  std::vector<std::string> with_sequence(std::uint64_t n) const {
    auto s = model.set;
    s.push_back(fmt::format("sequence={}", n));
    return s;
  }

  // With a decode run's parallel prefill, the prefill's steps (with `prefill_data`) run first
  // and the executor then continues with `cm` on the same wafer.
  void run_compiled(const platforms::LoadedPlatform& loaded, const models::compiler::CompiledModel& cm,
                    platforms::runtime::HostData data, const models::resident::ResidentPlan* plan = nullptr,
                    const models::resident::ResidentDecode* decode = nullptr,
                    platforms::runtime::HostData prefill_data = {}) const {
    std::vector<std::pair<std::string, platforms::runtime::Check>> decode_checks;
    const bool resident = cm.options.placement == models::compiler::PlacementKind::Resident;
    platforms::BuildOptions build = sim.build_options();
    build.routes = cm.routes;
    build.timing_only = timing_only;
    const bool check = !no_check && !timing_only;
    RunDir dir = sim.run_dir("run");
    // Traces: windows start at one cycle and double (the length is known only afterwards);
    // each layer step becomes a phase on the timeline.
    sim::trace::TraceOptions trace_options = trace.options();
    if (trace_options.any() && trace_options.window_cycles == 0) {
      trace_options.window_cycles = 1;
      if (!trace.max_windows_given()) trace_options.max_windows = 200;
    }
    std::unique_ptr<platforms::RunTrace> tracing;
    if (trace_options.any()) {
      tracing = std::make_unique<platforms::RunTrace>(trace_options, dir.path(), loaded.spec, 0);
      tracing->configure(build);
    }
    sim::stats::Group root("");
    platforms::Cluster cluster("cluster", loaded.spec, build, root);
    auto& wafer = cluster.wafer(0);
    if (tracing) tracing->attach(wafer, 0);
    const models::compiler::CompiledModel* prefill = decode && decode->prefill ? &decode->prefill->cm : nullptr;
    platforms::runtime::Executor exec(prefill ? *prefill : cm, wafer,
                                      prefill ? std::move(prefill_data) : std::move(data), {check});
    exec.add_stats(prefill ? wafer.stats().group("model").group("prefill") : wafer.stats().group("model"));
    std::vector<const sim::Engine*> engines;
    for (std::size_t i = 0; i < cluster.wafer_count(); ++i) engines.push_back(&cluster.wafer(i).engine());

    Progress progress("run", 0, "cycles", Progress::terminal() && !sim.json);
    RunLimits limits = sim.limits();
    limits.stop_at_last_event = true;
    double wall = 0;
    auto write = [&](const std::string& status) {
      write_run_files(dir, loaded, root, invocation_text(), wall, wafer.engine().cycles(), status);
      nlohmann::ordered_json j = mapping_json(cm, loaded.spec.name);
      j["results"] = run_json(cm, exec.results());
      dir.write("model.json", j.dump(2) + "\n");
      if (tracing) {
        for (const auto& r : exec.results())
          tracing->phase(0, r.name(), sim::Cycle(r.start), sim::Cycle(r.end),
                         {sim::trace::Arg::num("bound_cycles", static_cast<double>(r.bound.cycles)),
                          sim::trace::Arg::num("flops", static_cast<double>(r.executed_flops))});
        tracing->finish(wafer.engine().cycles());
      }
    };
    try {
      const sc_core::sc_time load = exec.load_inputs();
      if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
      sc_core::sc_start(load);
      // Every step of the executor's current model; `after(i)` once step i has finished.
      auto run_steps = [&](const std::function<void(std::size_t)>& after) {
        for (std::size_t i = 0; i < exec.steps(); ++i) {
          exec.start(i);
          if (exec.has_code(i))
            wall += run_simulation(wafer.engine(), engines, sim::Cycle::never(), limits, progress).wall_seconds;
          exec.finish(i);
          after(i);
        }
      };
      platforms::inference::PrefillKv kv;
      if (prefill) {
        // The prefill, then its keys and values (read for the fills' checks) and the decode
        // steps' token ids through the host socket.
        run_steps([](std::size_t) {});
        if (check) kv = platforms::inference::read_prefill_kv(exec, *decode);
        exec.continue_with(cm, std::move(data));
        exec.add_stats(wafer.stats().group("model"));
        sc_core::sc_start(exec.load_inputs());
      }
      run_steps([&](std::size_t i) {
        if (decode && check)
          for (auto& c : platforms::inference::check_resident_step(exec, *decode, i, prefill ? &kv : nullptr))
            decode_checks.emplace_back(exec.results().back().name(), std::move(c));
      });
    } catch (const sim::LimitReached&) {
      write("limit");
      throw;
    } catch (const sim::SimulationError&) {
      write("error");
      throw;
    }
    std::uint64_t failed = 0, compared = 0;
    std::string first;
    for (const auto& r : exec.results())
      for (const auto& c : r.checks) {
        compared += c.compared;
        if (c.passed()) continue;
        failed += c.mismatches;
        if (first.empty()) first = fmt::format("{}: {}: {}", r.name(), c.what, c.first_mismatch);
      }
    for (const auto& [name, c] : decode_checks) {
      compared += c.compared;
      if (c.passed()) continue;
      failed += c.mismatches;
      if (first.empty()) first = fmt::format("{}: {}: {}", name, c.what, c.first_mismatch);
    }
    write(failed ? "error" : "ok");
    const std::uint64_t end = exec.results().empty() ? 0 : exec.results().back().end;
    if (sim.json) {
      nlohmann::ordered_json j;
      j["platform"] = loaded.spec.name;
      j["model"] = cm.model.name;
      j["cycles"] = end;
      j["timing_only"] = timing_only;
      j["sram_allocated_bytes"] = wafer.cores().sram_allocated_bytes();
      j["simulated_seconds"] = static_cast<double>(end) / loaded.spec.wafer.clock.hz;
      j["wall_seconds"] = wall;
      j["checked"] = compared;
      j["mismatches"] = failed;
      j["steps"] = run_json(cm, exec.results());
      if (decode)
        j["inference"] = decode_run_json(*decode, exec.results(), loaded.spec.wafer.clock.hz);
      else if (resident)
        j["inference"] = resident_run_json(cm, exec.results(), plan, loaded.spec.wafer.clock.hz);
      j["out"] = dir.path().string();
      if (tracing) j["trace"] = tracing->dir().string();
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << fmt::format(
          "wafersim run: {} on {} ({} x {} PEs at {}), {}, {}\n", cm.model.name, loaded.spec.name,
          loaded.spec.wafer.width, loaded.spec.wafer.height, units::format(loaded.spec.wafer.clock),
          resident ? "weights resident in SRAM" : "weight streaming",
          cm.options.training ? "one training step (forward and backward)"
          : decode && prefill ? "inference: the prompt in one parallel prefill (its keys and values copied into the "
                                "KV caches), then decode steps"
          : decode            ? "inference: the prompt token by token (filling the KV caches), then decode steps"
          : resident          ? "inference: prefill of the prompt"
                              : "inference (forward)");
      std::cout << fmt::format("  layout        {}\n", prefill ? prefill->layout_reason : cm.layout_reason);
      if (cm.model.sparsity.any())
        std::cout << fmt::format(
            "  sparsity      {} sparse layer(s): applies to training runs (--train); these programs are dense\n",
            cm.model.sparsity.layers.size());
      print_run(std::cout, cm, exec.results());
      std::cout << fmt::format("  cycles        {} ({} simulated), wall time {:.3f} s\n", end,
                               units::pretty(static_cast<double>(end) / loaded.spec.wafer.clock.hz, "s"), wall);
      if (decode) {
        print_decode_run(std::cout, *decode, exec.results(), loaded.spec.wafer.clock.hz);
        std::uint64_t n = 0, filled = 0;  // elements checked by attention steps, by the fills
        for (const auto& dc : decode_checks)
          (dc.first.find(".kv_fill") != std::string::npos ? filled : n) += dc.second.compared;
        if (check)
          std::cout << fmt::format(
              "  attention     {} steps, {} elements (outputs and the new KV cache entries) checked against "
              "models/reference attention over the cached keys{}\n",
              decode->attention.size(), n,
              decode->fills.empty()
                  ? ""
                  : fmt::format("; {} cache fill{}, {} elements, against the prefill's keys and values",
                                decode->fills.size(), decode->fills.size() == 1 ? "" : "s", filled));
      } else if (resident) {
        print_resident_run(std::cout, cm, exec.results(), plan, loaded.spec.wafer.clock.hz);
      }
      for (const auto& r : exec.results())
        for (const auto& c : r.checks)
          if (c.value)
            std::cout << fmt::format("  loss          {} (layer '{}': the wafer's sums, the host's log)\n", *c.value,
                                     r.layer);
      std::cout << fmt::format("  checks        {}\n",
                               timing_only ? std::string("off (--timing-only: no values computed)")
                               : no_check  ? std::string("off (--no-check)")
                               : failed    ? fmt::format("{} of {} result elements differ", failed, compared)
                                           : fmt::format("all {} result elements as expected", compared));
      std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json, model.json)\n",
                               dir.path().string());
      if (tracing)
        std::cout << fmt::format("  trace         {}/ ('wafersim report {}' makes an HTML page of it)\n",
                                 tracing->dir().string(), dir.path().string());
    }
    if (failed)
      throw sim::SimulationError(fmt::format("{} of {} result elements differ from the host's expectation; first: {}",
                                             failed, compared, first));
  }
};

}  // namespace

void add_run_command(CLI::App& app) {
  auto cmd = std::make_shared<RunCommand>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "simulate a platform and print a summary (default: the 'tiny' preset); with --model, one training step "
      "of a compiled model with per-layer cycles, bounds and checked results");
  cmd->platform.add(*sub, "tiny");
  cmd->sim.add(*sub);
  cmd->trace.add(*sub);
  sub->add_option("--cycles", cmd->cycles, "cycles to simulate when no workload ends the run by itself")
      ->capture_default_str();
  sub->add_option("--model,-m", cmd->model.model,
                  "run a model (YAML file or preset: tiny-mlp, tiny-transformer, ...) compiled for this platform")
      ->type_name("MODEL");
  cmd->model.add(*sub);
  sub->add_flag("--train", cmd->train,
                "weight-streaming training of --model on the platform's cluster (MemoryX, SwarmX, every system in "
                "data parallel); per-step breakdown");
  sub->add_option("--steps", cmd->steps, "training steps (with --train)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u));
  sub->add_flag("--functional", cmd->functional,
                "with --train: carry values: a synthetic task, each wafer's gradients, SwarmX sums, MemoryX optimizer "
                "(the model needs a loss layer)");
  sub->add_option("--wafer-arithmetic", cmd->wafer_arithmetic,
                  "with --train --functional: each wafer's gradients from the 'host' reference (models/reference) or "
                  "from the compiled 'programs' run on a simulated wafer per wafer and step with the weights MemoryX "
                  "streams (tiny models: steps x wafers cycle-level runs; every layer needs PE code)")
      ->capture_default_str();
  sub->add_option("--timing", cmd->timing,
                  "with --train: each layer's compute from 'simulated' (the compiled programs at cycle level on one "
                  "wafer) or 'bound' (the compiler's analytic bound; for layer kinds without PE code)")
      ->capture_default_str();
  sub->add_option("--optimizer", cmd->optimizer, "with --train: sgd, momentum, adam or adamw")->capture_default_str();
  sub->add_option("--learning-rate", cmd->learning_rate, "with --train")->capture_default_str();
  sub->add_option("--prompt-len", cmd->prompt_len,
                  "with --placement resident: prompt tokens per sample of the prefill (sets the model's sequence)")
      ->type_name("N")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
  sub->add_option("--decode-tokens", cmd->decode_tokens,
                  "with --placement resident --inference: run token by token, the prompt (--prompt-len, default: the "
                  "model's sequence minus K) filling each attention layer's KV cache in SRAM, then K decode steps")
      ->type_name("K")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
  sub->add_flag("--token-by-token", cmd->token_by_token,
                "with --decode-tokens: feed the prompt one position per step (each appending to the KV caches) "
                "instead of one parallel prefill whose keys and values are then copied into the caches");
  sub->add_flag(
      "--pipeline", cmd->pipeline,
      "with --placement resident --inference: simulate the pipeline: every linear layer (with a gelu, "
      "silu or relu after it; two of one input with swiglu after them as one stage; q, k and v of one "
      "input as one stage), causal attention (its KV cache in SRAM), rmsnorm, layernorm, residual add and a first "
      "embedding "
      "on its own column of PEs, all at once, the batch's tokens flowing from column to column over the "
      "fabric; with --decode-tokens K the last K positions as decode steps after the prefill; cycles, "
      "tokens/s and the bound (chains of these only)");
  sub->add_option("--pipeline-replicas", cmd->pipeline_replicas,
                  "with --pipeline: pipelines side by side on bands of rows, sharing the tokens (0: the number, up to "
                  "the tokens and rows, whose estimated run is shortest)")
      ->capture_default_str()
      ->type_name("K");
  sub->add_option("--pipeline-cut", cmd->pipeline_cut,
                  "with --pipeline: rows-out (each row computes some outputs over every input) or rows-in (each row "
                  "takes some inputs and continues the sums of the row above)")
      ->capture_default_str();
  sub->add_flag("--no-check", cmd->no_check,
                "timing only: do not compare results with the host's expectation (faster)");
  sub->add_flag("--timing-only", cmd->timing_only,
                "with --model: the PEs compute no values (SRAM holds only what the host and scalar stores write, and "
                "the compiler's chunk tables); "
                "every cycle, stall and access as in the functional run; no checks");
  sub->add_flag(
      "--plan-missing-code", cmd->plan_missing_code,
      "with --model: steps the code generator cannot lower (a kind without PE code, buffers that do "
      "not fit the SRAM) are planned analytically and not simulated instead of an error (with --timing-only or "
      "--no-check)");
  sub->footer(
      "Writes config.yaml, stats.json, stats.txt and run.json into the output folder (with --model also\n"
      "model.json: the mapping and every step's figures); 'wafersim run OUT/config.yaml' reproduces the run.\n"
      "With --model, inputs are loaded through the wafer's TLM-2.0 host socket, each layer's programs run\n"
      "in turn while weights stream in through the west edge channels and weight gradients out through the\n"
      "east ones, and every result is compared with the host's computation (exit code 3 if one differs).\n"
      "With --placement resident --inference, every linear layer's weights are placed in SRAM once (step\n"
      "'weights') and read there by the products; the run is the prefill of the prompt (--prompt-len), with\n"
      "prefill cycles and tokens/s, and the decode bound of the pipelined plan (wafersim compile\n"
      "--placement resident) beside them. With --decode-tokens K the prompt runs as one parallel prefill\n"
      "(one sample per column), its keys and values are copied into each attention layer's KV cache in\n"
      "SRAM, then K decode steps (one token per sample and step) append to it (--token-by-token: the prompt\n"
      "one position per step instead); prefill, cache fill and decode cycles, tokens/s, every attention\n"
      "step checked against models/reference over the cached keys. With --pipeline (chains of linear\n"
      "layers, with gelu, silu or relu after a layer, swiglu gated pairs, q/k/v projections with causal\n"
      "attention, rmsnorm, layernorm, residual adds and a first embedding: a decoder-only transformer) the\n"
      "pipeline itself runs: every layer on its own column of PEs, all at once, each token's activations\n"
      "flowing over the fabric to the next column (--pipeline-replicas K such pipelines on bands of rows\n"
      "share the tokens); attention rows keep each sequence's KV cache in SRAM; with --decode-tokens K the\n"
      "prefill of the other positions, then K decode steps of one token per sequence; cycles, tokens/s,\n"
      "the run's lower bound and the plan's, outputs checked bit for bit; pipeline.json holds them and\n"
      "each stage's bounds.");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
