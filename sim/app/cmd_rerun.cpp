// `wafersim rerun DIR [--out NEW]`: repeats the run in DIR from the folder alone (its
// rerun.json and inputs/, rerun.h) by starting the same command again in this process's place.

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "sim/app/cli.h"
#include "sim/app/rerun.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace {

struct RerunCommand {
  std::string dir;
  std::string out;
  bool dry_run = false;

  void execute() const {
    const std::vector<std::string> args = rerun_args(dir, out);
    if (dry_run) {
      std::string line = "wafersim";
      for (const auto& a : args) line += " " + a;
      std::cout << line << "\n";
      return;
    }
    std::vector<char*> argv;
    std::string self = "/proc/self/exe";
    argv.push_back(self.data());
    std::vector<std::string> copies = args;
    for (auto& a : copies) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::cout.flush();
    std::cerr.flush();
    ::execv(self.c_str(), argv.data());
    throw sim::Error(sim::kExitInternal, fmt::format("rerun: cannot start wafersim again: {}", std::strerror(errno)));
  }
};

}  // namespace

void add_rerun_command(CLI::App& app) {
  auto cmd = std::make_shared<RerunCommand>();
  CLI::App* sub = app.add_subcommand(
      "rerun", "repeat a run from its folder alone: the same command, options and input files (same stats.json)");
  sub->add_option("run_dir", cmd->dir, "a run folder (holds rerun.json and inputs/)")->required()->type_name("DIR");
  sub->add_option("--out,-o", cmd->out, "the new run's folder (default: a new folder under wafersim-out/)")
      ->type_name("NEW");
  sub->add_flag("--dry-run", cmd->dry_run, "print the command line the rerun would run, and stop");
  sub->footer(
      "Every simulating command keeps its command line (run.json \"argv\") and a copy of each file it names\n"
      "(inputs/: platforms, models, programs, routes, and files they name by relative path) in its run folder;\n"
      "rerun starts the same command on those copies, so the files may have changed or moved since.\n"
      "Built-in presets come from the wafersim binary: rerun with the same version for the same statistics.\n"
      "Examples:\n"
      "  wafersim run tiny --model my-model.yaml -o first\n"
      "  wafersim rerun first --out again\n"
      "  wafersim diff first again --exit-code     exit 0: the statistics are identical");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
