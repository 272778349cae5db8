#include "sim/app/sweep/collect.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "sim/app/run_dir.h"
#include "sim/app/sweep/metrics.h"
#include "sim/app/sweep/table_units.h"
#include "sim/config/input_file.h"
#include "sim/errors.h"

namespace wafersim::app::sweep {
namespace fs = std::filesystem;

namespace {

std::string quote_csv(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos && (s.empty() || (s.front() != ' ' && s.back() != ' '))) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::json read_status(const fs::path& p) {
  try {
    auto j =
        nlohmann::json::parse(sim::config::read_input_file(p.string(), "a point's status", sim::config::kMaxJsonBytes));
    return j.is_object() ? j : nlohmann::json();
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json();
  }
}

// Each point's parameter cells (index -> one per parameter) and each column's unit: numbers
// in the column's base unit when every point's value is a quantity of one unit (or a plain
// number), the text as written otherwise.
struct ParamColumns {
  std::map<std::size_t, std::vector<nlohmann::json>> values;
  std::vector<std::string> units;
};

ParamColumns param_columns(const nlohmann::json& plan) {
  std::vector<std::pair<std::string, std::string>> keys;  // key, unit appended to bare values
  for (const auto& p : plan.at("parameters")) keys.emplace_back(p.at("key").get<std::string>(), p.value("unit", ""));
  ParamColumns out;
  std::vector<std::vector<Cell>> cells(keys.size());
  std::vector<std::vector<std::string>> texts(keys.size());
  std::vector<std::size_t> order;
  for (const auto& p : plan.at("points")) {
    order.push_back(p.at("index").get<std::size_t>());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const nlohmann::json& v = p.at("params").contains(keys[i].first) ? p.at("params").at(keys[i].first) : "";
      std::string text = v.is_string() ? v.get<std::string>() : v.dump();
      if (!keys[i].second.empty() && !text.empty()) text += " " + keys[i].second;
      cells[i].push_back(table_cell(text));
      texts[i].push_back(v.is_string() ? v.get<std::string>() : v.dump());
    }
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    bool numeric = !cells[i].empty();
    for (const Cell& c : cells[i]) numeric = numeric && c.value.is_number() && c.unit == cells[i].front().unit;
    out.units.push_back(numeric ? cells[i].front().unit : std::string());
    for (std::size_t r = 0; r < order.size(); ++r) {
      auto& row = out.values[order[r]];
      row.push_back(numeric || cells[i][r].value.is_boolean() ? cells[i][r].value : nlohmann::json(texts[i][r]));
    }
  }
  return out;
}

}  // namespace

std::filesystem::path units_path(const std::filesystem::path& csv) {
  std::filesystem::path p = csv;
  p.replace_extension();
  p += ".units.json";
  return p;
}

std::string csv_field(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return quote_csv(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return quote_csv(v.dump());
}

namespace {

CollectSummary collect_plan(const SweepDir& dir, const nlohmann::json& plan, const std::string& csv,
                            const std::string& jsonl);

}  // namespace

CollectSummary collect(const SweepDir& dir, const std::string& csv, const std::string& jsonl) {
  const nlohmann::json plan = dir.read_plan();
  try {
    return collect_plan(dir, plan, csv, jsonl);
  } catch (const nlohmann::json::exception& e) {
    throw sim::InputError(
        fmt::format("{}: not a plan as wafersim sweep writes it: {}", dir.plan_file().string(), e.what()));
  }
}

namespace {

CollectSummary collect_plan(const SweepDir& dir, const nlohmann::json& plan, const std::string& csv,
                            const std::string& jsonl) {
  CollectSummary sum;
  sum.csv = csv.empty() ? dir.root() / "results.csv" : fs::path(csv);
  sum.jsonl = jsonl.empty() ? dir.root() / "results.jsonl" : fs::path(jsonl);

  std::vector<std::string> params;
  for (const auto& p : plan.at("parameters")) params.push_back(p.at("key").get<std::string>());
  std::vector<std::pair<std::string, std::string>> metrics;
  for (const auto& m : plan.at("metrics"))
    metrics.emplace_back(m.at("name").get<std::string>(), m.at("path").get<std::string>());
  const ParamColumns columns = param_columns(plan);
  nlohmann::ordered_json units = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < params.size(); ++i) units[params[i]] = columns.units[i];
  units["wall_seconds"] = "s";
  bool metric_units_read = false;

  std::string csv_text = "index";
  for (const auto& p : params) csv_text += "," + quote_csv(p);
  csv_text += ",status,exit_code,wall_seconds";
  for (const auto& [name, path] : metrics) csv_text += "," + quote_csv(name);
  csv_text += "\n";
  std::string jsonl_text;
  std::vector<bool> seen(metrics.size(), false);
  std::optional<std::size_t> first_done;

  for (const auto& p : plan.at("points")) {
    const std::size_t index = p.at("index").get<std::size_t>();
    ++sum.points;
    auto state = dir.state(index);
    nlohmann::ordered_json row;
    row["index"] = index;
    nlohmann::ordered_json values = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < params.size(); ++i) values[params[i]] = columns.values.at(index).at(i);
    row["params"] = values;
    nlohmann::json exit_code, wall;
    nlohmann::ordered_json metric_values = nlohmann::ordered_json::object();
    for (const auto& [name, path] : metrics) metric_values[name] = nullptr;
    std::string status;
    if (state.state == SweepDir::State::Done) {
      nlohmann::json st = read_status(dir.point(index) / "status.json");
      status = st.value("status", state.status);
      if (st.contains("exit_code")) exit_code = st["exit_code"];
      if (st.contains("wall_seconds")) wall = st["wall_seconds"];
      metric_values = read_metrics(dir.point(index), metrics, false).values;
      if (!first_done) first_done = index;
      for (std::size_t m = 0; m < metrics.size(); ++m) seen[m] = seen[m] || !metric_values[metrics[m].first].is_null();
      if (!metric_units_read && status == kStatusOk) {
        const auto mu = metric_units(dir.point(index), metrics);
        for (std::size_t i = 0; i < metrics.size(); ++i) units[metrics[i].first] = mu[i];
        metric_units_read = true;
      }
      (status == kStatusOk ? sum.ok : sum.failed)++;
    } else if (state.state == SweepDir::State::Running) {
      status = "running";
      ++sum.running;
    } else {
      status = "pending";
      ++sum.pending;
    }
    row["status"] = status;
    row["exit_code"] = exit_code;
    row["wall_seconds"] = wall;
    row["metrics"] = metric_values;
    jsonl_text += row.dump() + "\n";

    csv_text += std::to_string(index);
    for (const auto& k : params) csv_text += "," + csv_field(values[k]);
    csv_text += "," + status + "," + csv_field(exit_code) + "," + csv_field(wall);
    for (const auto& [name, path] : metrics) csv_text += "," + csv_field(metric_values[name]);
    csv_text += "\n";
  }
  if (first_done && std::find(seen.begin(), seen.end(), false) != seen.end()) {
    const MetricValues hinted = read_metrics(dir.point(*first_done), metrics, true);
    for (const auto& m : hinted.missing) {
      const std::string path = m.substr(0, m.find(": "));
      for (std::size_t k = 0; k < metrics.size(); ++k)
        if (!seen[k] && metrics[k].second == path) sum.missing_metrics.push_back(m);
    }
  }
  if (!metric_units_read)
    for (const auto& [name, path] : metrics) units[name] = metric_unit(nlohmann::json(), path);
  sum.units = units_path(sum.csv);
  nlohmann::ordered_json units_file;
  units_file["format"] = "wafersim-sweep-units/1";
  units_file["columns"] = units;
  write_file_atomic(sum.csv, csv_text);
  write_file_atomic(sum.jsonl, jsonl_text);
  write_file_atomic(sum.units, units_file.dump(2) + "\n");
  return sum;
}

}  // namespace

}  // namespace wafersim::app::sweep
