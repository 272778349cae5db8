#pragma once
// A sweep specification as read from YAML: the base platform, the workload command, the
// parameters and how they combine, constraints, metrics and the per-point timeout.
// docs/sweeps.md describes the file format.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/app/sweep/catalog.h"
#include "sim/app/sweep/constraint.h"
#include "sim/app/sweep/value.h"
#include "sim/config/node.h"
#include "sim/units/quantity.h"

namespace wafersim::app::sweep {

// How numbers drawn or stepped in a range are written back as text.
struct NumberFormat {
  bool integer = false;                       // round to whole numbers
  std::optional<units::Dimension> dimension;  // a quantity: formatted with its unit
  // `digits` significant digits; data sizes become whole bytes and cycle counts whole cycles.
  [[nodiscard]] std::string format(double value, int digits = 12) const;
};

// Significant digits of a value drawn from a continuous range.
inline constexpr int kSampledDigits = 6;

// A numeric range of a parameter, in the unit its ends were written in (base units for
// quantities).
struct Range {
  double from = 0, to = 0;
  bool log = false;
  NumberFormat format;
  sim::config::Location location;
  // The value at fraction u in [0, 1] of the range, with kSampledDigits significant digits
  // (integers: every whole number in the range equally likely for uniform u).
  [[nodiscard]] Value at(double u) const;
};

struct Parameter {
  enum class Target { Platform, Option, Seed };
  std::string key;  // "fabric.queue_depth", "workload.rate", "workload.seed"
  sim::config::Location location;
  Target target = Target::Platform;
  std::string option;          // Target::Option: the command's option name ("rate")
  bool flag = false;           // Target::Option: the option takes no value (values are true/false)
  std::string unit;            // appended to each (bare) value when passed to the workload
  std::vector<Value> values;   // listed, or stepped from a range
  std::optional<Range> range;  // a continuous range, sampled (random and latin-hypercube only)
  // The text passed to the workload for value `v` ("2" with unit "cycles" -> "2 cycles").
  [[nodiscard]] std::string argument(const Value& v) const { return unit.empty() ? v.text : v.text + " " + unit; }
};

enum class Combine { Grid, Zip, Random, LatinHypercube };
const char* to_string(Combine c);

struct Metric {
  std::string name;  // column name
  std::string path;  // dotted path into stats.json "stats", or "summary.KEY" into the --json summary
  sim::config::Location location;
};

struct Constraint {
  Expression expression;
  sim::config::Location location;
};

struct Spec {
  std::string file;  // as given
  std::string name;
  std::string description;
  std::string platform;  // a preset name or an absolute path
  sim::config::Location platform_location;
  std::vector<std::pair<std::string, Value>> set;  // fixed platform overrides, in order

  std::string command;
  sim::config::Location command_location;
  std::vector<std::pair<std::string, Value>> options;  // fixed workload options, in order
  Value seed;                                          // the workload's --seed
  std::vector<std::string> wrapper;                    // program (and arguments) each point runs under

  std::vector<Parameter> parameters;
  Combine combine = Combine::Grid;
  std::uint64_t samples = 0;      // random, latin-hypercube
  std::uint64_t sample_seed = 1;  // random, latin-hypercube
  std::vector<Constraint> constraints;
  std::vector<Metric> metrics;
  double timeout_seconds = 0;  // per point; 0: none
};

// Reads and checks a sweep file (with `base:` inheritance). Throws sim::config::ConfigError
// with every problem found, each at its file:line:col: unknown keys (with a suggestion),
// unknown platform keys, commands and options, malformed ranges, constraints naming nothing.
Spec read_spec(const std::string& path, const Catalog& catalog);

// True when `root` looks like a sweep file (a top-level `sweep:` mapping).
bool is_sweep_document(const sim::config::Node& root);

}  // namespace wafersim::app::sweep
