#pragma once
// The timeline of weight-streaming training steps and its per-step breakdown: how long weight
// streaming, compute, gradient reduction and the optimizer were active, and how much of each
// was exposed (not hidden behind an activity of higher priority: compute > stream > reduce >
// optimizer). Built from MemoryX's and the endpoints' records; docs/memoryx.md explains it.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memoryx/memoryx.h"
#include "platforms/edge/edge_endpoint.h"
#include "sim/picos.h"
#include "sim/run_loop.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms {

class Cluster;

// In priority order: an instant belongs to the first one active.
enum class Activity : std::uint8_t { Compute, Stream, Reduce, Optimizer };
constexpr std::size_t kActivities = 4;
const char* to_string(Activity a);

struct ActivityInterval {
  Activity kind = Activity::Compute;
  std::uint32_t step = 0;  // for compute: not known (0)
  std::uint32_t layer = 0;
  sim::Picos start, end;
};

struct StepBreakdown {
  std::uint32_t step = 0;
  sim::Picos start, end;                     // from the previous step's end to this step's last update
  std::array<sim::Picos, kActivities> busy;  // union of the activity's intervals within the step
  std::array<sim::Picos, kActivities> exposed;
  sim::Picos idle;  // nothing active (start + exposed + idle sum to the step)
  [[nodiscard]] sim::Picos duration() const { return end - start; }
};

struct StepTimeline {
  std::vector<ActivityInterval> intervals;
  std::vector<StepBreakdown> steps;
};

// Intervals: a stream runs from its first DRAM read to its last chunk's arrival at the last
// endpoint; a reduction from the first gradient chunk leaving an endpoint to the last one
// written in MemoryX; an update over the optimizer's work on a layer; compute over the
// endpoints' busy intervals.
StepTimeline step_timeline(const memoryx::MemoryX& memoryx,
                           const std::vector<const platforms::edge::EdgeEndpoint*>& endpoints);

// Breaks the intervals down over [start, end) (exposed time by priority).
StepBreakdown breakdown(const std::vector<ActivityInterval>& intervals, sim::Picos start, sim::Picos end);

// Schedules `steps` steps in the cluster's MemoryX, runs the simulation to its end and
// returns the timeline. Throws sim::SimulationError (exit code 3) naming what every module
// waits for when the steps do not complete, sim::LimitReached when `limits` (--max-wall) stop
// the run first.
StepTimeline run_training_steps(Cluster& cluster, std::uint32_t steps, const sim::RunLimits& limits = {});

// Adds one group per step ("step0", ...) with each activity's busy and exposed time.
void add_stats(sim::stats::Group& g, const StepTimeline& timeline);
nlohmann::ordered_json to_json(const StepTimeline& timeline);

}  // namespace wafersim::platforms
