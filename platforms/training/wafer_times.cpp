#include "platforms/training/wafer_times.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <systemc>

#include "platforms/runtime/executor.h"
#include "platforms/runtime/host_data.h"
#include "platforms/wafer.h"
#include "sim/child_process.h"
#include "sim/engine/engine_work.h"
#include "sim/errors.h"
#include "sim/parallel/thread_use.h"
#include "sim/stats/formatters.h"

namespace wafersim::platforms::training {

nlohmann::json run_programs_here(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                                 runtime::HostData data, std::uint64_t seed, bool check, std::uint64_t max_cycles,
                                 const std::function<void(const runtime::Executor&)>& after,
                                 nlohmann::json* wafer_stats, unsigned threads, const sim::RunLimits& limits) {
  using namespace sc_core;
  sim::stats::Group root("");
  platforms::BuildOptions build;
  build.seed = seed;
  build.threads = threads;
  build.routes = cm.routes;
  if (max_cycles) build.max_cycles = sim::Cycle(max_cycles);
  platforms::Wafer wafer("wafer0", spec, build, root);
  runtime::Executor exec(cm, wafer, std::move(data), {check});
  if (wafer_stats) exec.add_stats(wafer.stats().group("model"));
  const sc_time load = exec.load_inputs();
  sc_start(SC_ZERO_TIME);
  runtime::advance_load(wafer.engine(), load, build.max_cycles, fmt::format("the wafer run of '{}'", cm.model.name));
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < exec.steps(); ++i) {
    exec.start(i);
    sim::run_until_quiet(&wafer.engine(), limits,
                         fmt::format("the wafer run of '{}', program {} of {}", cm.model.name, i + 1, exec.steps()));
    if (wafer.engine().failed()) wafer.engine().rethrow_failure();
    const auto& r = exec.finish(i);
    std::uint64_t compared = 0, bad = 0;
    std::string first;
    nlohmann::json value;
    for (const auto& c : r.checks) {
      if (c.value) value = *c.value;
      compared += c.compared;
      bad += c.mismatches;
      if (c.mismatches && first.empty()) first = fmt::format("{}: {}: {}", r.name(), c.what, c.first_mismatch);
    }
    out.push_back(
        {{"cycles", r.cycles()}, {"compared", compared}, {"mismatches", bad}, {"first", first}, {"value", value}});
  }
  if (after) after(exec);
  if (wafer_stats)
    *wafer_stats = {{"values", sim::stats::to_json(wafer.stats())},
                    {"descriptions", sim::stats::describe_json(wafer.stats())}};
  return out;
}

WaferTimes wafer_times(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                       const nlohmann::json& programs) {
  WaferTimes t;
  t.source = TimingSource::Simulated;
  t.clock_hz = spec.wafer.clock.hz;
  if (programs.size() != cm.programs.size())
    throw sim::SimulationError(fmt::format("the wafer run of '{}' returned {} programs, expected {}", cm.model.name,
                                           programs.size(), cm.programs.size()));
  for (std::size_t i = 0; i < cm.programs.size(); ++i) {
    ProgramTime p;
    p.layer = cm.programs[i].layer;
    p.phase = cm.programs[i].phase;
    p.cycles = programs[i]["cycles"].get<std::uint64_t>();
    p.mismatches = programs[i]["mismatches"].get<std::uint64_t>();
    t.checked += programs[i]["compared"].get<std::uint64_t>();
    if (p.mismatches && t.first_mismatch.empty()) t.first_mismatch = programs[i]["first"].get<std::string>();
    t.mismatches += p.mismatches;
    t.programs.push_back(p);
  }
  return t;
}

const char* to_string(TimingSource s) { return s == TimingSource::Simulated ? "simulated" : "bound"; }

TimingSource parse_timing_source(const std::string& text) {
  if (text == "simulated") return TimingSource::Simulated;
  if (text == "bound") return TimingSource::Bound;
  throw sim::InputError(fmt::format("unknown timing source '{}': expected 'simulated' or 'bound'", text));
}

std::uint64_t WaferTimes::cycles() const {
  std::uint64_t n = 0;
  for (const auto& p : programs) n += p.cycles;
  return n;
}

WaferTimes simulate_programs(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                             std::uint64_t seed, bool check, std::uint64_t max_cycles, unsigned threads,
                             const sim::RunLimits& limits) {
  const nlohmann::json reply = sim::run_in_child(
      [&] {
        const sim::EngineWork inherited = sim::engine_work();  // the parent's, before the fork
        nlohmann::json stats;
        nlohmann::json programs = run_programs_here(spec, cm, runtime::make_host_data(cm, seed), seed, check,
                                                    max_cycles, {}, &stats, threads, limits);
        // The child's threads, for this process's run.json.
        const sim::parallel::ThreadUse use = sim::parallel::thread_use();
        nlohmann::json members = nlohmann::json::array();
        for (const auto& m : use.members) members.push_back({m.busy_ns, m.wait_ns, m.parts});
        const sim::EngineWork work = sim::engine_work();
        return nlohmann::json{
            {"programs", std::move(programs)},
            {"stats", std::move(stats)},
            {"threads",
             {{"threads", use.threads}, {"jobs", use.jobs}, {"members", members}, {"rebalances", use.rebalances}}},
            {"engine",
             {work.cycles_ticked - inherited.cycles_ticked, work.cycles_skipped - inherited.cycles_skipped,
              work.core_ticks - inherited.core_ticks, work.router_visits - inherited.router_visits}}};
      },
      fmt::format("the wafer run of '{}'", cm.model.name));
  WaferTimes t = wafer_times(spec, cm, reply["programs"]);
  t.wafer_stats = reply["stats"];
  sim::parallel::ThreadUse use;
  use.threads = reply["threads"]["threads"].get<unsigned>();
  use.jobs = reply["threads"]["jobs"].get<std::uint64_t>();
  use.rebalances = reply["threads"]["rebalances"].get<std::uint64_t>();
  for (const auto& m : reply["threads"]["members"])
    use.members.push_back({m[0].get<std::uint64_t>(), m[1].get<std::uint64_t>(), m[2].get<std::uint64_t>()});
  sim::parallel::add_thread_use(use);
  const nlohmann::json& e = reply["engine"];
  sim::add_engine_work(
      {e[0].get<std::uint64_t>(), e[1].get<std::uint64_t>(), e[2].get<std::uint64_t>(), e[3].get<std::uint64_t>()});
  return t;
}

WaferTimes bound_programs(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm) {
  WaferTimes t;
  t.source = TimingSource::Bound;
  t.clock_hz = spec.wafer.clock.hz;
  for (const auto& p : cm.programs) t.programs.push_back(ProgramTime{p.layer, p.phase, p.bound.cycles, 0});
  return t;
}

}  // namespace wafersim::platforms::training
