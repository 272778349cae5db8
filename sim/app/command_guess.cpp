#include "sim/app/command_guess.h"

#include <fmt/format.h>

#include <vector>

#include "sim/config/diagnostics.h"

namespace wafersim::app {

std::string unknown_command_error(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return {};
  const std::string word = argv[1];
  if (word.empty() || word.front() == '-') return {};
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return {};
    names.push_back(sub->get_name());
  }
  const std::string hint = sim::config::closest_match(word, names);
  return fmt::format("wafersim: unknown command '{}'{}\nRun 'wafersim --help' for the commands.", word,
                     hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint));
}

}  // namespace wafersim::app
