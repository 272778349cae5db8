#include "sim/app/sweep/parallel_backend.h"

#include <fmt/format.h>

#include <fstream>
#include <thread>

#include "sim/app/run_dir.h"
#include "sim/app/sweep/point_runner.h"
#include "sim/app/sweep/process.h"
#include "sim/errors.h"

namespace wafersim::app::sweep {
namespace fs = std::filesystem;

std::vector<std::string> parallel_command(const Plan& plan, const SweepDir& dir, const LaunchOptions& options,
                                          const ParallelOptions& parallel, const std::string& exe) {
  (void)plan;
  const fs::path pdir = dir.root() / "parallel";
  unsigned jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  // The input is every point index in order, so a job's sequence number is its index + 1
  // and --resume matches the job log of an earlier run of the same sweep.
  std::vector<std::string> argv{"parallel",
                                "--joblog",
                                (pdir / "joblog").string(),
                                options.retry_failed ? "--resume-failed" : "--resume",
                                "--jobs",
                                std::to_string(jobs),
                                "--halt",
                                "never",
                                "--quote",
                                "--arg-file",
                                (pdir / "points").string()};
  if (!parallel.sshloginfile.empty()) argv.insert(argv.end(), {"--sshloginfile", parallel.sshloginfile});
  argv.insert(argv.end(), parallel.extra.begin(), parallel.extra.end());
  for (auto& a : point_command(exe, options.spec_path, dir, "{}", options.retry_failed)) argv.push_back(a);
  return argv;
}

namespace {

// Keeps in parallel's job log only the jobs whose point is finished, so that --resume skips
// exactly those (the done markers decide; a point whose marker was removed, or whose runner
// was killed, runs again).
void reconcile_joblog(const Plan& plan, const SweepDir& dir, const fs::path& joblog) {
  std::ifstream in(joblog);
  if (!in) return;
  std::string line, out;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      out += line + "\n";
      header = false;
      continue;
    }
    std::size_t seq = 0;
    try {
      seq = std::stoul(line.substr(0, line.find('\t')));
    } catch (const std::exception&) {
      continue;
    }
    if (seq >= 1 && seq <= plan.points().size() && dir.state(seq - 1).state == SweepDir::State::Done)
      out += line + "\n";
  }
  write_file_atomic(joblog, out);
}

}  // namespace

LaunchSummary run_parallel(const Plan& plan, const SweepDir& dir, const LaunchOptions& options,
                           const ParallelOptions& parallel) {
  LaunchSummary summary;
  summary.backend = "parallel";
  std::vector<std::size_t> pending = pending_points(plan, dir, options.retry_failed, summary);
  if (pending.empty()) return summary;

  const fs::path pdir = dir.root() / "parallel";
  fs::create_directories(pdir);
  std::string list;
  for (const auto& p : plan.points()) list += std::to_string(p.index) + "\n";
  write_file_atomic(pdir / "points", list);
  reconcile_joblog(plan, dir, pdir / "joblog");

  SpawnOptions so;
  so.stdout_path = (pdir / "stdout.log").string();
  so.stderr_path = (pdir / "stderr.log").string();
  so.die_with_parent = true;
  pid_t pid = spawn(parallel_command(plan, dir, options, parallel, self_executable()), so);
  std::optional<ExitStatus> exit;
  SweepProgress progress(plan.spec().name, summary.total, summary.before, options.terminal);
  watch(
      plan, dir, pending, progress, [&] { return !(exit = exit ? exit : try_wait(pid)); },
      std::chrono::milliseconds(200), summary);
  progress.finish();
  if (!exit) exit = wait_for(pid);
  summary.wall_seconds = progress.elapsed_seconds();
  // parallel's exit code counts failed jobs (up to 100); 127 and above mean parallel itself failed.
  if (exit->code >= 127 || (exit->code == 255)) {
    std::string tail = tail_of_file(so.stderr_path, 5);
    throw sim::Error(sim::kExitSimulation, fmt::format("GNU parallel failed (exit code {}): {}", exit->code, tail));
  }
  return summary;
}

}  // namespace wafersim::app::sweep
