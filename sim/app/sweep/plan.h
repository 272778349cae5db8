#pragma once
// A sweep ready to run: the specification, its points and the exact workload command line
// of each, checked against the platform schema and the workload's options.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/app/sweep/catalog.h"
#include "sim/app/sweep/expand.h"
#include "sim/app/sweep/spec.h"

namespace wafersim::app::sweep {

struct PlannedPoint {
  std::size_t index = 0;
  std::vector<std::pair<std::string, std::string>> params;  // parameter key -> value as written (no unit)
  // The workload command line after the program name, without --out:
  // COMMAND PLATFORM [--set KEY=VALUE]... [OPTION...] --seed S --json
  std::vector<std::string> args;
};

class Plan {
 public:
  // Reads and expands `spec_path` and checks the points' platforms and command lines: every
  // point, or only point `only` (what `--point` needs). Throws ConfigError listing each
  // distinct problem at the place in the sweep file that caused it.
  static Plan make(const std::string& spec_path, const Catalog& catalog, std::optional<std::size_t> only = {});

  [[nodiscard]] const Spec& spec() const { return spec_; }
  [[nodiscard]] const std::vector<PlannedPoint>& points() const { return points_; }
  [[nodiscard]] std::size_t candidates() const { return candidates_; }
  [[nodiscard]] std::size_t skipped() const { return skipped_; }
  // Identifies what the points run: the same for two specifications that expand to the same
  // command lines (metrics, timeout and wrapper may differ).
  [[nodiscard]] const std::string& fingerprint() const { return fingerprint_; }

  // The sweep's description for its output folder (sweep.json).
  [[nodiscard]] nlohmann::ordered_json to_json() const;

 private:
  Spec spec_;
  std::vector<PlannedPoint> points_;
  std::size_t candidates_ = 0, skipped_ = 0;
  std::string fingerprint_;
};

// "key=value, key=value" for messages.
std::string describe(const PlannedPoint& p);

}  // namespace wafersim::app::sweep
