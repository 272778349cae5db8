#include "sim/app/sweep/slurm_backend.h"

#include <fmt/format.h>

#include <thread>

#include "sim/app/run_dir.h"
#include "sim/app/sweep/process.h"
#include "sim/errors.h"

namespace wafersim::app::sweep {
namespace fs = std::filesystem;

namespace {

// Single-quotes a word for bash.
std::string sh(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

std::string array_spec(const std::vector<std::size_t>& indices, unsigned throttle) {
  std::string out;
  for (std::size_t i = 0; i < indices.size();) {
    std::size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    out +=
        (out.empty() ? "" : ",") + (j == i ? std::to_string(indices[i]) : fmt::format("{}-{}", indices[i], indices[j]));
    i = j + 1;
  }
  if (throttle) out += fmt::format("%{}", throttle);
  return out;
}

std::string sbatch_script(const Plan& plan, const SweepDir& dir, const std::vector<std::size_t>& pending,
                          const LaunchOptions& options, const SlurmOptions& slurm, const std::string& exe) {
  const fs::path logs = dir.root() / "slurm";
  std::string s = "#!/bin/bash\n";
  s += fmt::format("# wafersim sweep '{}': {} of {} points, one array task each.\n", plan.spec().name, pending.size(),
                   plan.points().size());
  s += "# Written by `wafersim sweep --backend slurm`; each task runs one point and records it in\n";
  s += fmt::format("# {}/points/NNNNN/ (done marker last), so resubmitting runs only what is left.\n",
                   dir.root().string());
  s += fmt::format("#SBATCH --job-name=wafersim-{}\n", plan.spec().name);
  s += fmt::format("#SBATCH --array={}\n", array_spec(pending, options.jobs));
  s += fmt::format("#SBATCH --output={}/%A_%a.out\n", logs.string());
  s += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n";
  if (!slurm.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", slurm.partition);
  if (!slurm.time.empty()) s += fmt::format("#SBATCH --time={}\n", slurm.time);
  if (!slurm.mem.empty()) s += fmt::format("#SBATCH --mem={}\n", slurm.mem);
  for (const auto& e : slurm.extra) s += fmt::format("#SBATCH {}\n", e);
  s += "set -u\n";
  std::string cmd;
  for (const auto& a : point_command(exe, options.spec_path, dir, "@", options.retry_failed))
    cmd += (cmd.empty() ? "" : " ") + (a == "@" ? std::string("\"$SLURM_ARRAY_TASK_ID\"") : sh(a));
  s += "exec " + cmd + "\n";
  return s;
}

LaunchSummary submit_slurm(const Plan& plan, const SweepDir& dir, const LaunchOptions& options,
                           const SlurmOptions& slurm) {
  LaunchSummary summary;
  summary.backend = "slurm";
  std::vector<std::size_t> pending = pending_points(plan, dir, options.retry_failed, summary);
  summary.left = pending.size();
  if (pending.empty()) return summary;

  const fs::path logs = dir.root() / "slurm";
  fs::create_directories(logs);
  const fs::path script = logs / "sweep.sbatch";
  write_file_atomic(script, sbatch_script(plan, dir, pending, options, slurm, self_executable()));
  CommandResult r = run_command({"sbatch", "--parsable", script.string()});
  if (r.exit.code != 0)
    throw sim::Error(sim::kExitSimulation,
                     fmt::format("sbatch failed (exit code {}): {}", r.exit.code, r.err.empty() ? r.out : r.err));
  std::string id = first_line(r.out);
  if (auto semi = id.find(';'); semi != std::string::npos) id = id.substr(0, semi);
  summary.job = id;
  write_file_atomic(logs / "job_id", id + "\n");
  if (!slurm.follow) return summary;

  SweepProgress progress(plan.spec().name, summary.total, summary.before, options.terminal);
  auto in_queue = [&] {
    CommandResult q = run_command({"squeue", "--noheader", "--jobs", id, "--format", "%i %T"});
    // Once the job has left the controller's memory squeue fails with "Invalid job id".
    return q.exit.code == 0 && q.out.find_first_not_of(" \n") != std::string::npos;
  };
  summary.left = 0;
  watch(plan, dir, pending, progress, in_queue, std::chrono::seconds(2), summary);
  progress.finish();
  summary.wall_seconds = progress.elapsed_seconds();
  return summary;
}

}  // namespace wafersim::app::sweep
