#include "platforms/step_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "platforms/cluster.h"
#include "sim/errors.h"

namespace wafersim::platforms {
using sim::Picos;

const char* to_string(Activity a) {
  switch (a) {
    case Activity::Compute:
      return "compute";
    case Activity::Stream:
      return "stream";
    case Activity::Reduce:
      return "reduce";
    case Activity::Optimizer:
      return "optimizer";
  }
  return "?";
}

StepTimeline step_timeline(const memoryx::MemoryX& mx,
                           const std::vector<const platforms::edge::EdgeEndpoint*>& endpoints) {
  StepTimeline t;
  const auto& streams = mx.streams();
  for (std::uint32_t s = 0; s < streams.size(); ++s) {
    const auto& r = streams[s];
    if (r.first_issue.is_never()) continue;
    Picos end{0};
    bool arrived = !endpoints.empty();
    for (const auto* e : endpoints) {
      auto it = e->records().stream_arrived.find(s);
      if (it == e->records().stream_arrived.end()) {
        arrived = false;
        break;
      }
      end = std::max(end, it->second);
    }
    if (!arrived) continue;
    t.intervals.push_back(ActivityInterval{Activity::Stream, r.step, r.layer, r.first_issue, end});
  }
  for (const auto& g : mx.gradients()) {
    if (g.complete.is_never()) continue;
    Picos start = Picos::never();
    for (const auto* e : endpoints) {
      auto it = e->records().gradient_started.find({g.step, g.layer});
      if (it != e->records().gradient_started.end()) start = std::min(start, it->second);
    }
    if (start.is_never()) start = g.first_arrival;
    t.intervals.push_back(ActivityInterval{Activity::Reduce, g.step, g.layer, start, g.complete});
  }
  for (const auto& u : mx.updates())
    t.intervals.push_back(ActivityInterval{Activity::Optimizer, u.step, u.layer, u.start, u.end});
  for (const auto* e : endpoints)
    for (const auto& b : e->records().busy)
      t.intervals.push_back(ActivityInterval{Activity::Compute, 0, 0, b.start, b.end});

  std::map<std::uint32_t, Picos> step_end;
  for (const auto& u : mx.updates()) step_end[u.step] = std::max(step_end[u.step], u.end);
  Picos start{0};
  for (const auto& [step, end] : step_end) {
    StepBreakdown b = breakdown(t.intervals, start, end);
    b.step = step;
    t.steps.push_back(b);
    start = end;
  }
  return t;
}

StepBreakdown breakdown(const std::vector<ActivityInterval>& intervals, Picos start, Picos end) {
  StepBreakdown b;
  b.start = start;
  b.end = end;
  struct Edge {
    Picos at;
    std::size_t kind;
    int delta;
  };
  std::vector<Edge> edges;
  for (const auto& i : intervals) {
    const Picos s = std::max(i.start, start);
    const Picos e = std::min(i.end, end);
    if (s >= e) continue;
    edges.push_back(Edge{s, static_cast<std::size_t>(i.kind), +1});
    edges.push_back(Edge{e, static_cast<std::size_t>(i.kind), -1});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& c) {
    return a.at != c.at ? a.at < c.at : a.kind != c.kind ? a.kind < c.kind : a.delta < c.delta;
  });
  std::array<int, kActivities> active{};
  Picos at = start;
  auto account = [&](Picos until) {
    if (until <= at) return;
    const Picos span = until - at;
    std::size_t top = kActivities;
    for (std::size_t k = 0; k < kActivities; ++k) {
      if (active[k] <= 0) continue;
      b.busy[k] += span;
      if (top == kActivities) top = k;
    }
    if (top == kActivities)
      b.idle += span;
    else
      b.exposed[top] += span;
    at = until;
  };
  for (const auto& e : edges) {
    account(e.at);
    active[e.kind] += e.delta;
  }
  account(end);
  return b;
}

StepTimeline run_training_steps(Cluster& cluster, std::uint32_t steps, const sim::RunLimits& limits) {
  cluster.memoryx().schedule_steps(steps);
  sim::run_until_quiet(nullptr, limits, fmt::format("{} training step{}", steps, steps == 1 ? "" : "s"));
  cluster.rethrow_failure();
  if (!cluster.memoryx().finished())
    throw sim::SimulationError(fmt::format("training stopped at {} before {} step(s) completed:\n{}",
                                           sim::format(sim::now()), steps, cluster.describe_state()));
  return step_timeline(cluster.memoryx(), cluster.endpoints());
}

void add_stats(sim::stats::Group& g, const StepTimeline& timeline) {
  for (const auto& s : timeline.steps) {
    auto& sg = g.group(fmt::format("step{}", s.step));
    auto constant = [&sg](const std::string& name, Picos v, const std::string& what) {
      const double value = static_cast<double>(v.count());
      sg.formula(
          name, [value] { return value; }, "ps", what, true);
    };
    constant("time", s.duration(), "step time: from the previous step's end to this step's last update");
    for (std::size_t k = 0; k < kActivities; ++k) {
      const std::string a = to_string(static_cast<Activity>(k));
      constant(a, s.busy[k], a + ": time active");
      constant("exposed_" + a, s.exposed[k], a + ": time active and not hidden by a higher-priority activity");
    }
    constant("idle", s.idle, "time nothing was active");
  }
}

nlohmann::ordered_json to_json(const StepTimeline& timeline) {
  auto j = nlohmann::ordered_json::array();
  for (const auto& s : timeline.steps) {
    nlohmann::ordered_json o;
    o["step"] = s.step;
    o["start_ps"] = s.start.count();
    o["end_ps"] = s.end.count();
    o["time_ps"] = s.duration().count();
    for (std::size_t k = 0; k < kActivities; ++k) {
      const std::string a = to_string(static_cast<Activity>(k));
      o[a + "_ps"] = s.busy[k].count();
      o["exposed_" + a + "_ps"] = s.exposed[k].count();
    }
    o["idle_ps"] = s.idle.count();
    j.push_back(o);
  }
  return j;
}

}  // namespace wafersim::platforms
