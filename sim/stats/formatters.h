#pragma once
// Formatters for the statistics tree, kept apart from the statistics themselves.

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

#include "sim/stats/stats.h"

namespace wafersim::sim::stats {

// Values only, nested by group: {"cluster": {"wafer0": {"engine": {"cycles": 1000}}}}.
// Distributions become {"samples", "mean", "min", "p50", "p99", "max"}; vectors, arrays.
nlohmann::json to_json(const Group& root);
// The same values in the tree's order (groups and statistics as they were added), for a tree
// rebuilt elsewhere with add_recorded to list them as the original does.
nlohmann::ordered_json to_ordered_json(const Group& root);

// Unit and description of every statistic, keyed by dotted path.
nlohmann::json describe_json(const Group& root);

// The stats file: {"format": "wafersim-stats/1", "stats": ..., "descriptions": ...}.
// Deterministic: same model state, same bytes.
std::string stats_file_json(const Group& root);

// One line per statistic: "path  value  # description (unit)"; vectors as sum/mean/max.
void write_text(std::ostream& out, const Group& root);

}  // namespace wafersim::sim::stats
