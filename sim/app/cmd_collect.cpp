// `wafersim collect`: merge the points of a sweep folder into one CSV and one JSON-lines file.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "sim/app/cli.h"
#include "sim/app/sweep/collect.h"

namespace wafersim::app {
namespace {

struct CollectCommand {
  std::string dir;
  std::string csv, jsonl;
  bool json = false;

  void execute() const {
    auto s = sweep::collect(sweep::SweepDir(dir), csv, jsonl);
    for (const auto& m : s.missing_metrics)
      std::cerr << fmt::format("wafersim collect: warning: no point has the metric {}\n", m);
    if (json) {
      nlohmann::ordered_json j;
      j["points"] = s.points;
      j["ok"] = s.ok;
      j["failed"] = s.failed;
      j["running"] = s.running;
      j["pending"] = s.pending;
      j["csv"] = s.csv.string();
      j["jsonl"] = s.jsonl.string();
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << fmt::format("{} points: {} ok, {} failed, {} running, {} pending\n  wrote {} and {}\n", s.points, s.ok,
                             s.failed, s.running, s.pending, s.csv.string(), s.jsonl.string());
  }
};

}  // namespace

void add_collect_command(CLI::App& app) {
  auto cmd = std::make_shared<CollectCommand>();
  CLI::App* sub = app.add_subcommand("collect", "merge a sweep folder's points into one CSV and one JSON-lines file");
  sub->add_option("dir", cmd->dir, "the sweep folder (holds sweep.json)")->required();
  sub->add_option("--csv", cmd->csv, "the CSV file to write (default: DIR/results.csv)")->type_name("FILE");
  sub->add_option("--jsonl", cmd->jsonl, "the JSON-lines file to write (default: DIR/results.jsonl)")
      ->type_name("FILE");
  sub->add_flag("--json", cmd->json, "print the counts as one JSON object on stdout");
  sub->footer(
      "One row per point, in point order: index, the parameters, status (ok, failed, crashed, timeout, running,\n"
      "pending), exit_code, wall_seconds and the metrics named in the sweep file (read afresh from each point).\n"
      "Plot with scripts/plot_sweep.py.");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
