#pragma once
// One clocked process per clock domain (a wafer): ticks plain C++ components in
// read / evaluate / write phases, skips the idle ones and jumps over empty cycles.

#include <systemc>

#include <cstdint>
#include <exception>
#include <functional>
#include <queue>
#include <vector>

#include "sim/engine/clocked.h"
#include "sim/engine/tick_observer.h"
#include "sim/types.h"
#include "sim/units/quantity.h"

namespace wafersim::sim {

struct EngineOptions {
  units::Frequency clock{1.1e9};
  // Tick every component every cycle, awake or not (to prove idle skipping is exact).
  bool idle_skip = true;
  // Stop before this cycle (Cycle::never(): no limit); the run driver reports the limit.
  Cycle max_cycles = Cycle::never();
  // Driven: no SystemC process ticks the engine; its owner advances it with step() (a wafer of
  // a co-simulated cluster, on a host thread of its own). Nothing in it then reads or
  // schedules SystemC time.
  bool driven = false;
};

// Engine for one clock domain. Components are registered during elaboration.
class Engine : public sc_core::sc_module {
 public:
  Engine(const sc_core::sc_module_name& name, EngineOptions options);

  // Registers a component; it starts asleep unless woken. Not owned.
  void add(Clocked* component);
  // Registers a tick observer (tracing), called in registration order. Not owned. Throws
  // std::logic_error when the build has no tracing hooks (WAFERSIM_TRACE_HOOKS=OFF).
  void add_observer(TickObserver* observer);
  // Wakes `component` at cycle `at` (clamped to the next cycle the engine can still run).
  // Safe from inside a tick (a neighbour's write phase) and from other SystemC processes.
  void wake(Clocked* component, Cycle at);
  // Wakes `component` at the first cycle not earlier than SystemC time `t`.
  void wake_at_time(Clocked* component, const sc_core::sc_time& t);

  // The cycle being ticked (inside a tick), or the next cycle that can still be ticked.
  [[nodiscard]] Cycle now() const { return current_; }
  // The last cycle ticked + 1 (the simulated length so far), 0 before the first tick.
  [[nodiscard]] Cycle cycles() const { return cycles_; }
  [[nodiscard]] sc_core::sc_time time_of(Cycle c) const;
  [[nodiscard]] Cycle first_cycle_at_or_after(const sc_core::sc_time& t) const;
  // The last cycle whose time is exact to the picosecond in this engine's double arithmetic
  // (2^53 ps, about 2.5 simulated hours: 9.9e12 cycles at 1.1 GHz).
  [[nodiscard]] Cycle last_cycle() const;
  [[nodiscard]] const EngineOptions& options() const { return options_; }
  [[nodiscard]] bool limit_reached() const { return limit_reached_; }
  // Nothing awake and nothing scheduled.
  [[nodiscard]] bool quiescent() const;
  // Nothing awake and nothing scheduled but `component`'s own wake-ups.
  [[nodiscard]] bool quiescent_except(const Clocked* component) const;

  // Driven mode: ticks the next cycle that has work if it is before `end` and returns true;
  // returns false (and ticks nothing) otherwise, or when max_cycles is reached
  // (limit_reached()). A component's exception propagates to the caller.
  bool step(Cycle end);
  // The next cycle with work (Cycle::never(): none).
  [[nodiscard]] Cycle next_due() const;

  // An exception thrown by a component's tick (a deadlock report, a simulation error) is
  // caught here, the simulation is stopped (sc_stop) and the error kept: whoever called
  // sc_start calls rethrow_failure() (the run driver does) to raise it outside the kernel.
  [[nodiscard]] bool failed() const { return static_cast<bool>(failure_); }
  void rethrow_failure() const {
    if (failure_) std::rethrow_exception(failure_);
  }

  // Engine work counters (not model statistics: they differ with idle skipping).
  [[nodiscard]] std::uint64_t component_ticks() const { return component_ticks_; }
  [[nodiscard]] std::uint64_t engine_ticks() const { return engine_ticks_; }
  [[nodiscard]] std::uint64_t cycles_skipped() const { return cycles_skipped_; }
  [[nodiscard]] const std::vector<Clocked*>& components() const { return components_; }

 private:
  struct Wake {
    std::uint64_t cycle;
    std::uint32_t id;
    bool operator>(const Wake& o) const { return cycle != o.cycle ? cycle > o.cycle : id > o.id; }
  };
  void tick();
  void tick_at(Cycle now);
  void tick_components(Cycle now);
  void schedule_next();
  void end_of_elaboration() override;
  std::uint32_t id_of(Clocked* c) const;

  EngineOptions options_;
  double period_ps_;
  std::vector<Clocked*> components_;
  std::vector<TickObserver*> observers_;
  std::vector<std::uint8_t> awake_flag_;  // awake in the next tick
  std::vector<std::uint32_t> awake_;      // ids awake in the next tick
  std::vector<std::uint32_t> ticking_;    // ids being ticked now
  std::vector<std::uint32_t> timed_of_;   // per id: entries in timed_ (some may be stale)
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> timed_;
  sc_core::sc_event tick_event_;
  Cycle current_{0};
  Cycle cycles_{0};
  Cycle scheduled_ = Cycle::never();  // cycle the tick event is armed for
  sc_core::sc_time scheduled_time_;   // and that cycle's time (time_of(scheduled_))
  bool in_tick_ = false;
  bool limit_reached_ = false;
  std::exception_ptr failure_;
  std::uint64_t component_ticks_ = 0;
  std::uint64_t engine_ticks_ = 0;
  std::uint64_t cycles_skipped_ = 0;
};

}  // namespace wafersim::sim
