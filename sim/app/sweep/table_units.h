#pragma once
// The numbers and units of a sweep table's columns: parameter values written with a unit
// ("1.14556 GHz", "16 KiB") become numbers in the column's base unit (Hz, B, b/s, s, cycles,
// params/s), and each metric takes the unit its statistic declares in stats.json.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace wafersim::app::sweep {

// A value as a table cell: a number, a boolean or a string, and its unit ("" for plain
// numbers, booleans and strings). Data sizes are given in bytes (B), other quantities in
// the base unit the configuration keeps them in.
struct Cell {
  nlohmann::json value;
  std::string unit;
};
Cell table_cell(const std::string& text);

// The unit of a metric path: for a path into the stats tree, the unit stats.json's
// "descriptions" give for it or its nearest ancestor (a distribution's p99, a vector's
// element); for a "summary." path, from its name (..._seconds: s, ...cycles: cycles); else "".
std::string metric_unit(const nlohmann::json& stats_file, const std::string& path);

// The metrics' units read from the stats.json in `point_dir` ("" for each when unreadable).
std::vector<std::string> metric_units(const std::filesystem::path& point_dir,
                                      const std::vector<std::pair<std::string, std::string>>& metrics);

}  // namespace wafersim::app::sweep
