#pragma once
// The `energy` group of a run's statistics (docs/energy.md): energy by component, per compiled
// step and per training step, average and peak power, energy per FLOP, per token and per
// sample, all from the counters already in the tree (energy/events.h) and the platform's
// coefficients.

#include "platforms/platform_spec.h"
#include "sim/stats/stats.h"
#include "sim/types.h"

namespace wafersim::platforms {

// Adds group `energy` to the root of a finished run whose wafers ran `cycles` cycles (a run
// with steps, training or stream-loop, is timed by its steps instead). Values are computed
// now. A root that already has an `energy` group is left as it is.
void add_energy_stats(sim::stats::Group& root, const PlatformSpec& spec, sim::Cycle cycles);

}  // namespace wafersim::platforms
