#include "sim/app/run_diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "sim/config/input_file.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace fs = std::filesystem;

namespace {

void flatten(const nlohmann::json& j, const std::string& prefix, std::map<std::string, std::optional<double>>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(*it, prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) flatten(j[i], fmt::format("{}.{}", prefix, i), out);
  } else if (j.is_number()) {
    out[prefix] = j.get<double>();
  } else if (j.is_boolean()) {
    out[prefix] = j.get<bool>() ? 1.0 : 0.0;
  } else {
    out[prefix] = std::nullopt;
  }
}

std::string unit_of(const nlohmann::json& descriptions, std::string path) {
  while (!path.empty()) {
    const auto it = descriptions.find(path);
    if (it != descriptions.end() && it->is_object()) return it->value("unit", "");
    const auto dot = path.rfind('.');
    if (dot == std::string::npos) break;
    path.resize(dot);
  }
  return "";
}

// Sort key: 0 for a statistic of one run only, then by falling |relative change|.
double magnitude(const StatDifference& d) {
  if (!d.a || !d.b) return HUGE_VAL;
  if (*d.a == 0) return std::numeric_limits<double>::max();
  return std::fabs(*d.b - *d.a) / std::fabs(*d.a);
}

}  // namespace

std::optional<double> StatDifference::relative() const {
  if (!a || !b || *a == 0) return std::nullopt;
  return (*b - *a) / std::fabs(*a);
}

nlohmann::json read_stats_file(const fs::path& path) {
  if (!fs::exists(path)) throw sim::InputError(fmt::format("{}: no such run folder or stats.json", path.string()));
  const fs::path file = fs::is_directory(path) ? path / "stats.json" : path;
  if (fs::is_directory(path) && !fs::exists(file))
    throw sim::InputError(fmt::format("{}: cannot read the run folder's statistics (no stats.json)", file.string()));
  nlohmann::json j = nlohmann::json::parse(
      sim::config::read_input_file(file.string(), "the statistics", sim::config::kMaxJsonBytes), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("stats") || !j["stats"].is_object())
    throw sim::InputError(
        fmt::format("{}: not a wafersim statistics file (expected JSON with a \"stats\" object)", file.string()));
  return j;
}

RunDiff diff_runs(const fs::path& a, const fs::path& b) {
  const nlohmann::json ja = read_stats_file(a), jb = read_stats_file(b);
  RunDiff d;
  d.a = fs::is_directory(a) ? a / "stats.json" : a;
  d.b = fs::is_directory(b) ? b / "stats.json" : b;
  std::map<std::string, std::optional<double>> la, lb;
  flatten(ja["stats"], "", la);
  flatten(jb["stats"], "", lb);
  const nlohmann::json none = nlohmann::json::object();
  const nlohmann::json& da = ja.contains("descriptions") ? ja["descriptions"] : none;
  const nlohmann::json& db = jb.contains("descriptions") ? jb["descriptions"] : none;
  std::map<std::string, bool> paths;
  for (const auto& [p, v] : la) paths[p] = true;
  for (const auto& [p, v] : lb) paths[p] = true;
  d.compared = paths.size();
  for (const auto& [p, unused] : paths) {
    StatDifference s;
    s.path = p;
    if (auto it = la.find(p); it != la.end()) s.a = it->second;
    if (auto it = lb.find(p); it != lb.end()) s.b = it->second;
    if (s.a == s.b) continue;
    s.unit = unit_of(da, p);
    if (s.unit.empty()) s.unit = unit_of(db, p);
    d.differences.push_back(std::move(s));
  }
  std::stable_sort(d.differences.begin(), d.differences.end(), [](const StatDifference& x, const StatDifference& y) {
    const double mx = magnitude(x), my = magnitude(y);
    if (mx != my) return mx > my;
    const double ax = x.a && x.b ? std::fabs(*x.b - *x.a) : 0, ay = y.a && y.b ? std::fabs(*y.b - *y.a) : 0;
    if (ax != ay) return ax > ay;
    return x.path < y.path;
  });
  return d;
}

nlohmann::ordered_json to_json(const RunDiff& d) {
  nlohmann::ordered_json j;
  j["a"] = d.a.string();
  j["b"] = d.b.string();
  j["compared"] = d.compared;
  j["differing"] = d.differences.size();
  auto rows = nlohmann::ordered_json::array();
  for (const auto& s : d.differences) {
    nlohmann::ordered_json r;
    r["path"] = s.path;
    r["unit"] = s.unit;
    r["a"] = s.a ? nlohmann::ordered_json(*s.a) : nlohmann::ordered_json();
    r["b"] = s.b ? nlohmann::ordered_json(*s.b) : nlohmann::ordered_json();
    r["delta"] = s.a && s.b ? nlohmann::ordered_json(*s.b - *s.a) : nlohmann::ordered_json();
    const auto rel = s.relative();
    r["relative"] = rel ? nlohmann::ordered_json(*rel) : nlohmann::ordered_json();
    rows.push_back(std::move(r));
  }
  j["differences"] = std::move(rows);
  return j;
}

}  // namespace wafersim::app
