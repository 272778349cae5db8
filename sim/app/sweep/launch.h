#pragma once
// What every launcher of a sweep shares: which points still need running, the `--point`
// command line that runs one, watching a folder fill up, and the closing summary.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "sim/app/sweep/plan.h"
#include "sim/app/sweep/sweep_dir.h"
#include "sim/app/sweep/sweep_progress.h"

namespace wafersim::app::sweep {

struct LaunchOptions {
  std::string spec_path;      // absolute
  unsigned jobs = 0;          // points at once; 0: the launcher's default
  bool retry_failed = false;  // run points again that finished without success
  bool terminal = false;      // progress as a bar (else plain lines)
};

struct LaunchSummary {
  std::size_t total = 0;           // points in the sweep
  std::size_t before = 0;          // finished by earlier runs and not run again
  std::size_t failed_before = 0;   // of those, finished without success
  std::size_t ok = 0, failed = 0;  // finished now
  std::size_t left = 0;            // not finished (still queued, or interrupted)
  std::vector<std::size_t> failed_points;
  std::set<std::string> missing_metrics;  // metrics some successful point lacked (with a hint)
  double wall_seconds = 0;
  std::string backend;
  std::string job;  // Slurm job id
  [[nodiscard]] nlohmann::ordered_json to_json() const;
  [[nodiscard]] std::string text(const std::string& name, const std::string& dir) const;
};

// Points not finished yet, plus, when `retry_failed`, those finished without success; sets
// total, before and failed_before of `summary`.
std::vector<std::size_t> pending_points(const Plan& plan, const SweepDir& dir, bool retry_failed,
                                        LaunchSummary& summary);

// `EXE sweep SPEC --point I --out DIR [--retry-failed]`, with `index` empty for the
// placeholder that Slurm and GNU parallel fill in.
std::vector<std::string> point_command(const std::string& exe, const std::string& spec, const SweepDir& dir,
                                       const std::string& index, bool retry_failed);

// Follows the points in `pending` as other processes run them, updating `progress`, until
// all have finished or `active()` (asked every `interval`) turns false; then counts what
// finished into `summary`.
void watch(const Plan& plan, const SweepDir& dir, const std::vector<std::size_t>& pending, SweepProgress& progress,
           const std::function<bool()>& active, std::chrono::milliseconds interval, LaunchSummary& summary);

// A finished point as recorded in its status.json: status, wall time and a one-line detail
// ("k=v, k=v", and for a failed point its exit code and last stderr line).
struct PointReport {
  std::string status;
  double wall_seconds = 0;
  std::string detail;
  std::vector<std::string> missing_metrics;
};
// Counts a finished point into `summary`.
void tally(const PointReport& report, std::size_t index, LaunchSummary& summary);
PointReport report_point(const Plan& plan, const SweepDir& dir, std::size_t index);

}  // namespace wafersim::app::sweep
