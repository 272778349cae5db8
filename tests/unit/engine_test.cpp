#include <gtest/gtest.h>

#include <systemc>
#include <vector>

#include "sim/engine/engine.h"

namespace wafersim::sim::engine_test {
namespace {

// Passes a token along a ring of N cells, one cell per cycle; counts what each saw.
struct Cell final : Clocked {
  Engine* engine = nullptr;
  Cell* next = nullptr;
  bool has = false, incoming = false, send = false;
  int hops_left = 0, incoming_hops = 0;
  std::uint64_t seen = 0;
  std::vector<std::uint64_t> seen_at;
  void read(Cycle) override {
    if (incoming) {
      has = true;
      hops_left = incoming_hops;
      incoming = false;
    }
  }
  void evaluate(Cycle now) override {
    send = false;
    if (has) {
      ++seen;
      seen_at.push_back(now.count());
      send = hops_left > 0;
      has = false;
    }
  }
  Cycle write(Cycle now) override {
    if (send) {
      next->incoming = true;
      next->incoming_hops = hops_left - 1;
      engine->wake(next, now + Cycle(1));
    }
    return Cycle::never();
  }
  std::string describe() const override { return "cell"; }
};

std::vector<std::uint64_t> ring_run(bool idle_skip, std::uint64_t* ticks) {
  Engine engine("engine", EngineOptions{units::Frequency{1e9}, idle_skip, Cycle::never()});
  std::vector<Cell> cells(5);
  for (std::size_t i = 0; i < cells.size(); ++i) {
    cells[i].engine = &engine;
    cells[i].next = &cells[(i + 1) % cells.size()];
    engine.add(&cells[i]);
  }
  cells[0].incoming = true;
  cells[0].incoming_hops = 7;
  engine.wake(&cells[0], Cycle(3));
  sc_core::sc_start();
  *ticks = engine.component_ticks();
  EXPECT_TRUE(engine.quiescent());
  EXPECT_EQ(engine.cycles(), Cycle(3 + 8));
  EXPECT_EQ(sc_core::sc_time_stamp(), sc_core::sc_time(10, sc_core::SC_NS));
  std::vector<std::uint64_t> seen;
  for (auto& c : cells) seen.insert(seen.end(), c.seen_at.begin(), c.seen_at.end());
  return seen;
}

TEST(Engine, TicksOnlyAwakeComponentsAndJumpsToFirstWake) {
  std::uint64_t ticks = 0;
  auto seen = ring_run(true, &ticks);
  // Token starts at cycle 3 in cell 0 and makes 7 more hops: cycles 3..10.
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{3, 8, 4, 9, 5, 10, 6, 7}));
  EXPECT_EQ(ticks, 8u);
}

TEST(Engine, NoIdleSkipGivesTheSameResult) {
  std::uint64_t ticks = 0;
  auto seen = ring_run(false, &ticks);
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{3, 8, 4, 9, 5, 10, 6, 7}));
  EXPECT_GT(ticks, 8u);
}

struct Sleeper final : Clocked {
  std::vector<std::uint64_t> at;
  void evaluate(Cycle now) override { at.push_back(now.count()); }
  Cycle write(Cycle now) override { return at.size() < 3 ? now + Cycle(100) : Cycle::never(); }
  std::string describe() const override { return "sleeper"; }
};

TEST(Engine, TimedSleepFastForwardsOverEmptyCycles) {
  Engine engine("engine", EngineOptions{units::Frequency{1.1e9}, true, Cycle::never()});
  Sleeper s;
  engine.add(&s);
  engine.wake(&s, Cycle(0));
  sc_core::sc_start();
  EXPECT_EQ(s.at, (std::vector<std::uint64_t>{0, 100, 200}));
  EXPECT_EQ(engine.engine_ticks(), 3u);
  // Cycle 200 at 1.1 GHz is 181818.18 ps, rounded to the ps: no drift accumulates.
  EXPECT_EQ(engine.time_of(Cycle(200)), sc_core::sc_time(181818, sc_core::SC_PS));
  EXPECT_EQ(engine.first_cycle_at_or_after(engine.time_of(Cycle(200))), Cycle(200));
  EXPECT_EQ(engine.first_cycle_at_or_after(engine.time_of(Cycle(200)) + sc_core::sc_time(1, sc_core::SC_PS)),
            Cycle(201));
}

TEST(Engine, MaxCyclesStopsAndFlagsTheLimit) {
  Engine engine("engine", EngineOptions{units::Frequency{1e9}, true, Cycle(150)});
  Sleeper s;
  engine.add(&s);
  engine.wake(&s, Cycle(0));
  sc_core::sc_start();
  EXPECT_EQ(s.at, (std::vector<std::uint64_t>{0, 100}));
  EXPECT_TRUE(engine.limit_reached());
}

}  // namespace
}  // namespace wafersim::sim::engine_test
