#pragma once
// The activity of one compiled step: how much each wafer counter that energy is counted from
// (energy::wafer_counter_paths) changed between the step's start and its end, written into the
// step's statistics as group `activity` under the counters' own names, so that the energy of
// a step is read like a wafer's (energy::wafer_events).

#include <functional>
#include <vector>

#include "sim/stats/stats.h"

namespace wafersim::platforms::runtime {

// Per counter path, its value (one element) or its elements (a vector).
using Activity = std::vector<std::vector<double>>;

// The counters' values now, from the wafer's statistics group (absent counters: empty).
Activity read_activity(const sim::stats::Group& wafer);
// end - start, element by element.
Activity activity_between(const Activity& start, const Activity& end);
// Adds group `activity` to `step`, shaped as the counters of `wafer`; values come from
// `get()` when the statistics are dumped (null: zeros, a step not run).
void add_activity_stats(sim::stats::Group& step, const sim::stats::Group& wafer, std::function<const Activity*()> get);

}  // namespace wafersim::platforms::runtime
