// Links and PEs that fail while running (docs/defects.md, "Failures while running"): the
// failure specs, the rebuild of static routes around a dead part, and a traffic run that stops
// naming the route and the link, or goes on over the detour.

#include <gtest/gtest.h>

#include <string>

#include "fabric/reroute.h"
#include "fabric/route_check.h"
#include "fabric/route_loader.h"
#include "platforms/failure_spec.h"
#include "sim/errors.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::fabric::defects_failure_test {
namespace {

using platforms::FailureSpec;

std::string tree() { return test::slurp(std::string(WAFERSIM_SOURCE_DIR) + "/tests/golden/fabric/tree.yaml"); }

TEST(FailureSpec, ParsesLinksPesAndSystems) {
  const FailureSpec l = platforms::parse_failure("link:3,2,east@200");
  EXPECT_EQ(l.kind, FailureSpec::Kind::Link);
  EXPECT_EQ(l.x, 3u);
  EXPECT_EQ(l.y, 2u);
  EXPECT_EQ(l.port, Port::East);
  EXPECT_EQ(l.at, 200u);
  const FailureSpec p = platforms::parse_failure("pe:0,7@5");
  EXPECT_EQ(p.kind, FailureSpec::Kind::Pe);
  EXPECT_EQ(p.y, 7u);
  EXPECT_EQ(p.at, 5u);
  const FailureSpec s = platforms::parse_failure("system:1@3");
  EXPECT_EQ(s.kind, FailureSpec::Kind::System);
  EXPECT_EQ(s.system, 1u);
  EXPECT_EQ(s.at, 3u);
  const MeshGeometry g(8, 8, 8);
  const Outage o = platforms::to_outage(l, g);
  EXPECT_EQ(o.router, g.router(3, 2));
  EXPECT_EQ(o.port, Port::East);
  EXPECT_FALSE(o.pe());
}

TEST(FailureSpec, BadSpecsNameThemselvesAndTheFormExpected) {
  auto message = [](const std::string& text) {
    try {
      platforms::parse_failure(text);
    } catch (const sim::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("link:3,2,up@5"),
            "--fail 'link:3,2,up@5': 'up' is not north, east, south or west; expected link:X,Y,DIR@CYCLE (DIR "
            "north, east, south or west), pe:X,Y@CYCLE or system:K@STEP");
  EXPECT_NE(message("pe:3@5").find("a PE is X,Y"), std::string::npos);
  EXPECT_NE(message("pe:3,4").find("no KIND:WHAT@WHEN"), std::string::npos);
  EXPECT_NE(message("core:3,4@1").find("unknown kind 'core'"), std::string::npos);
  EXPECT_NE(message("pe:3,x@1").find("'x' is not a row"), std::string::npos);
  const MeshGeometry g(8, 8, 8);
  EXPECT_THROW(platforms::to_outage(platforms::parse_failure("link:7,2,east@1"), g), sim::InputError);
  EXPECT_THROW(platforms::to_outage(platforms::parse_failure("pe:8,0@1"), g), sim::InputError);
  EXPECT_THROW(platforms::to_outage(platforms::parse_failure("system:0@1"), g), sim::InputError);
}

// Row 2 of tree.yaml multicasts color 3 east; with (3, 2)-(4, 2) dead, (3, 2) sends it north
// round (3, 1) and (4, 1) into (4, 2): 3 hops for 1.
TEST(Reroute, ADeadLinkOnATreeGetsTheShortestDetourAroundIt) {
  const MeshGeometry g(8, 8, 8);
  const RouteTable t = parse_routes(tree(), "tree.yaml", g, 24);
  DeadParts dead;
  dead.kill_link(g, g.router(3, 2), Port::East);
  const auto broken = broken_routes(t, dead);
  ASSERT_EQ(broken.size(), 1u);
  EXPECT_EQ(broken[0].router, g.router(3, 2));
  EXPECT_EQ(broken[0].color, 3u);
  EXPECT_EQ(broken[0].how, "forwards east over it");
  const Rerouted r = reroute(t, g, dead);
  ASSERT_TRUE(r.ok) << r.why;
  EXPECT_EQ(r.extra_hops, 2u);
  EXPECT_EQ(r.rewritten, 4u);
  EXPECT_TRUE(broken_routes(r.table, dead).empty());
  EXPECT_TRUE(check_routes(r.table, g).empty());
  EXPECT_EQ(r.table.at(g.router(3, 2), 3).forward, bit(Port::North) | bit(Port::Ramp));
  EXPECT_EQ(r.table.at(g.router(3, 1), 3).accept, bit(Port::South));
  EXPECT_EQ(r.table.at(g.router(3, 1), 3).forward, bit(Port::East));
  EXPECT_EQ(r.table.at(g.router(4, 1), 3).forward, bit(Port::South));
  EXPECT_TRUE(r.table.at(g.router(4, 2), 3).accept & bit(Port::North));
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(r.changes[0].dropped, bit(Port::East));
  EXPECT_EQ(r.changes[0].added, bit(Port::North));
}

// A PE the color only passes through is bypassed; one it delivers to cannot be.
TEST(Reroute, ADeadPeIsBypassedUnlessTheColorDeliversToIt) {
  const MeshGeometry g(8, 8, 8);
  const RouteTable t = parse_routes(
      "routes:\n  - {color: 0, at: [0, 0], from: ramp, to: east}\n  - {color: 0, x: 1..6, y: 0, from: west, to: "
      "east}\n  - {color: 0, at: [7, 0], from: west, to: ramp}\n",
      "line.yaml", g, 24);
  DeadParts pass;
  pass.kill_router(g, g.router(3, 0));
  const Rerouted r = reroute(t, g, pass);
  ASSERT_TRUE(r.ok) << r.why;
  EXPECT_EQ(r.extra_hops, 2u);  // (2, 0) (2, 1) (3, 1) (4, 1) (4, 0): 4 hops for 2
  EXPECT_TRUE(r.table.at(g.router(3, 0), 0).empty());
  EXPECT_TRUE(broken_routes(r.table, pass).empty());
  EXPECT_TRUE(check_routes(r.table, g).empty());
  DeadParts end;
  end.kill_router(g, g.router(7, 0));
  const Rerouted no = reroute(t, g, end);
  EXPECT_FALSE(no.ok);
  EXPECT_EQ(no.why, "color 0 delivers to the failed PE (7, 0)");
}

std::string traffic(const std::string& extra) {
  return "traffic tiny --routes " + std::string(WAFERSIM_SOURCE_DIR) +
         "/tests/golden/fabric/tree.yaml --rate 0.5 --measure 1000 " + extra;
}

TEST(FailWhileRunning, ADeadLinkOnAStaticRouteStopsTheRunNamingRouteAndLink) {
  test::TempDir dir;
  const auto r = test::wafersim(traffic("--fail link:3,2,east@200 -o " + (dir.path() / "a").string()), true);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("link (3, 2) east - (4, 2) west failed at cycle 200: 1 static route over it: color 3 at "
                       "router (3, 2) forwards east over it ("),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("tests/golden/fabric/tree.yaml:4:5 routes[1])"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("redundancy.reroute is false"), std::string::npos) << r.out;
}

TEST(FailWhileRunning, WithReroutingTheRunGoesOnOverTheDetour) {
  test::TempDir dir;
  const std::string set = " --set redundancy.reroute=true --json -o ";
  const auto a = test::wafersim(traffic("--fail link:3,2,east@200" + set + (dir.path() / "a").string()));
  const auto b = test::wafersim(traffic("--fail link:3,2,east@200" + set + (dir.path() / "b").string()));
  const auto spare = test::wafersim(traffic("--fail link:3,6,east@200" + set + (dir.path() / "c").string()));
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0);
  ASSERT_EQ(spare.code, 0);
  EXPECT_NE(a.out.find("\"undelivered\": 0"), std::string::npos) << a.out;
  const std::string stats = test::slurp(dir.path() / "a" / "stats.json");
  EXPECT_EQ(stats, test::slurp(dir.path() / "b" / "stats.json"));
  const auto at = stats.find("\"failures\"");
  ASSERT_NE(at, std::string::npos);
  const std::string failures = stats.substr(at, 200);
  EXPECT_NE(failures.find("\"applied\": 1"), std::string::npos) << failures;
  EXPECT_NE(failures.find("\"rebuilds\": 1"), std::string::npos) << failures;
  EXPECT_NE(failures.find("\"routes_rewritten\": 4"), std::string::npos) << failures;
  EXPECT_NE(failures.find("\"extra_hops\": 2"), std::string::npos) << failures;
  const std::string quiet = test::slurp(dir.path() / "c" / "stats.json");
  EXPECT_NE(quiet.find("\"rebuilds\": 0"), std::string::npos);
}

TEST(FailWhileRunning, XyPacketsAndBadSpecsAreInputErrors) {
  test::TempDir dir;
  const auto xy =
      test::wafersim("traffic tiny --rate 0.1 --fail link:3,2,east@200 -o " + (dir.path() / "xy").string(), true);
  EXPECT_EQ(xy.code, 2);
  EXPECT_NE(xy.out.find("packet switched XY traffic has no route to rebuild"), std::string::npos) << xy.out;
  const auto bad = test::wafersim(traffic("--fail link:3,2@200 -o " + (dir.path() / "b").string()), true);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--fail 'link:3,2@200': a link is X,Y,DIR"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace wafersim::fabric::defects_failure_test
