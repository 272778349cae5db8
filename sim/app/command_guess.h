#pragma once
// Names an unknown command before CLI11 parses the line (CLI11 would only say that a
// subcommand is required), with the closest command as a suggestion.

#include <CLI/CLI.hpp>

#include <string>

namespace wafersim::app {

// The error for argv when its first word is not an option and names no command of `app`
// ("unknown command 'rnu'; did you mean 'run'?"); empty when the line names a command or
// starts with an option.
std::string unknown_command_error(const CLI::App& app, int argc, char** argv);

}  // namespace wafersim::app
