#include "sim/app/cli.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>

#include "platforms/energy_stats.h"
#include "sim/app/command_guess.h"
#include "sim/app/created_dirs.h"
#include "sim/app/rerun.h"
#include "sim/config/diagnostics.h"
#include "sim/config/utf8.h"
#include "sim/errors.h"
#include "sim/huge_pages.h"
#include "sim/parallel/thread_policy.h"
#include "sim/parallel/thread_use.h"
#include "sim/run_id.h"
#include "sim/stats/formatters.h"
#include "sim/systemc_reports.h"
#include "sim/units/quantity.h"
#include "sim/version.h"

namespace wafersim::app {
namespace {

constexpr unsigned kMaxThreads = 1024;

// run.json's "threads": the team size, the jobs, how often the bands were repartitioned, and
// per member the time spent sweeping bands and waiting at the end of each job for the others
// (the barrier).
nlohmann::ordered_json thread_use_json() {
  const sim::parallel::ThreadUse use = sim::parallel::thread_use();
  nlohmann::ordered_json j;
  j["threads"] = use.threads;
  j["jobs"] = use.jobs;
  j["rebalances"] = use.rebalances;
  nlohmann::ordered_json members = nlohmann::ordered_json::array();
  for (const sim::parallel::MemberTime& m : use.members) {
    nlohmann::ordered_json t;
    t["busy_seconds"] = static_cast<double>(m.busy_ns) * 1e-9;
    t["barrier_wait_seconds"] = static_cast<double>(m.wait_ns) * 1e-9;
    t["parts"] = m.parts;
    members.push_back(std::move(t));
  }
  j["members"] = std::move(members);
  return j;
}

}  // namespace

std::string& invocation_text() {
  static std::string text;
  return text;
}

void PlatformArgs::add(CLI::App& cmd, const std::string& fallback) {
  std::string help = "platform: a YAML file or a built-in preset name (";
  auto names = platforms::preset_names();
  for (std::size_t i = 0; i < names.size(); ++i) help += (i ? ", " : "") + names[i];
  help += ")";
  if (!fallback.empty()) {
    platform = fallback;
    cmd.add_option("platform", platform, help + "; default: " + fallback);
  } else {
    cmd.add_option("platform", platform, help)->required();
  }
  cmd.add_option("--set", set,
                 "override a platform key, e.g. --set wafer.clock=\"850 MHz\" or --set fabric.queue_depth=4 "
                 "(repeatable, applied in order)")
      ->type_name("KEY=VALUE");
}

platforms::LoadedPlatform PlatformArgs::load() const { return platforms::load_platform(platform, set); }

void SimArgs::add(CLI::App& cmd) {
  cmd.add_option("--out,-o", out, "output folder for this run (default: a new folder under wafersim-out/)")
      ->type_name("DIR");
  cmd.add_flag("--force", force,
               "write into a non-empty --out folder: the files of an earlier run there are removed first, other "
               "files are kept");
  cmd.add_option("--max-cycles", max_cycles, "stop with exit code 4 after this many cycles (0: no limit)");
  cmd.add_option("--max-wall", max_wall, "stop with exit code 4 after this many wall-clock seconds (0: no limit)")
      ->check(number_at_least(0.0, "a number of seconds"));
  cmd.add_option("--max-memory", max_memory,
                 "refuse to start (exit code 2) when the run's estimated host memory exceeds this size, e.g. "
                 "\"8 GiB\" (default: the memory the machine has available)")
      ->type_name("SIZE");
  cmd.add_flag("--no-idle-skip", no_idle_skip,
               "tick every component every cycle (slow; proves idle skipping changes no result)");
  cmd.add_flag("--no-run-ahead", no_run_ahead,
               "a compiled model's run: issue every instruction of a PE's main thread, and take every step "
               "of its vector operations, in its own cycle's tick (slower; proves running ahead changes no "
               "result, docs/performance.md)");
  cmd.add_option("--seed", seed, "random seed; the same inputs and seed give bit-identical statistics")
      ->capture_default_str();
  cmd.add_flag("--json", json, "print the summary as one JSON object on stdout");
  cmd.add_option("--threads", threads,
                 "host threads sweeping each wafer's rows in bands of 8 (a co-simulated cluster: its wafers spread "
                 "over them, one wafer per thread): a count, 0 for the host's hardware threads, or auto: the "
                 "hardware threads when a wafer has at least 16384 PEs (128 x 128), else 1 (a co-simulated "
                 "cluster: one per wafer, at most the hardware threads); the statistics are the same for every "
                 "count (docs/parallel.md)")
      ->type_name("auto|N")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "auto") return {};
            unsigned n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc() || end != v.data() + v.size() || n > kMaxThreads)
              return fmt::format("expected auto or a thread count from 0 to {}, found '{}'", kMaxThreads, v);
            return {};
          },
          "auto|N", "threads"))
      ->capture_default_str();
}

platforms::BuildOptions SimArgs::build_options() const {
  platforms::BuildOptions o;
  o.idle_skip = !no_idle_skip;
  o.run_ahead = !no_run_ahead;
  o.max_cycles = max_cycles ? sim::Cycle(max_cycles) : sim::Cycle::never();
  o.seed = seed;
  if (threads == "auto")
    o.threads = sim::parallel::kAutoThreads;
  else {
    const unsigned n = static_cast<unsigned>(std::stoul(threads));
    o.threads = n ? n : sim::parallel::Team::hardware_threads();
  }
  if (!max_memory.empty()) {
    const units::ParseResult r = units::parse(max_memory, units::Dimension::DataSize);
    if (!r.ok || r.value < 8)
      throw sim::InputError(fmt::format("--max-memory: expected a data size such as \"8 GiB\", found '{}'{}",
                                        max_memory, r.ok ? "" : ": " + r.error));
    o.max_memory = static_cast<std::uint64_t>(r.value / 8);
  }
  return o;
}

sim::RunLimits SimArgs::limits() const {
  sim::RunLimits l;
  l.max_cycles = max_cycles ? sim::Cycle(max_cycles) : sim::Cycle::never();
  l.max_wall_seconds = max_wall;
  return l;
}

void write_run_files(const RunDir& dir, const platforms::LoadedPlatform& platform, sim::stats::Group& stats,
                     const std::string& command_line, double wall_seconds, sim::Cycle cycles, const std::string& status,
                     const nlohmann::ordered_json& ranks) {
  platforms::add_energy_stats(stats, platform.spec, cycles);
  dir.write("config.yaml", platform.resolved_yaml);
  dir.write("stats.json", sim::stats::stats_file_json(stats));
  std::ostringstream text;
  sim::stats::write_text(text, stats);
  dir.write("stats.txt", text.str());
  nlohmann::ordered_json meta;
  meta["format"] = "wafersim-run/1";
  meta["run_id"] = sim::run_id();
  meta["wafersim_version"] = std::string(sim::kVersion);
  meta["command_line"] = command_line;
  meta["argv"] = invocation_args();
  meta["platform"] = platform.spec.name;
  meta["status"] = status;
  meta["cycles"] = cycles.count();
  meta["wall_seconds"] = wall_seconds;
  meta["cycles_per_second"] = wall_seconds > 0 ? static_cast<double>(cycles.count()) / wall_seconds : 0.0;
  meta["threads"] = thread_use_json();
  const sim::EngineWork work = sim::engine_work();
  meta["engine"] = {{"cycles_ticked", work.cycles_ticked},
                    {"cycles_skipped", work.cycles_skipped},
                    {"core_ticks", work.core_ticks},
                    {"router_visits", work.router_visits}};
  meta["huge_pages"] = sim::heap_huge_pages();
  if (!ranks.is_null()) meta["ranks"] = ranks;
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) meta["peak_memory_bytes"] = std::uint64_t(usage.ru_maxrss) * 1024;
  dir.write("run.json", meta.dump(2) + "\n");
  capture_inputs(dir.path());
}

namespace {

// CLI11 2.1 wraps "-5" into a huge unsigned value and turns an out-of-range number into 0:
// every integer option checks its text first, so neither goes unnoticed.
void guard_integer_options(CLI::App& app) {
  const CLI::Validator unsigned_text(
      [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size())
          return fmt::format("expected a whole number in 0 .. {}, found '{}'",
                             std::numeric_limits<std::uint64_t>::max(), text);
        return {};
      },
      "", "unsigned");
  // NaN compares false with every bound and infinity passes "at least": neither is a number.
  const CLI::Validator finite_text(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return fmt::format("expected a number, found '{}'", text);
        if (!std::isfinite(v)) return fmt::format("expected a finite number, found '{}'", text);
        return {};
      },
      "", "finite");
  const CLI::Validator signed_text(
      [](std::string& text) -> std::string {
        std::int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size())
          return fmt::format("expected a whole number, found '{}'", text);
        return {};
      },
      "", "signed");
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_name() == "UINT") opt->check(unsigned_text);
    if (opt->get_type_name() == "INT") opt->check(signed_text);
    if (opt->get_type_name() == "FLOAT") opt->check(finite_text);
  }
  for (CLI::App* sub : app.get_subcommands({})) guard_integer_options(*sub);
}

// Every argument is text that may reach run.json, a JSON summary or a file name in a report:
// one that is not UTF-8 is refused before anything runs.
void check_arguments_utf8(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    const std::size_t at = sim::config::invalid_utf8_at(arg);
    if (at != std::string_view::npos)
      throw sim::InputError(
          fmt::format("argument {} is not valid UTF-8 (byte 0x{:02X} at offset {}); names, values "
                      "and paths must be UTF-8",
                      i, static_cast<unsigned char>(arg[at]), at));
  }
}

// Parses the line and runs its command; the exit code.
int parse_and_run(CLI::App& app, int argc, char** argv) {
  try {
    check_arguments_utf8(argc, argv);
    app.parse(argc, argv);
    return sim::kExitOk;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command's own non-zero exit (diff --exit-code), already reported
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return sim::kExitBadInput;
  } catch (const sim::Interrupted& e) {
    std::cerr << "wafersim: " << e.what() << "\n";
    record_run_status(invocation_text(), e.what());
    return e.exit_code();
  } catch (const sim::config::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return e.exit_code();
  } catch (const sim::Error& e) {
    std::cerr << "wafersim: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const sc_core::sc_report& e) {
    std::cerr << "wafersim: SystemC error: " << e.what() << "\n";
    return sim::kExitSimulation;
  } catch (const std::bad_alloc&) {
    record_run_status(invocation_text(), "out of memory");
    std::cerr << "wafersim: error: out of memory: the host could not allocate what the run needed (see the memory "
                 "estimate of 'wafersim info', and --max-memory)\n";
    return sim::kExitSimulation;
  } catch (const std::exception& e) {
    std::cerr << "wafersim: internal error: " << e.what() << "\n";
    return sim::kExitInternal;
  }
}

}  // namespace

CLI::Validator number_at_least(double min, const std::string& what) {
  return CLI::Validator(
      [min, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v < min)
          return fmt::format("expected {} of at least {}, found '{}'", what, min, text);
        return {};
      },
      "", "at least");
}

int run_cli(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (sim::config::invalid_utf8_at(argv[i]) != std::string_view::npos) continue;
    invocation_text() += (i ? " " : "") + std::string(argv[i]);
  }
  invocation_args().assign(argv, argv + argc);
  sim::install_systemc_report_handler();

  CLI::App app{
      fmt::format("wafersim {} - cycle-level simulator of wafer-scale AI hardware (Cerebras-style WSE wafers,\n"
                  "MemoryX and SwarmX). Platforms are YAML files or built-in presets; every number carries a unit.\n"
                  "Exit codes: 0 ok, 2 bad input, 3 simulation error (deadlock, SRAM overflow), 4 run limit reached.",
                  sim::kVersion)};
  app.name("wafersim");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(sim::kVersion));
  app.footer(
      "Examples:\n"
      "  wafersim run                                  simulate the built-in default\n"
      "  wafersim info wse2 --json                     derived figures of the WSE-2 preset\n"
      "  wafersim validate my-platform.yaml            check a file and report every error\n"
      "  wafersim run tiny --set fabric.queue_depth=4  override a key from the command line\n"
      "  wafersim memoryx-plan andromeda --params 1.3e9 --layers 24   where MemoryX keeps a model\n"
      "  wafersim sweep sweeps/fabric-queue-hop.yaml   run a parameter sweep on all cores\n"
      "  wafersim traffic tiny --pattern uniform --rate 0.3   synthetic traffic on the fabric\n"
      "  wafersim exec tiny --program prog.s           run hand-written PE programs (docs/isa.md)\n"
      "  wafersim train tiny-cluster --model tiny-mlp --steps 3   data-parallel training steps\n"
      "  wafersim report RUN_DIR                       an HTML page of a run traced with --trace\n"
      "  wafersim diff RUN_A RUN_B                     the statistics that differ, largest change first\n"
      "  wafersim rerun RUN_DIR --out AGAIN            the same run again from its folder (same stats.json)\n"
      "  wafersim yield wse3 --defect-density 0.001    cores a defective wafer keeps (Monte Carlo)\n"
      "  wafersim compile wse2 --model gpt3-xl         map a model onto a wafer (docs/compiler.md)\n"
      "  wafersim run tiny --model tiny-mlp            train one step of a model on a simulated wafer\n"
      "  wafersim infer tiny --model tiny-transformer --decode-tokens 2   inference, weights resident\n"
      "Run 'wafersim COMMAND --help' for a command's options.");

  add_run_command(app);
  add_train_command(app);
  add_infer_command(app);
  add_info_command(app);
  add_validate_command(app);
  add_schema_command(app);
  add_memoryx_plan_command(app);
  add_sweep_command(app);
  add_collect_command(app);
  add_traffic_command(app);
  add_exec_command(app);
  add_compile_command(app);
  add_stream_loop_command(app);
  add_report_command(app);
  add_diff_command(app);
  add_rerun_command(app);
  add_yield_command(app);
  guard_integer_options(app);
  if (const std::string unknown = unknown_command_error(app, argc, argv); !unknown.empty()) {
    std::cerr << unknown << "\n";
    return sim::kExitBadInput;
  }

  const int code = parse_and_run(app, argc, argv);
  if (code != sim::kExitOk) remove_empty_created_dirs();
  return code;
}

}  // namespace wafersim::app
