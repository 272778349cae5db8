#include "sim/app/report/phase_figures.h"

#include <map>
#include <string>

namespace wafersim::app::report {

void add_phase_figures(nlohmann::ordered_json& phases, const nlohmann::ordered_json& model) {
  if (!phases.is_array() || !model.is_object() || !model.contains("results") || !model["results"].is_array()) return;
  std::map<std::string, const nlohmann::ordered_json*> by_name;
  for (const auto& r : model["results"])
    if (r.is_object() && r.contains("layer") && r.contains("phase") && r["layer"].is_string() && r["phase"].is_string())
      by_name.emplace(r["layer"].get<std::string>() + " " + r["phase"].get<std::string>(), &r);
  for (auto& row : phases) {
    if (!row.is_object() || !row.contains("name") || !row["name"].is_string()) continue;
    const auto it = by_name.find(row["name"].get<std::string>());
    if (it == by_name.end()) continue;
    for (const char* key : {"bound_cycles", "binds", "flops", "flops_per_second", "peak_fraction", "stalls"})
      if (it->second->contains(key)) row[key] = (*it->second)[key];
  }
}

}  // namespace wafersim::app::report
