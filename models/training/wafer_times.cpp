#include "models/training/wafer_times.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <systemc>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "models/runtime/executor.h"
#include "models/runtime/host_data.h"
#include "platforms/wafer.h"
#include "sim/errors.h"

namespace wafersim::models::training {
namespace {

// The child's work: the same loop as `wafersim run --model` (load, then each program until the
// wafer is quiescent), reported as JSON.
nlohmann::json run_on_wafer(const platforms::PlatformSpec& spec, const compiler::CompiledModel& cm, std::uint64_t seed,
                            bool check, std::uint64_t max_cycles) {
  using namespace sc_core;
  sim::stats::Group root("");
  platforms::BuildOptions build;
  build.seed = seed;
  build.routes = cm.routes;
  if (max_cycles) build.max_cycles = sim::Cycle(max_cycles);
  platforms::Wafer wafer("wafer0", spec, build, root);
  runtime::Executor exec(cm, wafer, runtime::make_host_data(cm, seed), {check});
  const sc_time load = exec.load_inputs();
  sc_start(SC_ZERO_TIME);
  sc_start(load);
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < exec.steps(); ++i) {
    exec.start(i);
    while (sc_pending_activity()) {
      sc_start(sc_max_time() - sc_time_stamp(), SC_EXIT_ON_STARVATION);
      if (wafer.engine().failed()) wafer.engine().rethrow_failure();
      if (max_cycles && wafer.engine().now().count() >= max_cycles)
        throw sim::LimitReached(fmt::format("the wafer run of '{}' reached {} cycles", cm.model.name, max_cycles));
    }
    const auto& r = exec.finish(i);
    std::uint64_t compared = 0, bad = 0;
    std::string first;
    for (const auto& c : r.checks) {
      compared += c.compared;
      bad += c.mismatches;
      if (c.mismatches && first.empty()) first = fmt::format("{}: {}: {}", r.name(), c.what, c.first_mismatch);
    }
    out.push_back({{"cycles", r.cycles()}, {"compared", compared}, {"mismatches", bad}, {"first", first}});
  }
  return out;
}

void write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

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

WaferTimes simulate_programs(const platforms::PlatformSpec& spec, const compiler::CompiledModel& cm, std::uint64_t seed,
                             bool check, std::uint64_t max_cycles) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    nlohmann::json reply;
    try {
      reply["programs"] = run_on_wafer(spec, cm, seed, check, max_cycles);
    } catch (const sim::Error& e) {
      reply = {{"error", e.what()}, {"code", static_cast<int>(e.exit_code())}};
    } catch (const std::exception& e) {
      reply = {{"error", e.what()}, {"code", 1}};
    }
    write_all(fds[1], reply.dump());
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (text.empty() || !WIFEXITED(status))
    throw sim::SimulationError(
        fmt::format("the wafer run of '{}' ended without a result (status {})", cm.model.name, status));
  const auto reply = nlohmann::json::parse(text);
  if (reply.contains("error")) {
    const std::string msg = reply["error"].get<std::string>();
    switch (reply["code"].get<int>()) {
      case sim::kExitBadInput:
        throw sim::InputError(msg);
      case sim::kExitSimulation:
        throw sim::SimulationError(msg);
      case sim::kExitLimit:
        throw sim::LimitReached(msg);
      default:
        throw std::runtime_error(msg);
    }
  }
  WaferTimes t;
  t.source = TimingSource::Simulated;
  t.clock_hz = spec.wafer.clock.hz;
  const auto& progs = reply["programs"];
  if (progs.size() != cm.programs.size())
    throw sim::SimulationError(fmt::format("the wafer run of '{}' returned {} programs, expected {}", cm.model.name,
                                           progs.size(), cm.programs.size()));
  for (std::size_t i = 0; i < cm.programs.size(); ++i) {
    ProgramTime p;
    p.layer = cm.programs[i].layer;
    p.phase = cm.programs[i].phase;
    p.cycles = progs[i]["cycles"].get<std::uint64_t>();
    p.mismatches = progs[i]["mismatches"].get<std::uint64_t>();
    t.checked += progs[i]["compared"].get<std::uint64_t>();
    if (p.mismatches && t.first_mismatch.empty()) t.first_mismatch = progs[i]["first"].get<std::string>();
    t.mismatches += p.mismatches;
    t.programs.push_back(p);
  }
  return t;
}

WaferTimes bound_programs(const platforms::PlatformSpec& spec, const compiler::CompiledModel& cm) {
  WaferTimes t;
  t.source = TimingSource::Bound;
  t.clock_hz = spec.wafer.clock.hz;
  for (const auto& p : cm.programs) t.programs.push_back(ProgramTime{p.layer, p.phase, p.bound.cycles, 0});
  return t;
}

}  // namespace wafersim::models::training
