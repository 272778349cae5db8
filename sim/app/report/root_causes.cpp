#include "sim/app/report/root_causes.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace wafersim::app::report {
namespace {

constexpr std::uint32_t kRamp = 4;
constexpr std::uint32_t kMaxHops = 256;
// An onward output counts as the continuation of a stall chain when it stalls at least this
// share of the stalls of the output that feeds it.
constexpr double kChainShare = 0.25;

struct Sink {
  std::uint32_t cell = 0, dir = 0;
  bool edge = false;
  friend bool operator<(const Sink& a, const Sink& b) {
    return std::tie(a.cell, a.dir, a.edge) < std::tie(b.cell, b.dir, b.edge);
  }
};

std::uint32_t reverse(std::uint32_t d) { return d < kRamp ? (d + 2) % 4 : d; }

double utilization(const OutputTotals& t, std::uint32_t cell, std::uint32_t dir) {
  const double capacity = static_cast<double>(t.links[cell][dir]) * static_cast<double>(t.cycles);
  return capacity > 0 ? static_cast<double>(t.forwarded[cell][dir]) / capacity : 0.0;
}

// The neighbouring region of `cell` through output `dir`, or false at the edge.
bool neighbour(const OutputTotals& t, std::uint32_t cell, std::uint32_t dir, std::uint32_t& out) {
  const std::uint32_t cx = cell % t.cols, cy = cell / t.cols;
  switch (dir) {
    case 0:
      if (cy == 0) return false;
      out = cell - t.cols;
      return true;
    case 1:
      if (cx + 1 >= t.cols) return false;
      out = cell + 1;
      return true;
    case 2:
      if (cy + 1 >= t.rows) return false;
      out = cell + t.cols;
      return true;
    case 3:
      if (cx == 0) return false;
      out = cell - 1;
      return true;
    default:
      return false;
  }
}

// Follows the stalled output (cell, dir) downstream to its sink; `hops` the outputs passed.
Sink follow(const OutputTotals& t, std::uint32_t cell, std::uint32_t dir, std::uint32_t& hops) {
  hops = 0;
  while (hops < kMaxHops) {
    if (dir == kRamp) return Sink{cell, dir, false};
    std::uint32_t next = 0;
    if (!neighbour(t, cell, dir, next)) return Sink{cell, dir, true};
    // Onward from the region it feeds: the most stalled output that does not turn back, else
    // the busiest one (the full sink that does not stall itself).
    std::uint32_t worst = kRamp + 1, busiest = kRamp;
    for (std::uint32_t d = 0; d <= kRamp; ++d) {
      if (d != kRamp && d == reverse(dir)) continue;
      if (worst > kRamp || t.stalled[next][d] > t.stalled[next][worst]) worst = d;
      if (utilization(t, next, d) > utilization(t, next, busiest)) busiest = d;
    }
    const double feeding = static_cast<double>(t.stalled[cell][dir]);
    if (worst <= kRamp && static_cast<double>(t.stalled[next][worst]) >= kChainShare * feeding &&
        t.stalled[next][worst] > 0) {
      cell = next;
      dir = worst;
      ++hops;
      continue;
    }
    return Sink{next, busiest, false};
  }
  return Sink{cell, dir, false};
}

nlohmann::ordered_json region(const OutputTotals& t, std::uint32_t cell) {
  const std::uint32_t x0 = t.x0 + cell % t.cols * t.size, y0 = t.y0 + cell / t.cols * t.size;
  return {{"x0", x0}, {"y0", y0}, {"x1", x0 + t.size - 1}, {"y1", y0 + t.size - 1}};
}

}  // namespace

nlohmann::ordered_json root_causes(const OutputTotals& t, std::uint32_t top) {
  struct Behind {
    std::uint64_t stalled = 0;
    std::vector<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t, std::uint32_t>>
        outputs;  // stalled, cell, dir, hops
  };
  std::map<Sink, Behind> causes;
  std::uint64_t total = 0;
  const std::uint32_t cells = t.cols * t.rows;
  for (std::uint32_t c = 0; c < cells; ++c)
    for (std::uint32_t d = 0; d <= kRamp; ++d) {
      const std::uint64_t s = t.stalled[c][d];
      if (s == 0) continue;
      total += s;
      std::uint32_t hops = 0;
      Behind& b = causes[follow(t, c, d, hops)];
      b.stalled += s;
      b.outputs.emplace_back(s, c, d, hops);
    }
  std::vector<std::pair<Sink, Behind>> list(causes.begin(), causes.end());
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& a, const auto& b) { return a.second.stalled > b.second.stalled; });
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (auto& [sink, behind] : list) {
    if (out.size() >= top) break;
    nlohmann::ordered_json j;
    j["kind"] = sink.edge ? "edge" : sink.dir == kRamp ? "ejection" : "link";
    const nlohmann::ordered_json where = region(t, sink.cell);
    for (const auto& [k, v] : where.items()) j[k] = v;
    j["dir"] = sink.dir;
    j["utilization"] = utilization(t, sink.cell, sink.dir);
    j["stalled"] = behind.stalled;
    j["share"] = total ? static_cast<double>(behind.stalled) / static_cast<double>(total) : 0.0;
    std::stable_sort(behind.outputs.begin(), behind.outputs.end(),
                     [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
    nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
    for (const auto& [s, c, d, hops] : behind.outputs) {
      if (outputs.size() >= 12) break;
      nlohmann::ordered_json o = region(t, c);
      o.erase("x1");
      o.erase("y1");
      o["dir"] = d;
      o["stalled"] = s;
      o["hops"] = hops;
      outputs.push_back(std::move(o));
    }
    j["outputs"] = std::move(outputs);
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace wafersim::app::report
