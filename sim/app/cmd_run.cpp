// `wafersim run`: build a platform and simulate it.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "platforms/cluster.h"
#include "platforms/run_trace.h"
#include "sim/app/cli.h"
#include "sim/app/trace_args.h"
#include "sim/units/quantity.h"

namespace wafersim::app {
namespace {

struct RunCommand {
  PlatformArgs platform;
  SimArgs sim;
  TraceArgs trace;
  std::uint64_t cycles = 10000;

  void execute() const {
    auto loaded = platform.load();
    const sim::trace::TraceOptions trace_options = trace.options();
    RunDir dir = RunDir::create(sim.out, "run");
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

    const double rate = outcome.wall_seconds > 0 ? static_cast<double>(outcome.cycles.count()) / outcome.wall_seconds : 0;
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
    std::cout << fmt::format("  cycles        {} ({} simulated)\n", outcome.cycles.count(),
                             units::pretty(static_cast<double>(outcome.cycles.count()) / loaded.spec.wafer.clock.hz, "s"));
    std::cout << fmt::format("  wall time     {:.3f} s ({})\n", outcome.wall_seconds, units::pretty(rate, "cycles/s"));
    std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json)\n", dir.path().string());
  }
};

}  // namespace

void add_run_command(CLI::App& app) {
  auto cmd = std::make_shared<RunCommand>();
  CLI::App* sub = app.add_subcommand("run", "simulate a platform and print a summary (default: the 'tiny' preset)");
  cmd->platform.add(*sub, "tiny");
  cmd->sim.add(*sub);
  cmd->trace.add(*sub);
  sub->add_option("--cycles", cmd->cycles, "cycles to simulate when no workload ends the run by itself")
      ->capture_default_str();
  sub->footer("Writes config.yaml, stats.json, stats.txt and run.json into the output folder;\n"
              "'wafersim run OUT/config.yaml' reproduces the run.");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
