// Links and PEs failing while a compiled model runs (docs/defects.md, "Failures while
// running"): a dead link on a compiled route stops the run naming the route's color, router,
// source and destinations and the link; with redundancy.reroute the routes are rebuilt and the
// run's results stay correct, with the detour's cycles (a compiled model's step on one wafer,
// and wafer 0 of a co-simulated training cluster); fabric/route_ends names a route's ends.

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "fabric/route_ends.h"
#include "fabric/route_table.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::fabric::model_failure_test {
namespace {

// Color 1 from PE (0, 1)'s ramp east to (2, 1), delivered at (1, 1) and (2, 1) and out of the
// east edge beyond (3, 1) on a 4 x 2 mesh with one edge channel (row 1); color 2 elsewhere.
TEST(RouteEnds, NamesTheSourcesAndDestinationsOfTheTreeThroughARouter) {
  const MeshGeometry g(4, 2, 1);
  RouteTable t(4, 2, 4);
  auto at = [&g](std::uint32_t x, std::uint32_t y) { return g.router(x, y); };
  t.set(at(0, 1), 1, RouteEntry{bit(Port::Ramp), bit(Port::East)});
  t.set(at(1, 1), 1, RouteEntry{bit(Port::West), static_cast<std::uint8_t>(bit(Port::East) | bit(Port::Ramp))});
  t.set(at(2, 1), 1, RouteEntry{bit(Port::West), static_cast<std::uint8_t>(bit(Port::East) | bit(Port::Ramp))});
  t.set(at(3, 1), 1, RouteEntry{bit(Port::West), bit(Port::East)});
  t.set(at(0, 0), 2, RouteEntry{bit(Port::Ramp), bit(Port::East)});
  t.set(at(1, 0), 2, RouteEntry{bit(Port::West), bit(Port::Ramp)});
  const RouteEnds ends = route_ends(t, g, at(2, 1), 1);
  EXPECT_EQ(describe_route(ends), "from PE (0, 1) to PE (1, 1), PE (2, 1) and edge channel 0 (east)");
  EXPECT_EQ(describe_route(route_ends(t, g, at(1, 0), 2)), "from PE (0, 0) to PE (1, 0)");
}

std::string run(const std::string& extra, const std::filesystem::path& out) {
  return "run tiny --model tiny-mlp " + extra + " --out " + out.string();
}

std::uint64_t cycles(const std::filesystem::path& out) {
  const auto j = nlohmann::json::parse(test::slurp(out / "run.json"));
  return j["cycles"].get<std::uint64_t>();
}

// tiny-mlp on tiny: link (3, 3) south carries four of the compiled routes.
TEST(ModelFailure, ADeadLinkOnACompiledRouteStopsTheRunNamingRouteAndLink) {
  test::TempDir dir;
  const auto r = test::wafersim(run("--fail link:3,3,south@100", dir.path() / "a"), true);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("link (3, 3) south - (3, 4) north failed at cycle 129: 4 static routes over it: color 2 at "
                       "router (3, 3) forwards south over it (a compiled route from PE (3, 3) to PE (3, 4))"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("redundancy.reroute is false"), std::string::npos) << r.out;
}

// With rerouting the run completes, every result checked, in more cycles than without the
// failure; a link no route uses changes nothing.
TEST(ModelFailure, WithReroutingTheModelRunsCorrectlyOverTheDetour) {
  test::TempDir dir;
  const std::string reroute = "--set redundancy.reroute=true ";
  const auto base = test::wafersim(run(reroute, dir.path() / "base"), true);
  const auto r = test::wafersim(run(reroute + "--fail link:3,3,south@100", dir.path() / "a"), true);
  const auto idle = test::wafersim(run(reroute + "--fail link:5,5,north@100", dir.path() / "b"), true);
  ASSERT_EQ(base.code, 0) << base.out;
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_EQ(idle.code, 0) << idle.out;
  EXPECT_NE(r.out.find("failure       link (3, 3) south - (3, 4) north at cycle 129: 4 routes rebuilt around it"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("checks        all 1397 result elements as expected"), std::string::npos) << r.out;
  EXPECT_GT(cycles(dir.path() / "a"), cycles(dir.path() / "base"));
  EXPECT_EQ(cycles(dir.path() / "b"), cycles(dir.path() / "base"));
  EXPECT_NE(idle.out.find("at cycle 129: no route used it"), std::string::npos) << idle.out;
  const auto stats = nlohmann::json::parse(test::slurp(dir.path() / "a" / "stats.json"))["stats"];
  const auto& f = stats["cluster"]["wafer0"]["fabric"]["failures"];
  EXPECT_EQ(f["rebuilds"], 1);
  EXPECT_EQ(f["extra_hops"], 8);
}

// On a co-simulated training cluster the link fails on wafer 0: the same error, or with
// rerouting the same losses (every result checked on every wafer) in longer steps.
TEST(ModelFailure, ALinkOfACoSimulatedWaferFailsTheSameWay) {
  test::TempDir dir;
  const std::string train = "train tiny-cluster --model tiny-mlp --functional --steps 2 --json ";
  const auto stop = test::wafersim(train + "--fail link:3,3,south@100 --out " + (dir.path() / "a").string(), true);
  EXPECT_EQ(stop.code, 3) << stop.out;
  EXPECT_NE(stop.out.find("link (3, 3) south - (3, 4) north failed at cycle 1800: 4 static routes over it: color 2 "
                          "at router (3, 3) forwards south over it (a compiled route from PE (3, 3) to PE (3, 4))"),
            std::string::npos)
      << stop.out;
  const auto base = test::wafersim(train + "--set redundancy.reroute=true --out " + (dir.path() / "b").string());
  const auto detour = test::wafersim(train + "--set redundancy.reroute=true --fail link:3,3,south@100 --out " +
                                     (dir.path() / "c").string());
  ASSERT_EQ(base.code, 0) << base.out;
  ASSERT_EQ(detour.code, 0) << detour.out;
  const auto b = nlohmann::json::parse(base.out), d = nlohmann::json::parse(detour.out);
  EXPECT_EQ(d["losses"], b["losses"]);
  EXPECT_GT(d["result_elements_checked"].get<std::uint64_t>(), 0U);
  for (std::size_t s = 0; s < 2; ++s)
    EXPECT_GT(d["steps"][s]["time_ps"].get<std::uint64_t>(), b["steps"][s]["time_ps"].get<std::uint64_t>()) << s;
  const auto stats = nlohmann::json::parse(test::slurp(dir.path() / "c" / "stats.json"))["stats"];
  EXPECT_EQ(stats["cluster"]["wafer0"]["fabric"]["failures"]["extra_hops"], 8);
  EXPECT_FALSE(stats["cluster"]["wafer1"]["fabric"].contains("failures"));
}

TEST(ModelFailure, WhatCannotFailIsAnInputError) {
  test::TempDir dir;
  const auto system = test::wafersim(run("--fail system:1@1", dir.path() / "a"), true);
  EXPECT_EQ(system.code, 2);
  EXPECT_NE(system.out.find("a system fails in 'wafersim train' only"), std::string::npos) << system.out;
  const auto pipeline = test::wafersim(
      "infer tiny --model tiny-transformer --pipeline --fail link:1,1,east@5 --out " + (dir.path() / "b").string(),
      true);
  EXPECT_EQ(pipeline.code, 2);
  EXPECT_NE(pipeline.out.find("not with --pipeline"), std::string::npos) << pipeline.out;
  const std::string train = "train tiny-cluster --model tiny-mlp --steps 2 --fail link:3,3,south@100 ";
  const auto replay = test::wafersim(train + "--cluster-model replay --out " + (dir.path() / "c").string(), true);
  EXPECT_EQ(replay.code, 2);
  EXPECT_NE(replay.out.find("use --cluster-model cosim"), std::string::npos) << replay.out;
  const auto both = test::wafersim(train + "--fail system:1@1 --out " + (dir.path() / "d").string(), true);
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.out.find("a link or PE and a system do not fail in one run"), std::string::npos) << both.out;
}

}  // namespace
}  // namespace wafersim::fabric::model_failure_test
