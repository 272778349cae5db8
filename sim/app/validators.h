#pragma once
// Validation of any wafersim input file, by kind (explicit list, no self-registration).

#include <string>
#include <vector>

namespace wafersim::app {

// Validates `path` as the kind of file it is and returns that kind ("platform", ...).
// Throws the kind's error (sim::config::ConfigError for YAML) on any problem.
std::string validate_file(const std::string& path, const std::vector<std::string>& overrides);

}  // namespace wafersim::app
