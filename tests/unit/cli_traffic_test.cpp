// `wafersim traffic` end to end: JSON, the latency-throughput CSV, run folders, idle
// skipping, static routes with a deadlock (exit code 3) and bad input (exit code 2).

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::test::cli_traffic_test {
namespace {

TEST(CliTraffic, HelpNamesTheOptions) {
  const auto r = wafersim("traffic --help");
  EXPECT_EQ(r.code, 0);
  for (const char* w : {"--pattern", "--rate", "--rates", "--sweep-rates", "--packet-size", "--colors", "--hotspot",
                        "--warmup", "--measure", "--drain", "--routes", "--no-idle-skip", "--seed", "--json"})
    EXPECT_NE(r.out.find(w), std::string::npos) << w;
}

TEST(CliTraffic, JsonHasTheLoadAndLatencyKeys) {
  TempDir dir;
  const auto r = wafersim("traffic tiny --pattern uniform --rate 0.2 --measure 1000 --json --out " +
                          (dir.path() / "run").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"offered", "accepted", "latency_avg", "latency_p50", "latency_p99", "latency_max", "cycles",
                        "packets", "drained", "bound"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_NEAR(j["offered"].get<double>(), 0.2, 0.02);
  EXPECT_NEAR(j["accepted"].get<double>(), 0.2, 0.02);
  EXPECT_EQ(j["bound"].get<double>(), 0.5);
  EXPECT_EQ(j["colors"], 4);
  EXPECT_EQ(j["packet_size"], 1);
  EXPECT_TRUE(j["drained"].get<bool>());
  EXPECT_GE(j["latency_p99"].get<int>(), j["latency_p50"].get<int>());
  for (const char* f : {"config.yaml", "stats.json", "stats.txt", "run.json"})
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "run" / f)) << f;
  const auto stats = nlohmann::json::parse(slurp(dir.path() / "run" / "stats.json"));
  EXPECT_GT(stats["stats"]["wafer0"]["fabric"]["wavelets_forwarded"].get<long>(), 0);
  EXPECT_TRUE(stats["stats"]["wafer0"]["traffic"].contains("latency"));
  EXPECT_EQ(stats["descriptions"]["wafer0.fabric.occupancy_integral"]["unit"], "wavelet-cycles");
}

TEST(CliTraffic, NoIdleSkipWritesBitIdenticalStatistics) {
  TempDir dir;
  const std::string common = "traffic tiny --pattern hotspot --hotspot 3,4 --rate 0.05 --packet-size 3 --measure 800 ";
  ASSERT_EQ(wafersim(common + "--out " + (dir.path() / "a").string()).code, 0);
  ASSERT_EQ(wafersim(common + "--no-idle-skip --out " + (dir.path() / "b").string()).code, 0);
  const std::string a = slurp(dir.path() / "a" / "stats.json");
  EXPECT_GT(a.size(), 1000u);
  EXPECT_EQ(a, slurp(dir.path() / "b" / "stats.json"));
}

TEST(CliTraffic, RatesWriteALatencyThroughputCurve) {
  TempDir dir;
  const auto r =
      wafersim("traffic tiny --pattern transpose --rates 0.05,0.1 --measure 500 --out " + dir.path().string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("pattern,packet_size,colors,queue_depth,rate,offered,accepted,latency_avg,", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\ntranspose,1,4,8,0.05,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ntranspose,1,4,8,0.1,"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(dir.path() / "curve.csv"), r.out);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "rate-0.0500" / "stats.json"));
  const auto j =
      wafersim("traffic tiny --sweep-rates 0.1:0.3:0.1 --measure 300 --json --out " + (dir.path() / "s").string());
  ASSERT_EQ(j.code, 0);
  const auto points = nlohmann::json::parse(j.out);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[2]["rate"].get<double>(), 0.3);
}

TEST(CliTraffic, CyclicStaticRoutesDeadlockWithExitCodeThree) {
  TempDir dir;
  const auto routes = dir.write("ring.yaml", R"(routes:
  - {color: 0, at: [0, 0], from: [ramp, south], to: [east, ramp]}
  - {color: 0, at: [1, 0], from: [ramp, west], to: [south, ramp]}
  - {color: 0, at: [1, 1], from: [ramp, north], to: [west, ramp]}
  - {color: 0, at: [0, 1], from: [ramp, east], to: [north, ramp]}
)");
  const auto r =
      wafersim("traffic tiny --routes " + routes + " --rate 0.5 --out " + (dir.path() / "run").string(), true);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_NE(r.out.find("fabric deadlock at cycle"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("router (1, 1):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("north input, color 0: 8/8"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir.path() / "run" / "run.json").find("simulation error: fabric deadlock"), std::string::npos);
}

TEST(CliTraffic, StaticRoutesRun) {
  TempDir dir;
  const auto routes = dir.write("row.yaml", R"(routes:
  - {color: 3, at: [0, 2], from: ramp, to: east}
  - {color: 3, x: 1..6, y: 2, from: west, to: [east, ramp]}
  - {color: 3, at: [7, 2], from: west, to: ramp}
)");
  const auto r = wafersim("traffic tiny --routes " + routes + " --rate 0.5 --measure 400 --json --out " +
                          (dir.path() / "run").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["routing"], "static");
  EXPECT_TRUE(j["drained"].get<bool>());
  // One source at 0.5 wavelets/cycle, seven copies each, over 64 routers.
  EXPECT_NEAR(j["accepted"].get<double>(), 0.5 * 7 / 64, 0.01);
}

// Multicast over 3-cycle links, ending in ramps and in both edge channels (drained by the
// traffic sinks): every copy arrives, and idle skipping changes no statistic.
TEST(CliTraffic, StaticMulticastOverSlowLinksReachesRampsAndEdges) {
  TempDir dir;
  const auto routes = dir.write("tree.yaml", R"(routes:
  - {color: 3, at: [0, 2], from: ramp, to: [east, south]}
  - {color: 3, x: 1..6, y: 2, from: west, to: [east, ramp]}
  - {color: 3, at: [7, 2], from: west, to: [ramp, east]}
  - {color: 3, x: 0, y: 3..6, from: north, to: [south, ramp]}
  - {color: 3, at: [0, 7], from: north, to: [ramp, west]}
)");
  const std::string common = "traffic tiny --routes " + routes +
                             " --set 'fabric.hop_latency=3 cycles' --set 'fabric.ramp_latency=2 cycles' "
                             "--set fabric.queue_depth=2 --rate 0.4 --measure 400 ";
  ASSERT_EQ(wafersim(common + "--out " + (dir.path() / "a").string()).code, 0);
  ASSERT_EQ(wafersim(common + "--no-idle-skip --out " + (dir.path() / "b").string()).code, 0);
  const std::string a = slurp(dir.path() / "a" / "stats.json");
  EXPECT_EQ(a, slurp(dir.path() / "b" / "stats.json"));
  const auto fabric = nlohmann::json::parse(a)["stats"]["wafer0"]["fabric"];
  const long injected = fabric["wavelets_injected"].get<long>();
  EXPECT_GT(injected, 100);
  // 7 ramps on row 2, 5 on column 0 and the two edge channels: 14 copies of each wavelet.
  EXPECT_EQ(fabric["wavelets_delivered"].get<long>(), 14 * injected);
  EXPECT_EQ(fabric["wavelets_in_flight"].get<long>(), 0);
}

TEST(CliTraffic, BadInputIsExitCodeTwo) {
  TempDir dir;
  auto r = wafersim("traffic tiny --pattern unifrom --rate 0.1 --out " + dir.path().string(), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("did you mean 'uniform'?"), std::string::npos) << r.out;
  EXPECT_EQ(wafersim("traffic tiny --rate 1.5 --out " + dir.path().string()).code, 2);
  EXPECT_EQ(wafersim("traffic tiny --rate 0.1 --colors 30 --out " + dir.path().string()).code, 2);
  EXPECT_EQ(wafersim("traffic tiny --out " + dir.path().string()).code, 2);
  const auto routes = dir.write("bad.yaml", "routes:\n  - {color: 0, at: [7, 3], from: ramp, to: [east, north]}\n");
  r = wafersim(
      "traffic tiny --set fabric.edge_io_channels=2 --routes " + routes + " --rate 0.1 --out " + dir.path().string(),
      true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(routes + ":2:5: error: routes[0]: color 0 at router (7, 3) forwards east"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace wafersim::test::cli_traffic_test
