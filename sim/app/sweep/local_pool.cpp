#include "sim/app/sweep/local_pool.h"

#include <fmt/format.h>

#include <deque>
#include <thread>

#include "sim/app/sweep/point_runner.h"
#include "sim/app/sweep/process.h"

namespace wafersim::app::sweep {

LaunchSummary run_local(const Plan& plan, const SweepDir& dir, const LaunchOptions& options) {
  LaunchSummary summary;
  summary.backend = "local";
  std::vector<std::size_t> pending = pending_points(plan, dir, options.retry_failed, summary);
  unsigned jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());

  SweepProgress progress(plan.spec().name, summary.total, summary.before, options.terminal);
  const std::string exe = self_executable();
  std::deque<std::size_t> queue(pending.begin(), pending.end());
  struct Running {
    pid_t pid;
    std::size_t index;
  };
  std::vector<Running> running;
  SpawnOptions so;
  // Point runners report problems that keep them from recording a point on stderr.
  so.stdout_path = "/dev/null";
  so.stderr_path = (dir.root() / "runner.log").string();
  so.append = true;
  so.die_with_parent = true;

  while (!queue.empty() || !running.empty()) {
    while (!queue.empty() && running.size() < jobs) {
      std::size_t i = queue.front();
      queue.pop_front();
      running.push_back(
          {spawn(point_command(exe, options.spec_path, dir, std::to_string(i), options.retry_failed), so), i});
    }
    progress.set_running(running.size());
    progress.redraw();
    bool any = false;
    for (std::size_t k = 0; k < running.size();) {
      auto status = try_wait(running[k].pid);
      if (!status) {
        ++k;
        continue;
      }
      any = true;
      const std::size_t i = running[k].index;
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      auto state = dir.state(i);
      if (state.state == SweepDir::State::Done) {
        PointReport r = report_point(plan, dir, i);
        tally(r, i, summary);
        progress.set_running(running.size());
        progress.finished(i, r.status, r.wall_seconds, r.detail);
      } else {
        // The runner itself failed (its message is on stderr) or another process holds the point.
        ++summary.left;
        progress.set_running(running.size());
        progress.finished(i, status->code == kExitPointBusy ? "busy" : "not-recorded", 0,
                          status->code == kExitPointBusy
                              ? "another process is running this point"
                              : fmt::format("the point runner exited with code {} without recording the point (see {})",
                                            status->code, so.stderr_path));
      }
    }
    if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  progress.finish();
  summary.wall_seconds = progress.elapsed_seconds();
  return summary;
}

}  // namespace wafersim::app::sweep
