#include "platforms/runtime/step_activity.h"

#include <string>

#include "energy/events.h"

namespace wafersim::platforms::runtime {

using sim::stats::Group;
using sim::stats::Stat;

Activity read_activity(const Group& wafer) {
  const auto& paths = energy::wafer_counter_paths();
  Activity a(paths.size());
  for (std::size_t k = 0; k < paths.size(); ++k) {
    const Stat* s = wafer.find(paths[k]);
    if (!s) continue;
    if (s->kind() == Stat::Kind::Scalar) a[k].push_back(s->value());
    if (s->kind() == Stat::Kind::Vector)
      for (std::size_t i = 0; i < s->size(); ++i) a[k].push_back(s->element(i));
  }
  return a;
}

Activity activity_between(const Activity& start, const Activity& end) {
  Activity d = end;
  for (std::size_t k = 0; k < d.size() && k < start.size(); ++k)
    for (std::size_t i = 0; i < d[k].size() && i < start[k].size(); ++i) d[k][i] -= start[k][i];
  return d;
}

void add_activity_stats(Group& step, const Group& wafer, std::function<const Activity*()> get) {
  const auto& paths = energy::wafer_counter_paths();
  Group& activity = step.group("activity");
  for (std::size_t k = 0; k < paths.size(); ++k) {
    const Stat* s = wafer.find(paths[k]);
    if (!s || s->kind() == Stat::Kind::Distribution) continue;
    Group* g = &activity;
    std::string rest = paths[k];
    for (auto dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
      g = &g->group(rest.substr(0, dot));
      rest = rest.substr(dot + 1);
    }
    auto value = [get, k](std::size_t i) {
      const Activity* a = get();
      return a && k < a->size() && i < (*a)[k].size() ? (*a)[k][i] : 0.0;
    };
    const std::string what = "in this step: " + s->description();
    if (s->kind() == Stat::Kind::Scalar) {
      g->formula(
          rest, [value] { return value(0); }, s->unit(), what, s->integral());
    } else {
      const std::size_t n = s->size();
      g->vector(
          rest, [n] { return n; }, value, s->unit(), what, s->integral());
    }
  }
}

}  // namespace wafersim::platforms::runtime
