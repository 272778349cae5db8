#include "sim/stats/recorded.h"

#include <limits>
#include <memory>
#include <vector>

namespace wafersim::sim::stats {
namespace {

template <class Json>
void add(Group& g, const Json& values, const nlohmann::json& descriptions, const std::string& path) {
  for (const auto& [name, v] : values.items()) {
    const std::string p = path.empty() ? name : path + "." + name;
    if (v.is_object()) {
      add(g.group(name), v, descriptions, p);
      continue;
    }
    std::string unit, what;
    if (auto d = descriptions.find(p); d != descriptions.end()) {
      unit = d->value("unit", "");
      what = d->value("description", "");
    }
    if (v.is_number() || v.is_null()) {
      // null: a value that was not finite (written as null, read back as NaN: null again).
      const double x = v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.template get<double>();
      g.formula(
          name, [x] { return x; }, unit, what, v.is_number_integer());
    } else if (v.is_array()) {
      auto xs = std::make_shared<std::vector<double>>();
      bool integral = true;
      for (const auto& e : v) {
        xs->push_back(e.is_number() ? e.template get<double>() : std::numeric_limits<double>::quiet_NaN());
        integral = integral && (e.is_number_integer() || e.is_null());
      }
      g.vector(
          name, [xs] { return xs->size(); }, [xs](std::size_t i) { return (*xs)[i]; }, unit, what, integral);
    }
  }
}

}  // namespace

void add_recorded(Group& g, const nlohmann::json& values, const nlohmann::json& descriptions,
                  const std::string& prefix) {
  add(g, values, descriptions, prefix);
}

void add_recorded(Group& g, const nlohmann::ordered_json& values, const nlohmann::json& descriptions,
                  const std::string& prefix) {
  add(g, values, descriptions, prefix);
}

}  // namespace wafersim::sim::stats
