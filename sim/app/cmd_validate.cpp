// `wafersim validate`: check configuration files and report every error.

#include <fmt/format.h>

#include <iostream>

#include "sim/app/cli.h"
#include "sim/app/validators.h"
#include "sim/config/diagnostics.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace {

struct ValidateCommand {
  std::vector<std::string> files;
  std::vector<std::string> set;

  void execute() const {
    int failed = 0;
    for (const auto& f : files) {
      try {
        std::string kind = validate_file(f, set);
        std::cout << fmt::format("{}: ok ({})\n", f, kind);
      } catch (const sim::Error& e) {
        std::cerr << e.what() << "\n";
        ++failed;
      }
    }
    if (failed) throw sim::InputError(fmt::format("{} of {} file(s) failed validation", failed, files.size()));
  }
};

}  // namespace

void add_validate_command(CLI::App& app) {
  auto cmd = std::make_shared<ValidateCommand>();
  CLI::App* sub =
      app.add_subcommand("validate", "check configuration files: platforms, models, sweeps and PE programs");
  sub->add_option("files", cmd->files, "files to check")->required();
  sub->add_option("--set", cmd->set, "override applied to each file before checking (repeatable)")
      ->type_name("KEY=VALUE");
  sub->footer(
      "Prints FILE:LINE:COL: error: key.path: message for every problem; exit code 2 if any.\n"
      "Examples:\n"
      "  wafersim validate my-platform.yaml\n"
      "  wafersim validate examples/models/mlp-chain.yaml sweeps/fabric-queue-hop.yaml\n"
      "  wafersim validate my-platform.yaml --set fabric.queue_depth=4");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
