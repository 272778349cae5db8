#include "sim/app/sweep/table_units.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "sim/app/sweep/value.h"
#include "sim/config/diagnostics.h"
#include "sim/config/input_file.h"
#include "sim/units/quantity.h"

namespace wafersim::app::sweep {
namespace {

// Whole numbers as integers, so a cell reads "1145560000", not "1145560000.0000002" (the
// product of the text's 1.14556 and the prefix's 1e9): within 1e-12 of a whole number.
nlohmann::json number(double v) {
  const double r = std::round(v);
  if (std::fabs(r) < 9.0e15 && std::fabs(v - r) <= 1e-12 * std::fabs(v)) return static_cast<std::int64_t>(r);
  return v;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

Cell table_cell(const std::string& text) {
  const Scalar s = interpret(text);
  if (s.kind == Scalar::Kind::Boolean) return {s.boolean, ""};
  if (s.kind == Scalar::Kind::String) return {text, ""};
  double plain = 0;
  if (parse_number(text, plain)) return {number(plain), ""};
  using units::Dimension;
  const std::pair<Dimension, const char*> dims[] = {{Dimension::Frequency, "Hz"},  {Dimension::DataSize, "B"},
                                                    {Dimension::Bandwidth, "b/s"}, {Dimension::Duration, "s"},
                                                    {Dimension::Cycles, "cycles"}, {Dimension::ParamRate, "params/s"}};
  for (const auto& [dim, unit] : dims) {
    const auto r = units::parse(text, dim);
    if (!r.ok) continue;
    return {number(dim == Dimension::DataSize ? r.value / 8 : r.value), unit};
  }
  return {text, ""};
}

std::string metric_unit(const nlohmann::json& stats_file, const std::string& path) {
  if (path.rfind("summary.", 0) == 0) {
    if (ends_with(path, "seconds")) return "s";
    if (ends_with(path, "cycles")) return "cycles";
    return "";
  }
  if (!stats_file.is_object() || !stats_file.contains("descriptions")) return "";
  const nlohmann::json& d = stats_file["descriptions"];
  std::string p = path;
  while (!p.empty()) {
    const auto it = d.find(p);
    if (it != d.end() && it->is_object()) return it->value("unit", "");
    const auto dot = p.rfind('.');
    if (dot == std::string::npos) break;
    p.resize(dot);
  }
  return "";
}

std::vector<std::string> metric_units(const std::filesystem::path& point_dir,
                                      const std::vector<std::pair<std::string, std::string>>& metrics) {
  nlohmann::json stats_file;
  const std::string file = (point_dir / "stats.json").string();
  if (sim::config::unreadable_reason(file).empty()) {
    try {
      stats_file = nlohmann::json::parse(
          sim::config::read_input_file(file, "a point's results", sim::config::kMaxJsonBytes), nullptr, false);
    } catch (const sim::config::ConfigError&) {
      stats_file = nullptr;  // units are a courtesy: a point's unreadable results leave them blank
    }
    if (stats_file.is_discarded()) stats_file = nullptr;
  }
  std::vector<std::string> out;
  for (const auto& m : metrics) out.push_back(metric_unit(stats_file, m.second));
  return out;
}

}  // namespace wafersim::app::sweep
