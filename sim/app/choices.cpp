#include "sim/app/choices.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/config/diagnostics.h"

namespace wafersim::app {

CLI::Validator one_of(const std::vector<std::string>& names) {
  std::string list = "{";
  for (std::size_t i = 0; i < names.size(); ++i) list += (i ? "," : "") + names[i];
  list += "}";
  return CLI::Validator(
      [names, list](std::string& word) -> std::string {
        if (std::find(names.begin(), names.end(), word) != names.end()) return {};
        const std::string hint = sim::config::closest_match(word, names);
        return fmt::format("'{}' is not one of {}{}", word, list,
                           hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint));
      },
      list, "one_of");
}

}  // namespace wafersim::app
