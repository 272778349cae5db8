// Congestion windows, timeline counters and router waveforms of a wafer's fabric, on the
// wafer's engine as `wafersim traffic --trace` runs them: the windows add up exactly to the
// run's statistics, land in the right window to the cycle, point at a known hotspot, and the
// VCD's per-cycle values add up to the mesh's counters.

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "fabric/traffic/generator.h"
#include "platforms/platform_spec.h"
#include "platforms/run_trace.h"
#include "platforms/wafer.h"
#include "sim/stats/formatters.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vcd_reader.h"

namespace wafersim::trace_fabric_test {
namespace {

using test::slurp;

struct Row {
  std::uint64_t window, x, y, dir, color, forwarded, stalled, occupancy;
};

std::vector<Row> read_rows(const std::filesystem::path& path, bool by_color) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, by_color ? "window,x,y,dir,color,forwarded,stalled,occupancy"
                           : "window,x,y,dir,forwarded,stalled,occupancy");
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::vector<std::uint64_t> f;
    std::string item;
    while (std::getline(ss, item, ',')) f.push_back(std::stoull(item));
    if (by_color)
      rows.push_back(Row{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]});
    else
      rows.push_back(Row{f[0], f[1], f[2], f[3], 0, f[4], f[5], f[6]});
  }
  return rows;
}

// A traced traffic run on a wafer's engine.
struct TracedTraffic {
  test::TempDir tmp;
  platforms::LoadedPlatform loaded;
  sim::stats::Group root{""};
  std::unique_ptr<platforms::RunTrace> trace;
  std::unique_ptr<platforms::Wafer> wafer;
  std::unique_ptr<fabric::traffic::TrafficGenerator> gen;

  TracedTraffic(const std::vector<std::string>& set, const fabric::traffic::TrafficOptions& o,
                sim::trace::TraceOptions t, bool idle_skip = true)
      : loaded(platforms::load_platform("tiny", set)) {
    platforms::BuildOptions build;
    build.routing = fabric::Routing::XY;
    build.idle_skip = idle_skip;
    trace = std::make_unique<platforms::RunTrace>(t, tmp.path(), loaded.spec, o.warmup + o.measure);
    trace->configure(build);
    wafer = std::make_unique<platforms::Wafer>("wafer0", loaded.spec, build, root);
    trace->attach(*wafer, 0);
    gen = std::make_unique<fabric::traffic::TrafficGenerator>(wafer->mesh(), o, &wafer->engine());
  }
  void run() {
    sc_core::sc_start();
    wafer->engine().rethrow_failure();
    ASSERT_TRUE(gen->finished());
    trace->finish(wafer->engine().first_cycle_at_or_after(sc_core::sc_time_stamp()));
  }
  [[nodiscard]] nlohmann::json stats() const { return sim::stats::to_json(root)["wafer0"]["fabric"]; }
  [[nodiscard]] std::filesystem::path dir() const { return tmp.path() / "trace"; }
};

sim::trace::TraceOptions windows(std::uint64_t k) {
  sim::trace::TraceOptions t;
  t.windows = true;
  t.window_cycles = k;
  return t;
}

fabric::traffic::TrafficOptions hotspot() {
  fabric::traffic::TrafficOptions o;
  o.pattern = "hotspot";
  o.hotspot = hw::PeCoord{5, 2};
  o.hotspot_fraction = 0.3;
  o.rate = 0.05;
  o.warmup = 200;
  o.measure = 2000;
  o.seed = 3;
  return o;
}

// Hotspot traffic at (5, 2): per (window, router, direction, color) rows that add up exactly
// to the fabric's totals and per-color statistics; the busiest ejection is the hotspot's, and
// the output with the most credit stalls feeds the hotspot router.
TEST(TraceFabric, HotspotWindowsAddUpToTheStatisticsAndFindTheHotspot) {
  TracedTraffic t({}, hotspot(), windows(100));
  t.run();
  const auto rows = read_rows(t.dir() / "fabric-w0.csv", true);
  const auto st = t.stats();
  std::uint64_t fwd = 0, stall = 0, occ = 0;
  std::vector<std::uint64_t> by_color(4, 0);
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>, std::uint64_t> link_fwd, link_stall;
  std::uint64_t last_window = 0;
  for (const Row& r : rows) {
    EXPECT_GE(r.window, last_window);
    last_window = r.window;
    fwd += r.forwarded;
    stall += r.stalled;
    occ += r.occupancy;
    by_color.at(r.color) += r.forwarded;
    link_fwd[{r.x, r.y, r.dir}] += r.forwarded;
    link_stall[{r.x, r.y, r.dir}] += r.stalled;
  }
  EXPECT_EQ(fwd, st["wavelets_forwarded"].get<std::uint64_t>());
  EXPECT_EQ(stall, st["credit_stalls"].get<std::uint64_t>());
  EXPECT_EQ(occ, st["occupancy_integral"].get<std::uint64_t>());
  for (std::size_t c = 0; c < 4; ++c) EXPECT_EQ(by_color[c], st["forwarded_by_color"][c].get<std::uint64_t>());
  EXPECT_GT(stall, 0u);

  auto top = [](const auto& m) {
    auto best = m.begin();
    for (auto it = m.begin(); it != m.end(); ++it)
      if (it->second > best->second) best = it;
    return best->first;
  };
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>, std::uint64_t> ramps;
  for (const auto& [k, v] : link_fwd)
    if (std::get<2>(k) == 4) ramps[k] = v;
  EXPECT_EQ(top(ramps), std::make_tuple(5u, 2u, 4u));
  const auto [sx, sy, sd] = top(link_stall);
  const int dx[4] = {0, 1, 0, -1}, dy[4] = {-1, 0, 1, 0};
  ASSERT_LT(sd, 4u) << "the top stall is on a link between routers";
  EXPECT_EQ(static_cast<int>(sx) + dx[sd], 5);
  EXPECT_EQ(static_cast<int>(sy) + dy[sd], 2);

  const auto meta = nlohmann::json::parse(slurp(t.dir() / "meta.json"));
  EXPECT_EQ(meta["windows"].get<std::uint64_t>(), (t.wafer->engine().cycles().count() + 99) / 100);
  EXPECT_EQ(meta["fabric"][0]["region_size"], 1);
  EXPECT_EQ(meta["fabric"][0]["totals"]["forwarded"].get<std::uint64_t>(), fwd);
  EXPECT_EQ(meta["pe"]["recorded"], false);
}

// One wavelet from (0, 0) to (3, 0) injected in cycle 0: it is in (0, 0)'s ramp queue in
// cycle 1 and leaves east, then one hop per cycle, and ejects at (3, 0) in cycle 4. With
// windows of 2 cycles the grants of cycles 1, 2, 3, 4 fall in windows 0, 1, 1, 2.
TEST(TraceFabric, EachWaveletCountsInTheWindowOfItsCycle) {
  fabric::traffic::TrafficOptions o;
  o.rate = 0;
  o.warmup = 0;
  o.measure = 1;
  o.colors = 1;
  TracedTraffic t({}, o, windows(2));
  t.gen->add_packet(hw::PeCoord{0, 0}, hw::PeCoord{3, 0}, 1, sim::Cycle(0));
  t.run();
  std::vector<std::string> got;
  for (const Row& r : read_rows(t.dir() / "fabric-w0.csv", true))
    got.push_back(
        fmt::format("w{} ({},{}) d{} f{} s{} o{}", r.window, r.x, r.y, r.dir, r.forwarded, r.stalled, r.occupancy));
  // Occupancy counts the input queue holding the wavelet in the cycle it is granted: the ramp
  // at (0, 0), then the west inputs of (1, 0), (2, 0), (3, 0).
  EXPECT_EQ(got, (std::vector<std::string>{"w0 (0,0) d1 f1 s0 o0", "w0 (0,0) d4 f0 s0 o1", "w1 (1,0) d1 f1 s0 o0",
                                           "w1 (1,0) d3 f0 s0 o1", "w1 (2,0) d1 f1 s0 o0", "w1 (2,0) d3 f0 s0 o1",
                                           "w2 (3,0) d3 f0 s0 o1", "w2 (3,0) d4 f1 s0 o0"}));
}

// The same run with idle skipping off ticks every cycle: the windows are the same bytes.
TEST(TraceFabric, IdleSkippingChangesNoWindow) {
  const std::string args =
      "traffic tiny --pattern hotspot --hotspot 2,6 --rate 0.02 --warmup 0 --measure 600 --trace windows,timeline "
      "--trace-window 37 --json -o ";
  test::TempDir tmp;
  const auto a = test::wafersim(args + (tmp.path() / "a").string());
  const auto b = test::wafersim(args + (tmp.path() / "b").string() + " --no-idle-skip");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  for (const char* f : {"trace/fabric-w0.csv", "trace/timeline.json"})
    EXPECT_EQ(slurp(tmp.path() / "a" / f), slurp(tmp.path() / "b" / f)) << f;
  auto meta_a = nlohmann::json::parse(slurp(tmp.path() / "a/trace/meta.json"));
  auto meta_b = nlohmann::json::parse(slurp(tmp.path() / "b/trace/meta.json"));
  EXPECT_NE(meta_a["run_id"], meta_b["run_id"]);
  meta_a.erase("run_id");
  meta_b.erase("run_id");
  EXPECT_EQ(meta_a, meta_b);
  EXPECT_FALSE(slurp(tmp.path() / "a/trace/fabric-w0.csv").empty());
}

// A 64 x 48 grid in at most 48 regions: 8 x 8 routers each; windows merge to stay within a
// budget of 4; the rows still add up to the statistics.
TEST(TraceFabric, RegionsAndMergedWindowsBoundTheFilesAndKeepTheSums) {
  test::TempDir tmp;
  const auto r = test::wafersim(
      "traffic tiny --set wafer.width=64 --set wafer.height=48 --pattern uniform --rate 0.01 --warmup 0 --measure 400 "
      "--trace windows --trace-cells 48 --trace-window 10 --trace-max-windows 4 --json -o " +
      tmp.path().string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto meta = nlohmann::json::parse(slurp(tmp.path() / "trace/meta.json"));
  const auto& f = meta["fabric"][0];
  EXPECT_EQ(f["region_size"], 8);
  EXPECT_EQ(f["cols"], 8);
  EXPECT_EQ(f["rows"], 6);
  EXPECT_LE(meta["windows"].get<std::uint64_t>(), 4u);
  EXPECT_GE(meta["merges"].get<std::uint64_t>(), 1u);
  EXPECT_EQ(meta["window_cycles"].get<std::uint64_t>(), 10u << meta["merges"].get<std::uint64_t>());
  const auto rows = read_rows(tmp.path() / "trace/fabric-w0.csv", true);
  EXPECT_LE(rows.size(), 4u * 48 * 5 * 4);
  std::uint64_t fwd = 0, occ = 0;
  for (const Row& row : rows) {
    EXPECT_EQ(row.x % 8, 0u);
    EXPECT_EQ(row.y % 8, 0u);
    EXPECT_LT(row.window, 4u);
    fwd += row.forwarded;
    occ += row.occupancy;
  }
  const auto stats = nlohmann::json::parse(slurp(tmp.path() / "stats.json"))["stats"]["wafer0"]["fabric"];
  EXPECT_EQ(fwd, stats["wavelets_forwarded"].get<std::uint64_t>());
  EXPECT_EQ(occ, stats["occupancy_integral"].get<std::uint64_t>());
}

// Per-direction windows (no colors) and a traced region only: the region's rows are the
// region's share of the per-router statistics.
TEST(TraceFabric, ARegionTracesOnlyItsRouters) {
  sim::trace::TraceOptions opt = windows(500);
  opt.region = sim::trace::Rect{4, 1, 6, 3};
  opt.by_color = sim::trace::ByColor::Off;
  TracedTraffic t({}, hotspot(), opt);
  t.run();
  const auto rows = read_rows(t.dir() / "fabric-w0.csv", false);
  std::uint64_t fwd = 0;
  for (const Row& r : rows) {
    EXPECT_TRUE(r.x >= 4 && r.x <= 6 && r.y >= 1 && r.y <= 3);
    fwd += r.forwarded;
  }
  const auto per_router = t.stats()["router_forwarded"];
  std::uint64_t expect = 0;
  for (std::uint32_t y = 1; y <= 3; ++y)
    for (std::uint32_t x = 4; x <= 6; ++x) expect += per_router[y * 8 + x].get<std::uint64_t>();
  EXPECT_EQ(fwd, expect);
}

// The VCD's per-cycle "sent" and "stalled" values of the probed routers add up to the mesh's
// per-link counters; the file has the scopes and variables the docs name.
TEST(TraceFabric, RouterWaveformsAddUpToTheLinkCounters) {
  sim::trace::TraceOptions opt;
  opt.vcd = true;
  opt.pes = {sim::trace::Rect{5, 2, 5, 3}};
  TracedTraffic t({}, hotspot(), opt);
  t.run();
  const auto vcd = test::read_vcd((t.dir() / "routers.vcd").string());
  EXPECT_EQ(vcd.timescale, "1 ps");
  EXPECT_EQ(vcd.variables.size(), 2u * 5 * 3);
  const double period = 1e12 / t.loaded.spec.wafer.clock.hz;
  const std::uint64_t end = t.wafer->engine().cycles().count();
  auto cycle_of = [&](std::uint64_t ps) {
    return static_cast<std::uint64_t>(std::llround(static_cast<double>(ps) / period));
  };
  // Sum over cycles of a variable's value (values hold until the next change).
  auto per_cycle_sum = [&](const test::VcdVariable& v) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < v.changes.size(); ++i) {
      const std::uint64_t from = cycle_of(v.changes[i].first);
      const std::uint64_t to = i + 1 < v.changes.size() ? cycle_of(v.changes[i + 1].first) : end;
      sum += v.changes[i].second * (to - from);
    }
    return sum;
  };
  const char* ports[5] = {"north", "east", "south", "west", "ramp"};
  std::uint64_t sent_total = 0;
  for (std::uint32_t y : {2u, 3u})
    for (std::uint32_t p = 0; p < 5; ++p) {
      const std::string base = fmt::format("wafer0.r5_{}.{}", y, ports[p]);
      const auto* sent = vcd.find(base + "_sent");
      const auto* stalled = vcd.find(base + "_stalled");
      const auto* queued = vcd.find(base + "_queued");
      ASSERT_TRUE(sent && stalled && queued) << base;
      EXPECT_EQ(sent->bits, 1);
      const auto k = t.wafer->mesh().link_counters(t.wafer->mesh().geometry().router(5, y), p);
      EXPECT_EQ(per_cycle_sum(*sent), k.forwarded) << base;
      EXPECT_EQ(per_cycle_sum(*stalled), k.stalled) << base;
      EXPECT_EQ(queued->changes.back().second, k.queued) << base;
      sent_total += k.forwarded;
    }
  EXPECT_GT(sent_total, 1000u);
}

TEST(TraceFabric, BadSelectionsAreInputErrors) {
  const auto loaded = platforms::load_platform("tiny");
  test::TempDir tmp;
  sim::trace::TraceOptions opt;
  opt.vcd = true;
  EXPECT_THROW(platforms::RunTrace(opt, tmp.path(), loaded.spec, 0), sim::InputError);  // no routers selected
  opt.pes = {sim::trace::Rect{0, 0, 8, 0}};
  EXPECT_THROW(platforms::RunTrace(opt, tmp.path(), loaded.spec, 0), sim::InputError);  // outside the grid
  const auto r = test::wafersim("traffic tiny --rate 0.1 --trace heat", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown trace 'heat'"), std::string::npos) << r.out;
  const auto r2 = test::wafersim("traffic tiny --rate 0.1 --trace-window 10", true);
  EXPECT_EQ(r2.code, 2);
  EXPECT_NE(r2.out.find("need --trace WHAT"), std::string::npos) << r2.out;
}

}  // namespace
}  // namespace wafersim::trace_fabric_test
