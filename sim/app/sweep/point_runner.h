#pragma once
// Runs one point of a sweep (`wafersim sweep SPEC --point I`): the entry point every
// launcher uses. It supervises the workload as a child process in the point's folder:
//   .lock        held while the point runs (a second runner of the same point backs off)
//   point.json   the parameters and the exact command line, written before the start
//   config.yaml, stats.json, stats.txt, run.json   written by the workload (its --out)
//   stdout.txt   the workload's --json summary;  stderr.txt  its diagnostics
//   status.json  status (ok, failed, crashed, timeout), exit code, signal, wall time,
//                metrics and the tail of stderr
//   done         the status word, written last and atomically
// A point without `done` is unfinished whatever else its folder holds, and is run again
// from a clean folder.

#include <cstddef>
#include <string>

#include "sim/app/sweep/plan.h"
#include "sim/app/sweep/sweep_dir.h"

namespace wafersim::app::sweep {

struct PointOptions {
  bool force = false;         // run even when finished
  bool retry_failed = false;  // run again when finished without success
};

struct PointOutcome {
  bool ran = false;    // false: finished before (skipped) or running elsewhere
  bool busy = false;   // another process is running this point
  std::string status;  // ok, failed, crashed, timeout
  int exit_code = 0;   // the workload's (128 + signal when a signal ended it)
  double wall_seconds = 0;
};

// Exit code of a `--point` run whose point another process is running.
inline constexpr int kExitPointBusy = 75;

// Contract: returns only after the outcome is recorded (status.json, then done) or when
// nothing was run; if this process is killed at any moment, the point either keeps its
// previous `done` or has none.
PointOutcome run_point(const Plan& plan, const SweepDir& dir, std::size_t index, const PointOptions& options);

// The last `max_lines` lines of a file, at most `max_bytes` of them.
std::string tail_of_file(const std::string& path, std::size_t max_lines = 20, std::size_t max_bytes = 4096);

}  // namespace wafersim::app::sweep
