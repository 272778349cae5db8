#include "sim/app/sweep/collect.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "sim/app/run_dir.h"
#include "sim/app/sweep/metrics.h"
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

}  // namespace

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
    for (const auto& k : params) values[k] = p.at("params").value(k, "");
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
  write_file_atomic(sum.csv, csv_text);
  write_file_atomic(sum.jsonl, jsonl_text);
  return sum;
}

}  // namespace

}  // namespace wafersim::app::sweep
