#include <gtest/gtest.h>

#include <systemc>

#include <chrono>
#include <cstdint>

#include "sim/engine/engine.h"
#include "sim/errors.h"
#include "sim/run_loop.h"

namespace wafersim::app::run_driver_test {
namespace {

using sim::Cycle;

// Works in every cycle and never finishes.
struct Spinner final : sim::Clocked {
  std::uint64_t ticks = 0;
  void evaluate(Cycle) override { ++ticks; }
  Cycle write(Cycle now) override { return now + Cycle(1); }
  std::string describe() const override { return "spinner"; }
};

struct Rig {
  sim::Engine engine{"engine", sim::EngineOptions{units::Frequency{1e9}, true, Cycle::never()}};
  Spinner spinner;
  sim::NoProgress progress;
  Rig() {
    engine.add(&spinner);
    engine.wake(&spinner, Cycle(0));
  }
};

// --max-wall counts from when the limits were made, not from each sim::run_simulation() call: a
// compiled model runs one call per step, and each step used to get the whole budget again.
TEST(RunDriver, WallLimitCountsFromTheLimitsNotFromEachCall) {
  Rig rig;
  sim::RunLimits limits;
  limits.max_wall_seconds = 5;
  limits.wall_start = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  EXPECT_THROW(sim::run_simulation(rig.engine, {&rig.engine}, Cycle(1000000), limits, rig.progress), sim::LimitReached);
  // Stopped at the first check, after the first slice (1024 cycles), far before the end.
  EXPECT_EQ(rig.spinner.ticks, 1024u);
}

TEST(RunDriver, WallLimitNotYetSpentLetsTheRunFinish) {
  Rig rig;
  sim::RunLimits limits;
  limits.max_wall_seconds = 60;
  limits.wall_start = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  const sim::RunOutcome out = sim::run_simulation(rig.engine, {&rig.engine}, Cycle(5000), limits, rig.progress);
  EXPECT_EQ(out.cycles, Cycle(5000));
  EXPECT_EQ(rig.spinner.ticks, 5000u);
}

// Works once every 5,000 cycles, three times.
struct Sparse final : sim::Clocked {
  std::uint64_t ticks = 0;
  void evaluate(Cycle) override { ++ticks; }
  Cycle write(Cycle now) override { return ticks < 3 ? now + Cycle(5000) : Cycle::never(); }
  std::string describe() const override { return "sparse"; }
};

// A run to quiescence starts each slice at the next event: slices of a few thousand cycles
// between events 5,000 apart would otherwise not advance, and SystemC warns of each such call.
TEST(RunDriver, SlicesStartAtTheNextEventSoEachAdvances) {
  sim::Engine engine{"engine", sim::EngineOptions{units::Frequency{1e9}, true, Cycle::never()}};
  Sparse sparse;
  engine.add(&sparse);
  engine.wake(&sparse, Cycle(0));
  sim::NoProgress progress;
  const auto warnings = sc_core::sc_report_handler::get_count(sc_core::SC_WARNING);
  const sim::RunOutcome out = sim::run_simulation(engine, {&engine}, Cycle::never(), sim::RunLimits{}, progress);
  EXPECT_TRUE(out.quiescent);
  EXPECT_EQ(sparse.ticks, 3u);
  EXPECT_EQ(out.cycles, Cycle(10000));
  EXPECT_EQ(sc_core::sc_report_handler::get_count(sc_core::SC_WARNING), warnings);
}

}  // namespace
}  // namespace wafersim::app::run_driver_test
