#pragma once
// How long each compiled layer program takes on one wafer: simulated cycle by cycle (the
// compiled programs run on a simulated wafer, the same on every wafer of a data-parallel
// cluster) or the compiler's analytic lower bound (for layer kinds without PE code yet).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/compiler/compiled_model.h"
#include "platforms/platform_spec.h"
#include "platforms/runtime/executor.h"
#include "sim/run_loop.h"

namespace wafersim::platforms::training {

enum class TimingSource : std::uint8_t { Simulated, Bound };
const char* to_string(TimingSource s);
// "simulated" or "bound"; throws sim::InputError naming the choices otherwise.
TimingSource parse_timing_source(const std::string& text);

struct ProgramTime {
  std::string layer;
  models::compiler::Phase phase = models::compiler::Phase::Forward;
  std::uint64_t cycles = 0;
  std::uint64_t mismatches = 0;  // simulated with checks: result elements unlike the host's
};

struct WaferTimes {
  TimingSource source = TimingSource::Simulated;
  double clock_hz = 0;
  std::vector<ProgramTime> programs;  // in execution order
  std::uint64_t checked = 0, mismatches = 0;
  std::string first_mismatch;  // "<program>: <what>: <element>" of the first one
  // The simulated wafer's statistics after every program ran once ({"values", "descriptions"},
  // as sim::stats::to_json and describe_json write them; null for the bound).
  nlohmann::json wafer_stats;
  [[nodiscard]] std::uint64_t cycles() const;
};

// Runs every program of `cm` (compiled with code for spec's wafer) once on one simulated wafer
// with host data from `seed`, comparing results with the host when `check`. The run happens in
// a child process (fork) so that this process's SystemC kernel is still unelaborated for the
// cluster afterwards; errors come back as the same exception types (sim::InputError,
// SimulationError, LimitReached) with their messages. `max_cycles` (0: none) bounds each run;
// `limits` (--max-wall) the whole of it.
WaferTimes simulate_programs(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                             std::uint64_t seed, bool check, std::uint64_t max_cycles = 0, unsigned threads = 1,
                             const sim::RunLimits& limits = {});

// The loop of simulate_programs on this process's SystemC kernel (a child's work): builds a
// wafer (built with `seed`, swept by `threads` host threads), loads `data`, runs every program until the wafer is
// quiescent, then calls `after`. Per program: cycles, compared, mismatches, first (mismatch) and value (a check's
// scalar: the loss of a cross-entropy forward, else null). With `wafer_stats`, also the wafer's statistics at the end
// (WaferTimes::wafer_stats).
nlohmann::json run_programs_here(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                                 runtime::HostData data, std::uint64_t seed, bool check, std::uint64_t max_cycles,
                                 const std::function<void(const runtime::Executor&)>& after = {},
                                 nlohmann::json* wafer_stats = nullptr, unsigned threads = 1,
                                 const sim::RunLimits& limits = {});
// The times of run_programs_here's result.
WaferTimes wafer_times(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                       const nlohmann::json& programs);

// The compiler's analytic bound of every program (a compile without code is enough).
WaferTimes bound_programs(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm);

}  // namespace wafersim::platforms::training
