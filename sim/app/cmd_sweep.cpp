// `wafersim sweep`: expand a sweep file into points and run them: one point (--point, what
// every launcher runs), all of them on this machine, on Slurm or through GNU parallel.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

#include "sim/app/cli.h"
#include "sim/app/progress.h"
#include "sim/app/sweep/collect.h"
#include "sim/app/sweep/local_pool.h"
#include "sim/app/sweep/parallel_backend.h"
#include "sim/app/sweep/point_runner.h"
#include "sim/app/sweep/slurm_backend.h"
#include "sim/errors.h"

namespace wafersim::app {
namespace fs = std::filesystem;

namespace {

// The commands a sweep may run, one entry each. Their options are read from the commands'
// own definitions, so an option added to a command is sweepable at once.
struct Sweepable {
  const char* name;
  void (*add)(CLI::App&);
};
constexpr Sweepable kSweepable[] = {
    {"run", add_run_command},         {"train", add_train_command}, {"infer", add_infer_command},
    {"traffic", add_traffic_command}, {"exec", add_exec_command},
};

// Options the sweep sets itself on every point.
bool reserved(const std::string& name) {
  return name == "out" || name == "seed" || name == "json" || name == "set" || name == "help";
}

const Sweepable* find_sweepable(const std::string& name) {
  for (const auto& s : kSweepable)
    if (name == s.name) return &s;
  return nullptr;
}

struct SweepCommand {
  std::string spec;
  std::string out;
  unsigned jobs = 0;
  std::string backend = "local";
  std::optional<std::size_t> point;
  bool list = false;
  bool json = false;
  bool retry_failed = false;
  bool force = false;
  sweep::SlurmOptions slurm;
  sweep::ParallelOptions parallel;
  CLI::App* sub = nullptr;

  void check_options() const {
    auto given = [&](const char* name) { return sub->count(name) > 0; };
    for (const char* o : {"--partition", "--time", "--mem", "--sbatch-arg", "--follow"})
      if (given(o) && backend != "slurm") throw sim::InputError(fmt::format("{} applies to --backend slurm", o));
    for (const char* o : {"--sshloginfile", "--parallel-arg"})
      if (given(o) && backend != "parallel") throw sim::InputError(fmt::format("{} applies to --backend parallel", o));
    if (point && (given("--backend") || given("--jobs") || list))
      throw sim::InputError("--point runs one point here; it does not combine with --backend, --jobs or --list");
    if (force && !point) throw sim::InputError("--force applies to --point (to rerun a finished point)");
  }

  void execute() const {
    check_options();
    const std::string spec_abs = fs::absolute(spec).lexically_normal().string();
    if (point) return run_one();
    sweep::Plan plan = sweep::Plan::make(spec, sweep_catalog());
    if (list) return print_list(plan);
    sweep::SweepDir dir(fs::absolute(out.empty() ? "wafersim-out/sweep-" + plan.spec().name : out).lexically_normal());
    dir.prepare(plan);

    sweep::LaunchOptions lo;
    lo.spec_path = spec_abs;
    lo.jobs = jobs;
    lo.retry_failed = retry_failed;
    lo.terminal = Progress::terminal() && !json;
    sweep::LaunchSummary summary;
    if (backend == "slurm") {
      summary = sweep::submit_slurm(plan, dir, lo, slurm);
    } else if (backend == "parallel") {
      summary = sweep::run_parallel(plan, dir, lo, parallel);
    } else {
      summary = sweep::run_local(plan, dir, lo);
    }
    const bool waited = backend != "slurm" || slurm.follow;
    if (waited) sweep::collect(dir);
    if (json) {
      auto j = summary.to_json();
      j["out"] = dir.root().string();
      std::cout << j.dump(2) << "\n";
    } else if (backend == "slurm" && !slurm.follow) {
      if (summary.job.empty())
        std::cout << fmt::format("sweep {}: all {} points finished before; nothing to submit\n", plan.spec().name,
                                 summary.total);
      else
        std::cout << fmt::format(
            "sweep {}: submitted {} of {} points as Slurm job array {} ({}/slurm/sweep.sbatch)\n"
            "  follow with 'squeue -j {}'; then 'wafersim collect {}'\n",
            plan.spec().name, summary.left, summary.total, summary.job, dir.root().string(), summary.job,
            dir.root().string());
    } else {
      std::cout << summary.text(plan.spec().name, dir.root().string());
      std::cout << fmt::format("  results: {0}/results.csv, {0}/results.jsonl\n", dir.root().string());
    }
    const std::size_t not_ok = summary.failed + summary.failed_before;
    if (waited && (not_ok || summary.left))
      throw sim::SimulationError(
          fmt::format("{} of {} points failed and {} did not finish", not_ok, summary.total, summary.left));
  }

  void run_one() const {
    sweep::Plan plan = sweep::Plan::make(spec, sweep_catalog(), *point);
    sweep::SweepDir dir(fs::absolute(out.empty() ? "wafersim-out/sweep-" + plan.spec().name : out).lexically_normal());
    dir.prepare(plan);
    sweep::PointOptions po;
    po.force = force;
    po.retry_failed = retry_failed;
    sweep::PointOutcome o = sweep::run_point(plan, dir, *point, po);
    const std::string where = dir.point(*point).string();
    if (o.busy)
      throw sim::Error(static_cast<sim::ExitCode>(sweep::kExitPointBusy),
                       fmt::format("point {} is being run by another process ({})", *point, where));
    if (!o.ran) {
      std::cout << fmt::format("point {}: finished before ({}); skipped\n", *point, o.status);
      return;
    }
    std::cout << fmt::format("point {}: {} in {:.2f} s ({})\n", *point, o.status, o.wall_seconds,
                             sweep::describe(plan.points()[*point]));
    if (o.status != sweep::kStatusOk)
      throw sim::Error(
          static_cast<sim::ExitCode>(o.exit_code > 0 && o.exit_code < 256 ? o.exit_code : 1),
          fmt::format("point {} {} (exit code {}); see {}/status.json", *point, o.status, o.exit_code, where));
  }

  void print_list(const sweep::Plan& plan) const {
    if (json) {
      std::cout << plan.to_json().dump(2) << "\n";
      return;
    }
    const auto& sp = plan.spec();
    std::cout << fmt::format("sweep {}: {} points ({} candidates by {}, {} skipped by constraints)\n", sp.name,
                             plan.points().size(), plan.candidates(), to_string(sp.combine), plan.skipped());
    std::vector<std::size_t> width;
    for (const auto& p : sp.parameters) {
      std::size_t w = p.key.size();
      for (const auto& pt : plan.points())
        for (const auto& [k, v] : pt.params)
          if (k == p.key) w = std::max(w, v.size());
      width.push_back(w);
    }
    std::string head = fmt::format("{:>6}", "point");
    for (std::size_t i = 0; i < sp.parameters.size(); ++i)
      head += fmt::format("  {:<{}}", sp.parameters[i].key, width[i]);
    auto trim = [](std::string r) {
      while (!r.empty() && r.back() == ' ') r.pop_back();
      return r;
    };
    std::cout << trim(head) << "\n";
    for (const auto& pt : plan.points()) {
      std::string row = fmt::format("{:>6}", pt.index);
      for (std::size_t i = 0; i < pt.params.size(); ++i) row += fmt::format("  {:<{}}", pt.params[i].second, width[i]);
      std::cout << trim(row) << "\n";
    }
  }
};

}  // namespace

sweep::Catalog sweep_catalog() {
  sweep::Catalog c;
  for (const auto& s : kSweepable) {
    CLI::App app;
    s.add(app);
    CLI::App* cmd = app.get_subcommand(s.name);
    sweep::WorkloadCommand w;
    w.name = s.name;
    w.summary = cmd->get_description();
    for (const CLI::Option* o : cmd->get_options()) {
      if (o->get_positional() || o->get_lnames().empty() || reserved(o->get_lnames()[0])) continue;
      const std::string type = o->get_type_name();
      w.options.push_back(
          {o->get_lnames()[0], o->get_expected_max() == 0, type == "FILE" || type == "MODEL", o->get_description()});
    }
    c.commands.push_back(std::move(w));
  }
  c.check = [](const std::vector<std::string>& args) -> std::string {
    const Sweepable* s = args.empty() ? nullptr : find_sweepable(args[0]);
    if (!s) return "not a sweepable command";
    // The command's state lives in its callback; parse fully, then stop before it runs: the
    // root's parse-complete callback runs after every check and before any command callback.
    struct Parsed {};
    CLI::App app;
    app.require_subcommand(1);
    s->add(app);
    app.parse_complete_callback([] { throw Parsed{}; });
    std::vector<const char*> argv{"wafersim"};
    for (const auto& a : args) argv.push_back(a.c_str());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const Parsed&) {
      return {};
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "the command ran instead of being checked";
  };
  return c;
}

void add_sweep_command(CLI::App& app) {
  auto cmd = std::make_shared<SweepCommand>();
  CLI::App* sub = app.add_subcommand(
      "sweep",
      "run a parameter sweep from a YAML file: locally, on Slurm or through GNU parallel (see docs/sweeps.md)");
  cmd->sub = sub;
  sub->add_option("spec", cmd->spec, "the sweep file (YAML)")->required();
  sub->add_option("--out,-o", cmd->out,
                  "the sweep folder (default: wafersim-out/sweep-NAME); rerunning into it resumes")
      ->type_name("DIR");
  sub->add_option("--jobs,-j", cmd->jobs,
                  "points at once: local and parallel (default: the number of cores); Slurm: the array's task limit");
  sub->add_option("--backend,-b", cmd->backend,
                  "where points run: local (a process pool), slurm (a job array) or parallel (GNU parallel)")
      ->check(CLI::IsMember({"local", "slurm", "parallel"}))
      ->capture_default_str();
  sub->add_option("--point", cmd->point,
                  "run only point I (0-based) into DIR/points/NNNNN and record it; what every backend runs");
  sub->add_flag("--list", cmd->list, "print the points (parameters, and with --json each command line) and exit");
  sub->add_flag("--json", cmd->json, "print the summary as one JSON object on stdout");
  sub->add_flag("--retry-failed", cmd->retry_failed, "run again the points that finished without success");
  sub->add_flag("--force", cmd->force, "with --point: run the point even if it finished before");
  sub->add_option("--partition", cmd->slurm.partition, "Slurm: the partition to submit to");
  sub->add_option("--time", cmd->slurm.time, "Slurm: the time limit of each task (e.g. 30:00 or 2-00:00:00)");
  sub->add_option("--mem", cmd->slurm.mem, "Slurm: the memory of each task (e.g. 4G)");
  sub->add_option("--sbatch-arg", cmd->slurm.extra,
                  "Slurm: a further #SBATCH option, e.g. --sbatch-arg=--account=arch (repeatable)");
  sub->add_flag("--follow", cmd->slurm.follow, "Slurm: wait for the array to finish, showing progress (polls squeue)");
  sub->add_option("--sshloginfile", cmd->parallel.sshloginfile,
                  "GNU parallel: spread points over the hosts in FILE (same wafersim path and a shared sweep folder)");
  sub->add_option("--parallel-arg", cmd->parallel.extra, "GNU parallel: a further option, verbatim (repeatable)");
  sub->footer(
      "The sweep folder holds sweep.json (the points) and points/NNNNN/ (one folder per point: config.yaml,\n"
      "stats.json, status.json, and a 'done' marker written last). Rerunning a sweep runs only unfinished points;\n"
      "local and parallel sweeps end by writing results.csv and results.jsonl ('wafersim collect DIR' any time).\n"
      "Exit codes: 0 every point ok, 2 bad sweep file, 3 some points failed or did not finish;\n"
      "with --point: the point's own exit code, 75 when another process is running that point.\n"
      "Examples:\n"
      "  wafersim sweep sweeps/fabric-queue-hop.yaml --list\n"
      "  wafersim sweep sweeps/fabric-queue-hop.yaml --out sw --jobs 8\n"
      "  wafersim sweep sweeps/fabric-queue-hop.yaml --out sw --backend slurm --partition batch --time 10:00\n"
      "  wafersim sweep sweeps/fabric-queue-hop.yaml --out sw --backend parallel --sshloginfile hosts");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
