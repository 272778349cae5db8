// `wafersim diff RUN_A RUN_B`: every statistic that differs between two runs, with its
// relative change, largest first (over run_diff.h).

#include <fmt/format.h>

#include <iostream>

#include "sim/app/cli.h"
#include "sim/app/run_diff.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace {

std::string value_cell(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "-"; }

std::string change_cell(const StatDifference& s) {
  if (!s.a) return "only in B";
  if (!s.b) return "only in A";
  if (const auto rel = s.relative()) return fmt::format("{:+.2f}%", 100 * *rel);
  return "from 0";
}

struct DiffCommand {
  std::string a, b;
  bool json = false;
  bool exit_code = false;
  std::size_t top = 0;

  int execute() const {
    const RunDiff d = diff_runs(a, b);
    if (json) {
      std::cout << to_json(d).dump(2) << "\n";
    } else {
      std::cout << fmt::format("wafersim diff: {} of {} statistics differ\n  A  {}\n  B  {}\n", d.differences.size(),
                               d.compared, d.a.string(), d.b.string());
      const std::size_t n = top ? std::min(top, d.differences.size()) : d.differences.size();
      if (n) std::cout << fmt::format("{:<60} {:>14} {:>14} {:>11}  {}\n", "statistic", "A", "B", "change", "unit");
      for (std::size_t i = 0; i < n; ++i) {
        const auto& s = d.differences[i];
        std::cout << fmt::format("{:<60} {:>14} {:>14} {:>11}  {}\n", s.path, value_cell(s.a), value_cell(s.b),
                                 change_cell(s), s.unit);
      }
      if (n < d.differences.size())
        std::cout << fmt::format("  ... {} more (--top 0 lists all)\n", d.differences.size() - n);
    }
    return exit_code && !d.differences.empty() ? 1 : 0;
  }
};

}  // namespace

void add_diff_command(CLI::App& app) {
  auto cmd = std::make_shared<DiffCommand>();
  CLI::App* sub = app.add_subcommand(
      "diff", "compare two runs' statistics: every statistic that differs with its relative change, largest first");
  sub->add_option("run_a", cmd->a, "the first run folder (or its stats.json)")->required()->type_name("RUN_A");
  sub->add_option("run_b", cmd->b, "the second run folder (or its stats.json)")->required()->type_name("RUN_B");
  sub->add_flag("--json", cmd->json,
                "print one JSON object: a, b, compared, differing, differences [{path, unit, a, b, delta, relative}]");
  sub->add_option("--top", cmd->top, "list at most this many (0: all)")->capture_default_str();
  sub->add_flag("--exit-code", cmd->exit_code, "exit with 1 when the runs differ (0 when identical)");
  sub->footer(
      "Statistics are compared leaf by leaf: a vector's elements as PATH.N, a distribution's fields as\n"
      "PATH.mean, PATH.p99, ... A statistic of one run only is listed first, then the largest relative change\n"
      "(B - A) / |A| (a change from 0 before the rest), then the largest absolute change.\n"
      "Examples:\n"
      "  wafersim diff base/ faster-clock/\n"
      "  wafersim diff base/ faster-clock/ --top 10\n"
      "  wafersim diff base/ rerun/ --exit-code     exit 1 if anything differs");
  sub->callback([cmd] {
    const int code = cmd->execute();
    if (code) throw CLI::RuntimeError(code);
  });
}

}  // namespace wafersim::app
