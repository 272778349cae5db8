#pragma once
// The Slurm launcher: writes an `sbatch --array` script whose tasks each run their point
// (`wafersim sweep SPEC --point $SLURM_ARRAY_TASK_ID`) and submits it.

#include <string>
#include <vector>

#include "sim/app/sweep/launch.h"

namespace wafersim::app::sweep {

struct SlurmOptions {
  std::string partition;           // --partition
  std::string time;                // --time, per task (e.g. 30:00)
  std::string mem;                 // --mem, per task (e.g. 4G)
  std::vector<std::string> extra;  // further sbatch options, verbatim
  bool follow = false;             // wait for the array, showing progress (polls squeue)
};

// The --array value for `indices` (ascending): "0-3,7,9-12", with "%N" when `throttle`.
std::string array_spec(const std::vector<std::size_t>& indices, unsigned throttle);

// The batch script (DIR/slurm/sweep.sbatch) for `pending`.
std::string sbatch_script(const Plan& plan, const SweepDir& dir, const std::vector<std::size_t>& pending,
                          const LaunchOptions& options, const SlurmOptions& slurm, const std::string& exe);

// Submits the pending points as one job array; with `follow`, returns after the array has
// left the queue. Throws sim::Error when sbatch fails (with its message).
LaunchSummary submit_slurm(const Plan& plan, const SweepDir& dir, const LaunchOptions& options,
                           const SlurmOptions& slurm);

}  // namespace wafersim::app::sweep
