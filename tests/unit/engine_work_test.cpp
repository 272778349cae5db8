// sim::engine_work(): the registered wafers' counters while they live, their last reading once
// they are gone, and work added from elsewhere (a child process).

#include <gtest/gtest.h>

#include "sim/engine/engine_work.h"

namespace wafersim::sim {
namespace {

TEST(EngineWork, SumsLiveReadersKeepsTheGoneAndAddsWorkFromElsewhere) {
  const EngineWork before = engine_work();
  EngineWork live{10, 2, 300, 40};
  {
    WorkRegistration reg([&live] { return live; });
    EngineWork now = engine_work();
    EXPECT_EQ(now.cycles_ticked - before.cycles_ticked, 10u);
    EXPECT_EQ(now.core_ticks - before.core_ticks, 300u);
    live.core_ticks = 350;  // read again at the next call, and at the registration's end
    live.router_visits = 45;
    now = engine_work();
    EXPECT_EQ(now.core_ticks - before.core_ticks, 350u);
  }
  add_engine_work({1, 1, 1, 1});
  const EngineWork after = engine_work();
  EXPECT_EQ(after.cycles_ticked - before.cycles_ticked, 11u);
  EXPECT_EQ(after.cycles_skipped - before.cycles_skipped, 3u);
  EXPECT_EQ(after.core_ticks - before.core_ticks, 351u);
  EXPECT_EQ(after.router_visits - before.router_visits, 46u);
}

}  // namespace
}  // namespace wafersim::sim
