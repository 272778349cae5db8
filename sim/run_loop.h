#pragma once
// Drives SystemC for a whole run: advances simulated time in slices, reports progress,
// enforces --max-cycles and --max-wall, and detects the end of activity.

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/types.h"

namespace wafersim::sim {

// The next slice of simulated cycles after one that took `wall_seconds`: doubled under 0.05 s,
// halved over 0.4 s, so that a run looks at signals and limits a few times a second.
std::uint64_t next_slice(std::uint64_t slice, double wall_seconds);

// Where a run reports how far it has come (a terminal's progress line, or nothing).
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // `done` units (reference cycles for a run) so far.
  virtual void update(std::uint64_t done) = 0;
  // The run stopped (ended, failed or reached a limit).
  virtual void finish() = 0;
};

// A sink that reports nothing.
class NoProgress final : public ProgressSink {
 public:
  void update(std::uint64_t /*done*/) override {}
  void finish() override {}
};

struct RunLimits {
  Cycle max_cycles = Cycle::never();  // simulated cycles of the reference clock
  double max_wall_seconds = 0;        // 0: no limit
  // When the wall-clock limit starts counting: every run_simulation() given these limits (a
  // compiled model calls it once per step) spends the same budget.
  std::chrono::steady_clock::time_point wall_start = std::chrono::steady_clock::now();
  // Return at the last event when nothing is left to do (SC_EXIT_ON_STARVATION), not at the
  // end of a time slice: simulated time stops where activity stopped, so that whatever the
  // caller starts next (a compiled model's next layer) starts there.
  bool stop_at_last_event = false;
};

struct RunOutcome {
  Cycle cycles;  // reference-clock cycles simulated
  double wall_seconds = 0;
  bool quiescent = false;  // ended because nothing was left to do
};

// Runs until `until` cycles of `reference` have passed (Cycle::never(): until no
// activity remains) or until `done()` returns true. Throws sim::LimitReached when a limit
// stops the run first. `engines` are checked for their own cycle limits.
RunOutcome run_simulation(const sim::Engine& reference, const std::vector<const sim::Engine*>& engines, Cycle until,
                          const RunLimits& limits, ProgressSink& progress, const std::function<bool()>& done = {});

// Runs SystemC until nothing is pending (a step of a run that ends when its work does), in
// slices of about 0.05 to 0.4 s of wall time, so that SIGINT or SIGTERM and `limits` stop it
// between them; the slices do not change what is simulated, and simulated time stops at the
// last event. Slices count `reference`'s cycles, or nanoseconds without one (a cluster). Throws
// sim::LimitReached when the wall-clock budget of `limits` is spent with work pending, or when
// `reference` stopped at its --max-cycles limit (EngineOptions::max_cycles) with work pending;
// sim::Interrupted on a signal. Returns early, without throwing, when a component failed
// (SystemC stopped, or `reference` failed: the caller rethrows the failure). `where` names
// what runs, for the messages (e.g. "step 'o'").
void run_until_quiet(const Engine* reference, const RunLimits& limits, const std::string& where);

}  // namespace wafersim::sim
