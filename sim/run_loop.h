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

}  // namespace wafersim::sim
