#pragma once
// Reads a sweep's metrics out of a point folder: dotted paths into the "stats" tree of
// stats.json ("cluster.wafer0.cycles", "...latency.p99", "...per_port.3"), or
// "summary.KEY" into the command's --json summary (the point's stdout.txt).

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace wafersim::app::sweep {

struct MetricValues {
  nlohmann::ordered_json values = nlohmann::ordered_json::object();  // name -> value (null when missing)
  std::vector<std::string> missing;  // "path: not found; did you mean 'x'?" for each missing metric
};

// `metrics` are (column name, path) pairs. With `hints`, each missing metric says why and
// suggests the closest path there is (a walk of every path of the point's files: slow).
MetricValues read_metrics(const std::filesystem::path& point_dir,
                          const std::vector<std::pair<std::string, std::string>>& metrics, bool hints = true);

// The path of `known` closest to `path`: by the whole path, else by its last component (the
// statistic's name, under another group); "" when none is close.
std::string closest_path(const std::string& path, const std::vector<std::string>& known);

// The value at a dotted path in a JSON tree, or null.
const nlohmann::json* find_path(const nlohmann::json& root, const std::string& path);

}  // namespace wafersim::app::sweep
