#include "sim/stats/formatters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace wafersim::sim::stats {
namespace {

nlohmann::json number(double v, bool integral) {
  if (integral && std::isfinite(v) && std::fabs(v) < 9.0e18) return static_cast<std::int64_t>(std::llround(v));
  if (!std::isfinite(v)) return nullptr;
  return v;
}

nlohmann::json stat_json(const Stat& s) {
  switch (s.kind()) {
    case Stat::Kind::Scalar:
      return number(s.value(), s.integral());
    case Stat::Kind::Vector: {
      nlohmann::json a = nlohmann::json::array();
      const std::size_t n = s.size();
      for (std::size_t i = 0; i < n; ++i) a.push_back(number(s.element(i), s.integral()));
      return a;
    }
    case Stat::Kind::Distribution: {
      const Histogram& h = *s.histogram();
      return nlohmann::json{{"samples", h.samples()}, {"mean", h.mean()},        {"min", h.min()},
                            {"p50", h.quantile(0.5)}, {"p99", h.quantile(0.99)}, {"max", h.max()}};
    }
  }
  return nullptr;
}

template <class Json>
void fill(const Group& g, Json& out) {
  out = Json::object();
  for (const auto& s : g.stats()) out[s.name()] = stat_json(s);
  for (const auto& c : g.groups()) fill(*c, out[c->name()]);
}

void describe(const Group& g, nlohmann::json& out) {
  const std::string base = g.path();
  for (const auto& s : g.stats())
    out[base.empty() ? s.name() : base + "." + s.name()] = {{"unit", s.unit()}, {"description", s.description()}};
  for (const auto& c : g.groups()) describe(*c, out);
}

std::string text_value(double v, bool integral) {
  if (integral) return fmt::format("{}", static_cast<std::int64_t>(std::llround(v)));
  return fmt::format("{:.6g}", v);
}

void text(std::ostream& out, const Group& g) {
  const std::string base = g.path();
  for (const auto& s : g.stats()) {
    std::string path = base.empty() ? s.name() : base + "." + s.name();
    std::string value;
    switch (s.kind()) {
      case Stat::Kind::Scalar:
        value = text_value(s.value(), s.integral());
        break;
      case Stat::Kind::Vector: {
        double sum = 0, mx = 0;
        const std::size_t n = s.size();
        for (std::size_t i = 0; i < n; ++i) {
          double e = s.element(i);
          sum += e;
          mx = i == 0 ? e : std::max(mx, e);
        }
        value = fmt::format("sum {} mean {:.6g} max {} (n={})", text_value(sum, s.integral()),
                            n ? sum / static_cast<double>(n) : 0.0, text_value(mx, s.integral()), n);
        break;
      }
      case Stat::Kind::Distribution: {
        const Histogram& h = *s.histogram();
        value = fmt::format("n {} mean {:.6g} p50 {} p99 {} max {}", h.samples(), h.mean(), h.quantile(0.5),
                            h.quantile(0.99), h.max());
        break;
      }
    }
    std::string line = fmt::format("{:<56} {:>14}", path, value);
    out << line << "  # " << s.description() << " (" << s.unit() << ")\n";
  }
  for (const auto& c : g.groups()) text(out, *c);
}

}  // namespace

nlohmann::json to_json(const Group& root) {
  nlohmann::json j;
  fill(root, j);
  return j;
}

nlohmann::ordered_json to_ordered_json(const Group& root) {
  nlohmann::ordered_json j;
  fill(root, j);
  return j;
}

nlohmann::json describe_json(const Group& root) {
  nlohmann::json j = nlohmann::json::object();
  describe(root, j);
  return j;
}

std::string stats_file_json(const Group& root) {
  nlohmann::ordered_json j;
  j["format"] = "wafersim-stats/1";
  j["stats"] = to_json(root);
  j["descriptions"] = describe_json(root);
  return j.dump(1) + "\n";
}

void write_text(std::ostream& out, const Group& root) { text(out, root); }

}  // namespace wafersim::sim::stats
