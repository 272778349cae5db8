#pragma once
// The differences between two runs' statistics (their stats.json): every statistic whose
// value differs, with its relative change, largest first. `wafersim diff` prints it, the
// report's --vs section shows it, and wafersim.diff in Python computes the same table.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace wafersim::app {

// One statistic's leaf: a scalar, a vector's element (path.N) or a distribution's field
// (path.mean, path.p99, ...), with the unit its statistic declares.
struct StatDifference {
  std::string path;
  std::string unit;
  std::optional<double> a, b;  // absent: the run has no such statistic (or it is null)
  // (b - a) / |a|; absent when a is 0 or either side is missing.
  [[nodiscard]] std::optional<double> relative() const;
};

struct RunDiff {
  std::filesystem::path a, b;               // the two stats.json files
  std::size_t compared = 0;                 // leaves in either run
  std::vector<StatDifference> differences;  // largest relative change first (see diff_runs)
};

// The stats.json of a run folder, or `path` itself when it names a file. Throws
// sim::InputError naming the file when it is missing or not a wafersim stats file.
nlohmann::json read_stats_file(const std::filesystem::path& path);

// Every leaf of both runs' statistics that differs. Ordered by: present in one run only
// first, then |relative change| (a change from 0 counts as the largest), then |b - a|,
// then path; so the order is the same on every machine.
RunDiff diff_runs(const std::filesystem::path& a, const std::filesystem::path& b);

// {"a", "b", "compared", "differing", "differences": [{path, unit, a, b, delta, relative}]}
// (missing values and undefined changes as null).
nlohmann::ordered_json to_json(const RunDiff& d);

}  // namespace wafersim::app
