#pragma once
// The `wafersim` command line: shared option groups and the command factories.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "platforms/platform_spec.h"
#include "platforms/wafer.h"
#include "sim/app/run_dir.h"
#include "sim/app/sweep/catalog.h"
#include "sim/run_loop.h"
#include "sim/stats/stats.h"

namespace wafersim::app {

// PLATFORM and --set, for every command that takes a platform.
struct PlatformArgs {
  std::string platform;
  std::vector<std::string> set;
  // Adds the positional PLATFORM (optional with `fallback` when non-empty) and --set.
  void add(CLI::App& cmd, const std::string& fallback);
  [[nodiscard]] platforms::LoadedPlatform load() const;
};

// --out, limits, idle skipping, seed and --json, for every command that simulates.
struct SimArgs {
  std::string out;
  bool force = false;  // --force: a non-empty --out folder's earlier run files are replaced
  std::uint64_t max_cycles = 0;
  double max_wall = 0;
  std::string max_memory;  // --max-memory SIZE ("8 GiB"); empty: the machine's available memory
  bool no_idle_skip = false;
  bool no_run_ahead = false;
  std::uint64_t seed = 1;
  bool json = false;
  std::string threads = "auto";  // --threads: "auto" (by the wafer's size), or a count (0: the host's threads)
  void add(CLI::App& cmd);
  // The build options; sim::InputError when --max-memory is not a data size.
  [[nodiscard]] platforms::BuildOptions build_options() const;
  [[nodiscard]] sim::RunLimits limits() const;
  // The run folder for `command`: --out (refused when not empty, unless --force) or a new one.
  [[nodiscard]] RunDir run_dir(const std::string& command) const { return RunDir::create(out, command, force); }
};

// Writes the files every run leaves in its folder: config.yaml (the resolved platform; the
// platform alone, not the workload), stats.json, stats.txt, run.json (metadata: command line
// as text and as the list "argv", wall time, version; the only file that differs between
// identical runs) and, for `wafersim rerun`, rerun.json with inputs/ (rerun.h). First adds
// the run's energy to the statistics (platforms/energy_stats.h), once. `ranks`, when not null,
// goes into run.json as "ranks" (a run over MPI ranks).
void write_run_files(const RunDir& dir, const platforms::LoadedPlatform& platform, sim::stats::Group& stats,
                     const std::string& command_line, double wall_seconds, sim::Cycle cycles, const std::string& status,
                     const nlohmann::ordered_json& ranks = nullptr);

// The command line this process was started with (for run.json).
std::string& invocation_text();

// Command factories, called in this order by main.
void add_run_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_infer_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_schema_command(CLI::App& app);
void add_memoryx_plan_command(CLI::App& app);
void add_exec_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_collect_command(CLI::App& app);

// The commands a sweep may run (cmd_sweep.cpp holds the table) with their options.
sweep::Catalog sweep_catalog();
void add_traffic_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_stream_loop_command(CLI::App& app);
void add_yield_command(CLI::App& app);
void add_diff_command(CLI::App& app);
void add_rerun_command(CLI::App& app);

// A CLI11 check for a floating-point option: a finite number not below `min`; the message
// reads "expected WHAT of at least MIN, found 'TEXT'".
CLI::Validator number_at_least(double min, const std::string& what);

// Parses and runs one command; returns the process exit code.
int run_cli(int argc, char** argv);

}  // namespace wafersim::app
