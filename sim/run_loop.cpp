#include "sim/run_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "sim/errors.h"
#include "sim/interrupt.h"
#include "sim/picos.h"

namespace wafersim::sim {

namespace {
bool wall_spent(const RunLimits& limits) {
  return limits.max_wall_seconds > 0 &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - limits.wall_start).count() >
             limits.max_wall_seconds;
}
}  // namespace

std::uint64_t next_slice(std::uint64_t slice, double wall_seconds) {
  if (wall_seconds < 0.05 && slice < (std::uint64_t{1} << 40)) return slice * 2;
  if (wall_seconds > 0.4 && slice > 1) return slice / 2;
  return slice;
}

RunOutcome run_simulation(const sim::Engine& reference, const std::vector<const sim::Engine*>& engines, Cycle until,
                          const RunLimits& limits, ProgressSink& progress, const std::function<bool()>& done) {
  using namespace sc_core;
  auto start = std::chrono::steady_clock::now();
  auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const Cycle last = reference.last_cycle();
  if (!until.is_never() && until > last)
    throw InputError(fmt::format("{} cycles is beyond the simulable time range: at this clock at most {} cycles",
                                 until.count(), last.count()));
  Cycle stop = until;
  if (!limits.max_cycles.is_never() && limits.max_cycles <= last) stop = std::min(stop, limits.max_cycles);
  std::uint64_t slice = 1024;
  RunOutcome out;
  if (sc_get_status() == SC_ELABORATION) sc_start(SC_ZERO_TIME);
  auto throw_if_limited = [&] {
    for (const auto* e : engines)
      if (e->limit_reached()) {
        progress.finish();
        throw LimitReached(
            fmt::format("--max-cycles {} reached with work still pending", e->options().max_cycles.count()));
      }
  };
  while (true) {
    // Checked before idleness: an engine its cycle limit stopped (also before this call, in a
    // load phase the caller ran) leaves nothing pending, which is the limit, not the run's end.
    throw_if_limited();
    Cycle now = reference.first_cycle_at_or_after(sc_time_stamp());
    if (done && done()) break;
    const bool idle = !sc_pending_activity();
    if (until.is_never() && idle) {
      out.quiescent = true;
      break;
    }
    if (!stop.is_never() && now >= stop) break;
    // A run to quiescence stops at its last event, not at the end of a slice whose length
    // follows the wall clock: the simulated time it ends at must not depend on the host. Its
    // slice starts at the next event: a slice with none in it would not advance (and SystemC
    // warns of that), however short the wall clock has made the slices.
    const bool starve = limits.stop_at_last_event || until.is_never();
    const Cycle base =
        starve && !idle ? reference.first_cycle_at_or_after(sc_time_stamp() + sc_time_to_pending_activity()) : now;
    if (!stop.is_never() && base >= stop) break;
    Cycle target = idle ? stop : base + Cycle(slice);
    if (!stop.is_never()) target = std::min(target, stop);
    target = std::min(target, last);
    if (target <= now) throw SimulationError(fmt::format("simulated time cannot advance past cycle {}", now.count()));
    auto t0 = std::chrono::steady_clock::now();
    const sc_time before = sc_time_stamp();
    sc_start(reference.time_of(target) - before, starve ? SC_EXIT_ON_STARVATION : SC_RUN_TO_TIME);
    if (!starve && sc_time_stamp() == before && sc_get_status() != SC_STOPPED)
      throw SimulationError(fmt::format("simulated time did not advance past cycle {}", now.count()));
    for (const auto* e : engines) {
      if (!e->failed()) continue;
      progress.finish();
      e->rethrow_failure();
    }
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    slice = next_slice(slice, dt);
    progress.update(reference.first_cycle_at_or_after(sc_time_stamp()).count());
    if (interrupt_signal()) {
      progress.finish();
      throw_if_interrupted(fmt::format("at cycle {}", reference.first_cycle_at_or_after(sc_time_stamp()).count()));
    }
    if (wall_spent(limits)) {
      progress.finish();
      throw LimitReached(fmt::format("--max-wall {} s reached at cycle {}", limits.max_wall_seconds,
                                     reference.first_cycle_at_or_after(sc_time_stamp()).count()));
    }
  }
  progress.finish();
  out.cycles = reference.first_cycle_at_or_after(sc_time_stamp());
  const bool cut_short = until.is_never() ? !out.quiescent && !(done && done()) : out.cycles < until;
  if (cut_short && !limits.max_cycles.is_never() && out.cycles >= limits.max_cycles)
    throw LimitReached(fmt::format("--max-cycles {} reached before the run ended", limits.max_cycles.count()));
  out.wall_seconds = wall();
  return out;
}

void run_until_quiet(const Engine* reference, const RunLimits& limits, const std::string& where) {
  using namespace sc_core;
  auto at = [&] {
    return reference ? fmt::format("cycle {}", reference->first_cycle_at_or_after(sc_time_stamp()).count())
                     : sim::format(sim::now());
  };
  std::uint64_t slice = 64;
  if (sc_get_status() == SC_ELABORATION) sc_start(SC_ZERO_TIME);
  while (sc_pending_activity() && sc_get_status() != SC_STOPPED) {
    const auto t0 = std::chrono::steady_clock::now();
    // The slice starts at the next event: a slice with none in it would not advance (and
    // SystemC warns of that), however short the wall clock has made the slices.
    const sc_time next = sc_time_stamp() + sc_time_to_pending_activity();
    const sc_time end = reference ? reference->time_of(reference->first_cycle_at_or_after(next) + Cycle(slice))
                                  : next + sc_time(static_cast<double>(slice), SC_NS);
    sc_start(end - sc_time_stamp(), SC_EXIT_ON_STARVATION);
    // A failure stops SystemC (sc_stop): the caller rethrows it.
    if (sc_get_status() == SC_STOPPED || (reference && reference->failed())) return;
    if (!sc_pending_activity()) break;
    throw_if_interrupted(fmt::format("at {} ({})", at(), where));
    if (reference && reference->limit_reached()) break;
    if (wall_spent(limits))
      throw LimitReached(fmt::format("--max-wall {} s reached at {} ({})", limits.max_wall_seconds, at(), where));
    slice = next_slice(slice, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (reference && reference->limit_reached())
    throw LimitReached(fmt::format("--max-cycles {} reached with work still pending ({})",
                                   reference->options().max_cycles.count(), where));
}

}  // namespace wafersim::sim
