#pragma once
// The local launcher: a pool of processes on this machine, each running one point through
// `wafersim sweep SPEC --point I` (so a point runs exactly as under Slurm or GNU parallel).

#include "sim/app/sweep/launch.h"

namespace wafersim::app::sweep {

// Runs every pending point with `options.jobs` at once (0: the number of cores) and returns
// when all have finished. Killing this process kills the points in flight (they stay
// unfinished and run again next time); finished points are never lost.
LaunchSummary run_local(const Plan& plan, const SweepDir& dir, const LaunchOptions& options);

}  // namespace wafersim::app::sweep
