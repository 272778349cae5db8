// `wafersim exec`: load hand-written assembly programs onto PEs, run them, print cycles and stats.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "fabric/route_loader.h"
#include "hw/isa/assembler.h"
#include "hw/numerics/softfloat.h"
#include "platforms/cluster.h"
#include "platforms/run_trace.h"
#include "sim/app/cli.h"
#include "sim/app/progress.h"
#include "sim/app/trace_args.h"
#include "sim/config/diagnostics.h"
#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::app {
namespace {

// --dump X,Y:ADDRESS:COUNT:TYPE
struct Dump {
  hw::PeCoord pe;
  std::uint32_t addr = 0;
  std::uint32_t count = 0;
  hw::DType type = hw::DType::F32;
  std::string text;
};

// Parses "X,Y:ADDRESS:COUNT:TYPE" (ADDRESS decimal or 0x hex).
Dump parse_dump(const std::string& s) {
  auto bad = [&]() -> sim::InputError {
    return sim::InputError(fmt::format("--dump '{}': expected X,Y:ADDRESS:COUNT:TYPE, e.g. 0,0:0x100:4:f32", s));
  };
  std::vector<std::string> parts;  // "X,Y", ADDRESS, COUNT, TYPE
  std::size_t from = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ':') {
      parts.push_back(s.substr(from, i - from));
      from = i + 1;
    }
  if (parts.size() != 4) throw bad();
  const auto comma = parts[0].find(',');
  if (comma == std::string::npos) throw bad();
  parts.insert(parts.begin() + 1, parts[0].substr(comma + 1));
  parts[0].resize(comma);
  auto number = [&](const std::string& t, std::uint64_t max) {
    const bool hex = t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
    const std::string digits = hex ? t.substr(2) : t;
    if (digits.empty() || digits.size() > 12 ||
        digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
      throw bad();
    const std::uint64_t v = std::stoull(digits, nullptr, hex ? 16 : 10);
    if (v > max) throw bad();
    return v;
  };
  Dump d;
  d.text = s;
  d.pe = hw::PeCoord{static_cast<std::uint16_t>(number(parts[0], 65535)),
                     static_cast<std::uint16_t>(number(parts[1], 65535))};
  d.addr = static_cast<std::uint32_t>(number(parts[2], 0xffffffffu));
  d.count = static_cast<std::uint32_t>(number(parts[3], 1u << 24));
  auto t = hw::parse_dtype(parts[4]);
  if (!t) throw sim::InputError(fmt::format("--dump '{}': unknown type '{}' (f16, bf16, f32, u16, u32)", s, parts[4]));
  d.type = *t;
  return d;
}

nlohmann::json dump_values(hw::CoreArray& cores, const Dump& d) {
  if (!cores.contains(d.pe))
    throw sim::InputError(fmt::format("--dump '{}': PE ({}, {}) is outside the {} x {} grid", d.text, d.pe.x, d.pe.y,
                                      cores.width(), cores.height()));
  const unsigned esize = hw::size_of(d.type);
  if (!hw::Sram(cores.params().sram_bytes).in_range(d.addr, std::uint64_t{d.count} * esize))
    throw sim::InputError(fmt::format("--dump '{}': {} bytes at {:#x} are beyond the PE's SRAM", d.text,
                                      std::uint64_t{d.count} * esize, d.addr));
  nlohmann::json values = nlohmann::json::array();
  const hw::Core* core = cores.find(d.pe);
  for (std::uint32_t i = 0; i < d.count; ++i) {
    const std::uint32_t bits = core ? core->sram().load(d.addr + i * esize, esize) : 0;
    if (hw::is_float(d.type)) {
      const double v = hw::numerics::to_double(d.type, bits);
      if (std::isfinite(v))
        values.push_back(v);
      else
        values.push_back(std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
    } else {
      values.push_back(bits);
    }
  }
  return values;
}

// A task declared but never started usually means a missing route or activation: the run
// still succeeds, with a warning on stderr naming the first few.
void warn_tasks_never_started(const hw::CoreArray& cores) {
  std::vector<std::string> idle;
  cores.for_each_loaded([&](const hw::Core& c) {
    for (const auto* t : c.tasks_never_started())
      idle.push_back(
          fmt::format("'{}' on PE ({}, {}), declared at {}", t->name, c.coord().x, c.coord().y, t->location.str()));
  });
  if (idle.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < idle.size() && i < 4; ++i) list += "\n  " + idle[i];
  if (idle.size() > 4) list += fmt::format("\n  ... and {} more", idle.size() - 4);
  std::cerr << fmt::format("wafersim exec: warning: {} task(s) never ran:{}\n", idle.size(), list);
}

struct ExecCommand {
  PlatformArgs platform;
  SimArgs sim;
  std::string program;
  std::string routes;
  std::vector<std::string> dumps;
  TraceArgs trace;
  bool timing_only = false;

  void execute() const {
    if (timing_only && !dumps.empty())
      throw sim::InputError("--dump prints SRAM values, which a --timing-only run does not compute");
    auto loaded = platform.load();
    std::vector<Dump> parsed;
    for (const auto& d : dumps) parsed.push_back(parse_dump(d));
    auto placements = hw::isa::assemble_file(program);
    if (placements.empty())
      throw sim::config::ConfigError(sim::config::Diagnostic{
          sim::config::Location{program, 1, 1},
          {},
          "the program places no code on any PE (expected at least one '.pe X,Y' block with instructions)"});
    platforms::BuildOptions build = sim.build_options();
    build.routing = fabric::Routing::Static;
    build.timing_only = timing_only;
    if (!routes.empty()) {
      const auto& w = loaded.spec.wafer;
      build.routes = std::make_shared<fabric::RouteTable>(
          fabric::load_routes(routes, fabric::MeshGeometry(w.width, w.height, loaded.spec.fabric.edge_io_channels),
                              loaded.spec.fabric.colors));
    }
    sim::trace::TraceOptions trace_options = trace.options();
    // The run's length is not known ahead: windows start at one cycle and double as it goes,
    // to between 100 and 200 windows unless asked otherwise.
    if (trace_options.any() && trace_options.window_cycles == 0) {
      trace_options.window_cycles = 1;
      if (!trace.max_windows_given()) trace_options.max_windows = 200;
    }
    RunDir dir = sim.run_dir("exec");
    std::unique_ptr<platforms::RunTrace> tracing;
    if (trace_options.any()) {
      tracing = std::make_unique<platforms::RunTrace>(trace_options, dir.path(), loaded.spec, 0);
      tracing->configure(build);
    }
    sim::stats::Group root("");
    platforms::Cluster cluster("cluster", loaded.spec, build, root);
    auto& wafer = cluster.wafer(0);
    if (tracing)
      for (std::size_t i = 0; i < cluster.wafer_count(); ++i)
        tracing->attach(cluster.wafer(i), static_cast<std::uint32_t>(i));
    for (const auto& p : placements) wafer.cores().load(p);
    std::vector<const sim::Engine*> engines;
    for (std::size_t i = 0; i < cluster.wafer_count(); ++i) engines.push_back(&cluster.wafer(i).engine());

    Progress progress("exec", 0, "cycles", Progress::terminal() && !sim.json);
    sim::RunOutcome outcome;
    try {
      outcome = sim::run_simulation(wafer.engine(), engines, sim::Cycle::never(), sim.limits(), progress,
                                    [&] { return wafer.cores().failed(); });
    } catch (const sim::LimitReached&) {
      write_run_files(dir, loaded, root, invocation_text(), progress.elapsed_seconds(), wafer.engine().cycles(),
                      "limit");
      if (tracing) tracing->finish(wafer.engine().cycles());
      throw;
    } catch (const sim::SimulationError&) {  // e.g. the fabric's deadlock watchdog
      write_run_files(dir, loaded, root, invocation_text(), progress.elapsed_seconds(), wafer.engine().cycles(),
                      "error");
      if (tracing) tracing->finish(wafer.engine().cycles());
      throw;
    }
    auto& cores = wafer.cores();
    std::string status = "ok";
    try {
      cores.check_finished();
    } catch (const sim::Error&) {
      write_run_files(dir, loaded, root, invocation_text(), outcome.wall_seconds, outcome.cycles, "error");
      if (tracing) tracing->finish(outcome.cycles);
      throw;
    }
    warn_tasks_never_started(cores);
    const std::uint64_t cycles = cores.finish_cycle();
    write_run_files(dir, loaded, root, invocation_text(), outcome.wall_seconds, sim::Cycle(cycles), status);
    if (tracing) tracing->finish(sim::Cycle(cycles));

    nlohmann::ordered_json j;
    j["platform"] = loaded.spec.name;
    j["program"] = program;
    j["timing_only"] = timing_only;
    j["pes_loaded"] = static_cast<std::uint64_t>(root.find("cluster.wafer0.cores.pes_loaded")->value());
    j["cycles"] = cycles;
    j["instructions"] = cores.total(&hw::CoreCounters::instructions);
    j["flops"] = cores.total(&hw::CoreCounters::flops);
    j["busy_cycles"] = cores.total(&hw::CoreCounters::busy_cycles);
    j["sram_allocated_bytes"] = cores.sram_allocated_bytes();
    nlohmann::ordered_json stalls;
    for (int s = 0; s < hw::kStallCauses; ++s)
      stalls[std::string(hw::stall_name(static_cast<hw::Stall>(s)))] = cores.total_stall(static_cast<hw::Stall>(s));
    j["stalls"] = stalls;
    nlohmann::ordered_json pes = nlohmann::ordered_json::array();
    for (const auto& p : placements)
      for (std::uint32_t y = p.y0; y <= p.y1; ++y)
        for (std::uint32_t x = p.x0; x <= p.x1; ++x) {
          const hw::Core* c = cores.find(hw::PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y)});
          if (!c || pes.size() >= 64) continue;
          const hw::CoreCounters k = cores.accounted(c->coord());
          pes.push_back({{"x", x},
                         {"y", y},
                         {"finish_cycle", k.finish_cycle},
                         {"busy_cycles", k.busy_cycles},
                         {"instructions", k.instructions},
                         {"flops", k.flops},
                         {"stall_cycles", k.stall_total()}});
        }
    j["pes"] = pes;
    nlohmann::ordered_json dumped = nlohmann::ordered_json::array();
    for (const auto& d : parsed) dumped.push_back({{"dump", d.text}, {"values", dump_values(cores, d)}});
    j["dumps"] = dumped;
    j["out"] = dir.path().string();
    if (tracing) j["trace"] = tracing->dir().string();
    if (sim.json) {
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << fmt::format("wafersim exec: {} on {} ({} PE{} loaded)\n", program, loaded.spec.name,
                             j["pes_loaded"].get<std::uint64_t>(),
                             j["pes_loaded"].get<std::uint64_t>() == 1 ? "" : "s");
    std::cout << fmt::format("  cycles        {} ({} at {})\n", cycles,
                             units::pretty(static_cast<double>(cycles) / loaded.spec.wafer.clock.hz, "s"),
                             units::format(loaded.spec.wafer.clock));
    std::cout << fmt::format("  instructions  {}\n  flops         {}\n", j["instructions"].get<std::uint64_t>(),
                             j["flops"].get<std::uint64_t>());
    std::string stall_line;
    for (auto& [k, v] : stalls.items())
      if (v.get<std::uint64_t>()) stall_line += fmt::format(" {} {}", k, v.get<std::uint64_t>());
    std::cout << "  stalls       " << (stall_line.empty() ? " none" : stall_line) << "\n";
    if (pes.size() > 1 && pes.size() <= 16)
      for (const auto& p : pes)
        std::cout << fmt::format("  PE ({}, {})     finish {} busy {} instructions {} flops {} stalls {}\n",
                                 p["x"].get<int>(), p["y"].get<int>(), p["finish_cycle"].get<std::uint64_t>(),
                                 p["busy_cycles"].get<std::uint64_t>(), p["instructions"].get<std::uint64_t>(),
                                 p["flops"].get<std::uint64_t>(), p["stall_cycles"].get<std::uint64_t>());
    for (const auto& d : dumped)
      std::cout << fmt::format("  {}  {}\n", d["dump"].get<std::string>(), d["values"].dump());
    std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json)\n",
                             dir.path().string());
    if (tracing)
      std::cout << fmt::format("  trace         {}/ ('wafersim report {}' makes an HTML page of it)\n",
                               tracing->dir().string(), dir.path().string());
  }
};

}  // namespace

void add_exec_command(CLI::App& app) {
  auto cmd = std::make_shared<ExecCommand>();
  CLI::App* sub = app.add_subcommand(
      "exec", "load hand-written assembly programs onto PEs, run them to completion, print cycles and stats");
  cmd->platform.add(*sub, "");
  sub->add_option("--program,-p", cmd->program,
                  "assembly file (docs/isa.md): `.pe X, Y` sections say which PEs run what")
      ->required()
      ->type_name("FILE");
  sub->add_option("--routes", cmd->routes,
                  "static color routes of the mesh (docs/routes.md); without it no color is routed between PEs")
      ->type_name("FILE");
  sub->add_option("--dump", cmd->dumps, "print SRAM contents after the run, e.g. --dump 0,0:0x100:4:f32 (repeatable)")
      ->type_name("X,Y:ADDR:COUNT:TYPE");
  sub->add_flag("--timing-only", cmd->timing_only,
                "cycles without data: vector instructions move no values and program data is not stored (SRAM "
                "pages only for scalar stores); same cycle counts when branches and addresses do not depend on "
                "those values");
  cmd->sim.add(*sub);
  cmd->trace.add(*sub);
  sub->footer(
      "Examples:\n"
      "  wafersim exec tiny --program examples/programs/axpy.s\n"
      "  wafersim exec tiny --program examples/programs/stream.s --routes examples/programs/stream-routes.yaml\n"
      "The run ends when every PE is idle (no task running, no vector operation in flight).\n"
      "'cycles' is one past the last cycle in which any PE was busy. A program error (SRAM access\n"
      "beyond capacity, ...) or PEs left waiting forever is exit code 3; bad assembly is exit code 2\n"
      "with FILE:LINE:COL for every error.\n"
      "Tracing (docs/trace.md): --trace windows,timeline --trace-pes 1,1 records per-PE busy cycles by\n"
      "cause, SRAM use, fabric windows, and the tasks and vector operations of the chosen PEs;\n"
      "'wafersim report RUN_DIR' makes an HTML page of them.");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
