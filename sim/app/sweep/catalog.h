#pragma once
// The wafersim commands a sweep may run as its workload, described for validation.

#include <functional>
#include <string>
#include <vector>

namespace wafersim::app::sweep {

// One option of a workload command, by its long name without dashes ("cycles").
struct CommandOption {
  std::string name;
  bool flag = false;  // takes no value
  bool file = false;  // names a file (a relative one is taken relative to the sweep file)
  std::string help;
};

struct WorkloadCommand {
  std::string name;  // "run", "traffic", ...
  std::string summary;
  std::vector<CommandOption> options;  // those a sweep may set (not --out, --seed, --json, --set)
  [[nodiscard]] const CommandOption* find(const std::string& option) const {
    for (const auto& o : options)
      if (o.name == option) return &o;
    return nullptr;
  }
};

// Contract: `commands` lists every command a sweep may run; `check` parses a full workload
// command line (command name first, then the platform and options) exactly as the child
// process will, without running it, and returns "" or the parser's message.
struct Catalog {
  std::vector<WorkloadCommand> commands;
  std::function<std::string(const std::vector<std::string>&)> check;

  [[nodiscard]] const WorkloadCommand* find(const std::string& name) const {
    for (const auto& c : commands)
      if (c.name == name) return &c;
    return nullptr;
  }
};

}  // namespace wafersim::app::sweep
