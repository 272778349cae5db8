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

}  // namespace
}  // namespace wafersim::app::run_driver_test
