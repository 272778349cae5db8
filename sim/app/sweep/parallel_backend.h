#pragma once
// The GNU parallel launcher: runs `wafersim sweep SPEC --point {}` for every point through
// GNU parallel with a job log (DIR/parallel/joblog), so that parallel's --resume skips
// points already run, and --sshloginfile spreads points over several hosts (which need the
// same wafersim path and a shared sweep folder).

#include <string>
#include <vector>

#include "sim/app/sweep/launch.h"

namespace wafersim::app::sweep {

struct ParallelOptions {
  std::string sshloginfile;        // --sshloginfile for parallel; empty: this machine only
  std::vector<std::string> extra;  // further options for parallel, verbatim
};

// The parallel command line (without the input list, which is DIR/parallel/points).
std::vector<std::string> parallel_command(const Plan& plan, const SweepDir& dir, const LaunchOptions& options,
                                          const ParallelOptions& parallel, const std::string& exe);

// Runs the sweep through GNU parallel, watching the folder for progress, and returns when
// parallel has finished. Throws sim::Error when parallel cannot run.
LaunchSummary run_parallel(const Plan& plan, const SweepDir& dir, const LaunchOptions& options,
                           const ParallelOptions& parallel);

}  // namespace wafersim::app::sweep
