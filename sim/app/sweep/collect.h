#pragma once
// Merges the points of a sweep folder into one table: a CSV file and a JSON-lines file, one
// row per point (index, parameters, status, exit code, wall time, metrics), in point order.

#include <cstddef>
#include <filesystem>
#include <string>

#include "sim/app/sweep/sweep_dir.h"

namespace wafersim::app::sweep {

struct CollectSummary {
  std::size_t points = 0, ok = 0, failed = 0, pending = 0, running = 0;
  std::filesystem::path csv, jsonl;
  // A metric that no finished point has: "PATH: not found; did you mean 'X'?" (from the first
  // finished point's files).
  std::vector<std::string> missing_metrics;
};

// Writes `csv` and `jsonl` (defaults DIR/results.csv and DIR/results.jsonl when empty)
// atomically. Metrics are read afresh from each finished point's folder with the metric
// list of sweep.json; unfinished points get their state and empty metrics.
CollectSummary collect(const SweepDir& dir, const std::string& csv = {}, const std::string& jsonl = {});

// One CSV field (RFC 4180 quoting) of a JSON value: numbers as written, strings bare, null
// empty, objects and arrays as JSON text.
std::string csv_field(const nlohmann::json& v);

}  // namespace wafersim::app::sweep
