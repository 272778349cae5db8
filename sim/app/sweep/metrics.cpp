#include "sim/app/sweep/metrics.h"

#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "sim/config/diagnostics.h"
#include "sim/config/input_file.h"

namespace wafersim::app::sweep {
namespace fs = std::filesystem;

namespace {

std::optional<nlohmann::json> read_json(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  const std::string text = sim::config::read_input_file(p.string(), "a point's results", sim::config::kMaxJsonBytes);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

void leaf_paths(const nlohmann::json& j, const std::string& prefix, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      leaf_paths(*it, prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) leaf_paths(j[i], fmt::format("{}.{}", prefix, i), out);
  } else {
    out.push_back(prefix);
  }
}

}  // namespace

const nlohmann::json* find_path(const nlohmann::json& root, const std::string& path) {
  const nlohmann::json* cur = &root;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (cur->is_object()) {
      auto it = cur->find(key);
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else if (cur->is_array()) {
      if (key.empty() || key.find_first_not_of("0123456789") != std::string::npos) return nullptr;
      std::size_t i = std::stoul(key);
      if (i >= cur->size()) return nullptr;
      cur = &(*cur)[i];
    } else {
      return nullptr;
    }
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
  return nullptr;
}

std::string closest_path(const std::string& path, const std::vector<std::string>& known) {
  std::string best = sim::config::closest_match(path, known);
  if (!best.empty()) return best;
  auto last = [](const std::string& p) { return p.substr(p.rfind('.') + 1); };
  std::vector<std::string> leaves;
  for (const auto& k : known) leaves.push_back(last(k));
  const std::string leaf = sim::config::closest_match(last(path), leaves);
  if (leaf.empty()) return {};
  std::vector<std::string> same;
  for (const auto& k : known)
    if (last(k) == leaf) same.push_back(k);
  if (same.size() == 1) return same.front();
  // Several groups have the statistic: the one ending most like the path with its name fixed.
  const std::size_t dot = path.rfind('.');
  const std::string target = dot == std::string::npos ? leaf : path.substr(0, dot + 1) + leaf;
  std::size_t best_common = 0;
  for (const auto& k : same) {
    std::size_t common = 0;
    while (common < k.size() && common < target.size() &&
           k[k.size() - 1 - common] == target[target.size() - 1 - common])
      ++common;
    if (best.empty() || common > best_common || (common == best_common && k.size() < best.size())) {
      best_common = common;
      best = k;
    }
  }
  return best;
}

MetricValues read_metrics(const fs::path& point_dir, const std::vector<std::pair<std::string, std::string>>& metrics,
                          bool hints) {
  MetricValues out;
  auto stats_file = read_json(point_dir / "stats.json");
  auto summary = read_json(point_dir / "stdout.txt");
  nlohmann::json stats = stats_file && stats_file->contains("stats") ? (*stats_file)["stats"] : nlohmann::json();
  std::vector<std::string> known;  // for suggestions, computed on the first miss
  for (const auto& [name, path] : metrics) {
    bool from_summary = path.rfind("summary.", 0) == 0;
    const nlohmann::json* v = nullptr;
    if (from_summary) {
      if (summary) v = find_path(*summary, path.substr(8));
    } else if (!stats.is_null()) {
      v = find_path(stats, path);
    }
    if (v) {
      out.values[name] = *v;
      continue;
    }
    out.values[name] = nullptr;
    if (!hints) continue;
    if (from_summary ? !summary : stats.is_null()) {
      out.missing.push_back(fmt::format("{}: no {}", path, from_summary ? "summary (stdout.txt)" : "stats.json"));
      continue;
    }
    if (known.empty()) {
      if (!stats.is_null()) leaf_paths(stats, "", known);
      if (summary) {
        std::vector<std::string> s;
        leaf_paths(*summary, "", s);
        for (auto& k : s) known.push_back("summary." + k);
      }
    }
    std::string hint = closest_path(path, known);
    out.missing.push_back(hint.empty() ? fmt::format("{}: not found", path)
                                       : fmt::format("{}: not found; did you mean '{}'?", path, hint));
  }
  return out;
}

}  // namespace wafersim::app::sweep
