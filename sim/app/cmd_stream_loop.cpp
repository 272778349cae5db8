// `wafersim stream-loop`: the weight-streaming training loop of a cluster (MemoryX, SwarmX,
// the wafers' edges) with model endpoints standing in for the wafers' compute, until the
// compiled layer programs run on them; prints the per-step breakdown.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>
#include <memory>

#include "memoryx/placement.h"
#include "platforms/cluster.h"
#include "platforms/run_trace.h"
#include "platforms/step_timeline.h"
#include "sim/app/choices.h"
#include "sim/app/cli.h"
#include "sim/app/progress.h"
#include "sim/app/trace_args.h"
#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::app {
namespace {

template <class T>
T quantity(const std::string& text, units::Dimension dim, const char* option) {
  const auto r = units::parse(text, dim);
  if (!r.ok) throw sim::InputError(fmt::format("{} '{}': {}", option, text, r.error));
  if constexpr (std::is_same_v<T, units::Bandwidth>) return units::Bandwidth{r.value};
  if constexpr (std::is_same_v<T, units::Duration>) return units::Duration{r.value};
}

struct StreamLoopCommand {
  PlatformArgs platform;
  SimArgs sim;
  TraceArgs trace;
  double params = 0;
  std::uint32_t layers = 4;
  std::uint32_t steps = 2;
  std::string forward = "50 Gb/s", backward = "25 Gb/s", loss = "2 us", optimizer = "adam";

  void execute() const {
    if (!(params >= 1) || std::floor(params) != params || params > 1e15)
      throw sim::InputError(fmt::format("--params: expected a whole number of parameters >= 1, found {}", params));
    const auto total = static_cast<std::uint64_t>(params);
    if (layers == 0 || layers > total)
      throw sim::InputError(fmt::format("--layers: expected 1 .. {}, found {}", total, layers));
    if (steps == 0 || steps > 1000) throw sim::InputError(fmt::format("--steps: expected 1 .. 1000, found {}", steps));
    platforms::edge::ModelEndpointConfig ec;
    ec.rates = platforms::edge::LayerRates{
        quantity<units::Bandwidth>(forward, units::Dimension::Bandwidth, "--forward-rate"),
        quantity<units::Bandwidth>(backward, units::Dimension::Bandwidth, "--backward-rate")};
    ec.loss_time = quantity<units::Duration>(loss, units::Dimension::Duration, "--loss-time");
    ec.layers = layers;
    ec.seed = sim.seed;
    memoryx::OptimizerConfig opt;
    opt.kind = memoryx::parse_optimizer_kind(optimizer);
    auto loaded = platform.load();
    const auto& spec = loaded.spec;
    std::vector<memoryx::LayerSpec> specs;
    for (std::uint32_t i = 0; i < layers; ++i)
      specs.push_back({fmt::format("layer{}", i), total / layers + (i < total % layers ? 1 : 0)});

    const sim::trace::TraceOptions trace_options = trace.options();
    RunDir dir = sim.run_dir("stream-loop");
    std::unique_ptr<platforms::RunTrace> tracing;
    if (trace_options.any()) {
      if (trace_options.vcd) throw sim::InputError("--trace vcd: this run has no wafer fabric to probe");
      // About one step's streaming time: weights twice through the planes' links.
      const double seconds = static_cast<double>(steps) * 2.0 * 4.0 * static_cast<double>(total) * 8.0 /
                             (static_cast<double>(spec.swarmx.planes) * spec.swarmx.port_bandwidth.bits_per_s);
      tracing = std::make_unique<platforms::RunTrace>(trace_options, dir.path(), spec,
                                                      static_cast<std::uint64_t>(seconds * spec.wafer.clock.hz));
    }
    sim::stats::Group root("");
    platforms::ClusterParts parts;
    parts.layers = specs;
    parts.optimizer = opt;
    parts.seed = sim.seed;
    parts.stand_ins = platforms::model_endpoints(ec);
    platforms::Cluster cluster("cluster", spec, std::move(parts), root);
    if (tracing) tracing->attach(cluster);
    Progress progress("stream-loop", 0, "steps", false);
    const platforms::StepTimeline timeline = platforms::run_training_steps(cluster, steps, sim.limits());
    platforms::add_stats(root.group("steps"), timeline);
    const sim::Picos end = sim::now();
    const auto cycles = static_cast<std::uint64_t>(std::ceil(end.seconds() * spec.wafer.clock.hz - 1e-9));
    write_run_files(dir, loaded, root, invocation_text(), progress.elapsed_seconds(), sim::Cycle(cycles), "ok");
    std::string trace_dir;
    if (tracing) {
      tracing->record_steps(cluster, timeline);
      tracing->finish(sim::Cycle(cycles));
      trace_dir = tracing->dir().string();
    }

    if (sim.json) {
      nlohmann::ordered_json j;
      j["platform"] = spec.name;
      j["systems"] = spec.cluster.systems;
      j["params"] = total;
      j["layers"] = layers;
      j["steps"] = platforms::to_json(timeline);
      j["simulated_seconds"] = end.seconds();
      j["out"] = dir.path().string();
      if (!trace_dir.empty()) j["trace"] = trace_dir;
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << fmt::format("wafersim stream-loop: {} ({} system{}, {} plane{}), {} parameters in {} layers, {}\n",
                             spec.name, spec.cluster.systems, spec.cluster.systems == 1 ? "" : "s", spec.swarmx.planes,
                             spec.swarmx.planes == 1 ? "" : "s", total, layers, memoryx::to_string(opt.kind));
    std::cout << fmt::format("  {:>4} {:>14} {:>14} {:>14} {:>14} {:>14}\n", "step", "time", "stream exp.",
                             "compute exp.", "reduce exp.", "optim. exp.");
    auto t = [](sim::Picos p) { return fmt::format("{:.3f} us", static_cast<double>(p.count()) / 1e6); };
    for (const auto& s : timeline.steps) {
      auto e = [&](platforms::Activity a) { return t(s.exposed[static_cast<std::size_t>(a)]); };
      std::cout << fmt::format("  {:>4} {:>14} {:>14} {:>14} {:>14} {:>14}\n", s.step, t(s.duration()),
                               e(platforms::Activity::Stream), e(platforms::Activity::Compute),
                               e(platforms::Activity::Reduce), e(platforms::Activity::Optimizer));
    }
    std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json)\n",
                             dir.path().string());
    if (!trace_dir.empty())
      std::cout << fmt::format("  trace         {}/ ('wafersim report {}' makes an HTML page of it)\n", trace_dir,
                               dir.path().string());
  }
};

}  // namespace

void add_stream_loop_command(CLI::App& app) {
  auto cmd = std::make_shared<StreamLoopCommand>();
  CLI::App* sub = app.add_subcommand(
      "stream-loop",
      "the weight-streaming training loop (MemoryX, SwarmX, wafer edges) with model endpoints standing in for the "
      "wafers' compute: per-step breakdown");
  cmd->platform.add(*sub, "tiny-cluster");
  cmd->sim.add(*sub);
  cmd->trace.add(*sub);
  sub->add_option("--params", cmd->params, "parameters of the model (e.g. 1e6)")->required();
  sub->add_option("--layers", cmd->layers, "split the parameters into this many equal layers")->capture_default_str();
  sub->add_option("--steps", cmd->steps, "training steps")->capture_default_str();
  sub->add_option("--forward-rate", cmd->forward,
                  "weight bytes a wafer consumes per second in the forward pass (its compute; 0 b/s: instantly)")
      ->capture_default_str();
  sub->add_option("--backward-rate", cmd->backward, "the same in the backward pass")->capture_default_str();
  sub->add_option("--loss-time", cmd->loss, "time between the forward and backward passes")->capture_default_str();
  sub->add_option("--optimizer", cmd->optimizer, "the update rule (decides the moments kept)")
      ->check(one_of({"sgd", "momentum", "adam", "adamw"}))
      ->capture_default_str();
  sub->footer(
      "Timing-only. MemoryX streams each layer's weights forward then backward through SwarmX to every system;\n"
      "each model endpoint consumes them at the given rates and returns one gradient chunk per backward chunk;\n"
      "SwarmX sums them on the way up and MemoryX runs the optimizer (docs/memoryx.md, docs/swarmx.md).\n"
      "Examples:\n"
      "  wafersim stream-loop tiny-cluster --params 2e6 --layers 4 --steps 2 --trace windows,timeline -o loop\n"
      "  wafersim report loop");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
