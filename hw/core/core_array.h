#pragma once
// All PE cores of one wafer as one engine component: cores are created when first used
// (a program loaded, SRAM touched), and only cores with work are ticked.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw/core/core.h"
#include "hw/isa/program.h"
#include "hw/pe_config.h"
#include "hw/ramp.h"
#include "sim/engine/clocked.h"
#include "sim/engine/engine.h"
#include "sim/engine/index_set.h"
#include "sim/engine/wake_calendar.h"
#include "sim/parallel/row_bands.h"
#include "sim/stats/stats.h"

namespace wafersim::hw {

struct CoreArrayOptions {
  std::uint32_t colors = 24;  // routable colors of the fabric
  // Let cores that wait only for wavelets, credits or a known cycle sleep (and catch up
  // their counters on waking). Off: every core with work is ticked in every cycle in which
  // the array is ticked (the engine's --no-idle-skip ticks it every cycle until nothing can
  // happen), which proves that sleeping changes no result.
  bool sleep = true;
  // CoreParams::timing_only for every core.
  bool timing_only = false;
};

// Contract: an engine component (read/evaluate/write as sim::Clocked) and the listener of
// the fabric's ramps. A PE without a core costs one pointer. evaluate() ticks the cores
// that are awake, in PE order; cores call their RampPort only from evaluate(). A program
// error stops the simulation (sc_stop when an engine drives the array) and check() rethrows
// it; without an engine (driven by hand in tests and benchmarks) it is thrown at once.
//
// With bands (set_bands), each band of rows keeps its own awake set and wake calendar, and
// evaluate() ticks the awake cores of each band as one part of a job on the bands' team: a
// core touches only its own state and its own ramp (whose effects on the mesh the mesh stages
// per band), arrivals and credits wake a band's cores from the band's part of the mesh's job,
// and what the array shares (the tick count, the earliest cycle of the cores' own work, the
// first error) evaluate() folds in band order, which is PE order: the results are those of
// one thread. Cycles with few cores due, or all of them in one band, are ticked band after
// band on the caller's thread; so are all cycles while an observer (tracing) is installed.
class CoreArray final : public sim::Clocked, public RampListener, public sim::parallel::BandClient {
 public:
  CoreArray(std::string name, const WaferConfig& wafer, CoreArrayOptions options);
  ~CoreArray() override;

  // Lets the cores' main threads run ahead (Core::run_ahead) to instructions of cycles before
  // `horizon` (Cycle(0), the default: not at all). For a run whose state is read only when it
  // has ended or reached `horizon` (its cycle limit; Cycle::never() without one).
  void set_run_ahead(sim::Cycle horizon);
  void set_engine(sim::Engine* engine) { engine_ = engine; }
  // The wafer's rows in bands, shared with the mesh (not owned; null or one band: every core
  // ticked on the caller's thread). The mesh's endpoints must stage within a job of them.
  void set_bands(sim::parallel::RowBands* bands);
  // Cycles with at least this many awake cores, in two or more bands, are ticked in bands.
  static constexpr std::size_t kBandsFrom = 32;
  // The fabric's ramp port of each PE (called once when the mesh is built).
  void connect(std::function<RampPort*(PeCoord)> ramp_of);

  // Loads a program onto every PE of the placement. Throws ConfigError (file:line:col) when
  // it does not fit the platform (grid, SRAM, colors).
  void load(const isa::Placement& placement);
  void load(PeCoord pe, std::shared_ptr<const isa::Program> program);
  // Replaces the program of an idle PE (or loads one where there is none), keeping its SRAM:
  // how a compiled model moves to its next layer. Throws InputError if the PE is busy.
  void replace(PeCoord pe, std::shared_ptr<const isa::Program> program);
  // PEs with a task running or a vector operation in flight.
  [[nodiscard]] std::uint64_t busy_count() const;
  // Activates a local task from the host, effective at cycle `at` (clamped to a cycle that
  // can still be ticked).
  void activate(PeCoord pe, std::uint8_t task, sim::Cycle at);

  [[nodiscard]] std::uint32_t width() const { return width_; }
  [[nodiscard]] std::uint32_t height() const { return height_; }
  [[nodiscard]] bool contains(PeCoord c) const { return c.x < width_ && c.y < height_; }
  // The core of a PE, created on first use; nullptr from find() when it does not exist.
  Core& core(PeCoord pe);
  [[nodiscard]] const Core* find(PeCoord pe) const;
  [[nodiscard]] const CoreParams& params() const { return params_; }
  // The cores with a program, in PE order (y * width + x), as f(const Core&).
  template <class F>
  void for_each_loaded(F&& f) const {
    for (std::uint32_t idx : loaded_) f(static_cast<const Core&>(*cores_[idx]));
  }
  // Reports the tasks and vector operations of PE `pe` (whether loaded now or later) to
  // `observer`. Tracing only: throws std::logic_error in a build without tracing hooks.
  void observe(PeCoord pe, CoreObserver* observer);
  [[nodiscard]] std::uint64_t cores_created() const { return created_; }
  // Core ticks performed (engine work, not a model statistic: it differs with sleeping).
  [[nodiscard]] std::uint64_t core_ticks() const { return core_ticks_; }
  // Cycles whose cores were ticked in bands on the team (engine work, as core_ticks()).
  [[nodiscard]] std::uint64_t band_jobs() const { return band_jobs_; }

  // sim::Clocked
  void evaluate(sim::Cycle now) override;
  sim::Cycle write(sim::Cycle now) override;
  [[nodiscard]] std::string describe() const override;
  // RampListener
  void on_arrival(PeCoord pe, Color c, sim::Cycle at) override;
  void on_credit(PeCoord pe, Color c, sim::Cycle at) override;
  [[nodiscard]] bool splits_arrivals() const override { return true; }
  bool arrived_in_band(PeCoord pe, Color c, sim::Cycle at) override;
  bool credited_in_band(PeCoord pe, Color c, sim::Cycle at) override;
  void wake_after_band(PeCoord pe, sim::Cycle at) override;
  // sim::parallel::BandClient: nothing to fold; a new partition moves the cores' sets.
  void joined() override {}
  void repartitioned(const std::vector<std::uint32_t>& old_first) override;

  // The next cycle at which some core wants to be ticked (Cycle::never(): none).
  [[nodiscard]] sim::Cycle next_wake() const;
  // Rethrows a program error raised during simulation.
  void check() const;
  [[nodiscard]] bool failed() const { return error_.has_value(); }
  // Throws SimulationError naming every PE that still has a task running or a vector
  // operation in flight (call when the simulation has run out of events: a deadlock).
  void check_finished() const;
  // One past the last cycle in which any core was busy.
  [[nodiscard]] std::uint64_t finish_cycle() const;
  // SRAM pages allocated over all cores, in bytes (memory use, not a model statistic).
  [[nodiscard]] std::uint64_t sram_allocated_bytes() const;
  // Sum of a counter over all cores.
  [[nodiscard]] std::uint64_t total(std::uint64_t CoreCounters::*field) const { return totals().*field; }
  [[nodiscard]] std::uint64_t total_stall(Stall s) const { return totals().stall[static_cast<int>(s)]; }
  // Every counter summed over the loaded cores (finish_cycle: their maximum), each core's
  // counted to the array's current cycle (accounted()). Computed in one pass and kept until a
  // core is ticked or loaded or the cycle moves.
  [[nodiscard]] const CoreCounters& totals() const;
  // A core's counters with the cycles it has slept through up to the array's current cycle
  // counted, so that they do not depend on when it was last ticked (a run stopped by a cycle
  // limit counts every cycle before the limit).
  [[nodiscard]] CoreCounters accounted(PeCoord pe) const { return accounted(index(pe)); }

  // Adds the array's statistics (totals; per-PE vectors up to kPerPeStatsLimit PEs).
  void add_stats(sim::stats::Group& g);
  static constexpr std::uint64_t kPerPeStatsLimit = 65536;

 private:
  [[nodiscard]] std::uint32_t index(PeCoord c) const { return std::uint32_t{c.y} * width_ + c.x; }
  void wake(std::uint32_t index, sim::Cycle at);
  // wake()'s part in the array: into the awake set or calendar of the core's band (the
  // array's own without bands); no engine call, so a band's part may make it for its cores.
  // Returns false when the core is ticked at `at` or earlier anyway (the engine need not hear).
  bool schedule(std::uint32_t index, sim::Cycle at);
  // Empties every awake set and calendar into `awake` and `timed`; deal_out() schedules them
  // again where the bands now say.
  void take_all(std::vector<std::uint32_t>& awake, std::vector<std::pair<std::uint32_t, std::uint64_t>>& timed);
  void deal_out(const std::vector<std::uint32_t>& awake,
                const std::vector<std::pair<std::uint32_t, std::uint64_t>>& timed);
  [[nodiscard]] sim::Cycle earliest_cycle() const;
  [[nodiscard]] CoreCounters accounted(std::uint32_t idx) const { return cores_[idx]->counters_at(earliest_cycle()); }
  // Whether a core that returned `next` from its tick of cycle next_cycle - 1 is ticked again
  // in next_cycle (otherwise it sleeps until `next`, or until woken when that is never).
  [[nodiscard]] bool stays_awake(const Core& c, sim::Cycle next, sim::Cycle next_cycle) const {
    return next == next_cycle || (!options_.sleep && c.busy());
  }
  // The cores of one cycle in PE order: without bands, or band by band (on the team, or on
  // the caller's thread).
  void tick_serial(sim::Cycle now);
  void tick_bands(sim::Cycle now);
  // Band b's part of tick_bands: ticks its cores due now, in PE order.
  void tick_band(std::size_t b, sim::Cycle now);
  void fail(std::exception_ptr failure);

  // One band's cores (those of its rows) and what its part collects for the fold.
  struct alignas(64) BandTicks {
    BandTicks(const BankModel& banks, std::uint32_t cores) : scratch(banks), awake(cores) {}
    CycleResources scratch;
    sim::IndexSet awake;               // ticked in the next evaluate
    sim::WakeCalendar timed;           // asleep until a known cycle
    std::vector<std::uint32_t> order;  // the cores of the current evaluate (scratch)
    sim::Cycle own_next = sim::Cycle::never();
    std::uint64_t ticks = 0;
    std::string error;  // the band's first program error (its later cores were not ticked)
    std::exception_ptr failure;
  };
  // With bands: the band that holds core `index` now.
  BandTicks& band_of_core(std::uint32_t index) { return band_ticks_[bands_->band_of_row(index / width_)]; }

  std::string name_;
  std::uint32_t width_, height_;
  CoreParams params_;
  CoreArrayOptions options_;
  sim::Engine* engine_ = nullptr;
  sim::parallel::RowBands* bands_ = nullptr;
  std::vector<BandTicks> band_ticks_;  // [band], with more than one band
  std::function<RampPort*(PeCoord)> ramp_of_;
  std::vector<std::unique_ptr<Core>> cores_;                        // by y * width + x
  std::vector<std::pair<std::uint32_t, CoreObserver*>> observers_;  // (index, observer), for cores not yet made
  std::uint64_t created_ = 0;
  std::uint64_t core_ticks_ = 0;
  std::uint64_t band_jobs_ = 0;
  std::vector<std::uint32_t> loaded_;  // indices of cores with a program, ascending
  // Without bands (with bands, BandTicks hold the awake sets and calendars):
  sim::IndexSet awake_;                        // ticked in the next evaluate (in index order)
  sim::IndexSet ticking_;                      // those of the current evaluate
  std::vector<std::uint32_t> order_;           // the cores of the current evaluate (scratch)
  sim::Cycle own_next_ = sim::Cycle::never();  // earliest cycle an awake core has work of its own
  sim::WakeCalendar timed_;                    // cores asleep until a known cycle
  CycleResources scratch_;
  std::optional<std::string> error_;
  sim::Cycle last_tick_{0};
  mutable CoreCounters totals_;
  struct TotalsKey {
    std::uint64_t core_ticks = ~std::uint64_t{0};
    std::size_t loaded = 0;
    sim::Cycle at{0};
    bool operator==(const TotalsKey& o) const { return core_ticks == o.core_ticks && loaded == o.loaded && at == o.at; }
  };
  mutable TotalsKey totals_at_;
};

}  // namespace wafersim::hw
