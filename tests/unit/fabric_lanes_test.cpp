// The two sweeps behind the seam of fabric/router_sweep.h, each chosen the way a mesh chooses
// it, from the traffic it is told to expect: the routers in vector lanes (fabric/lane_sweep.h)
// against the routers' own sweep (fabric/block_routers.h): the same deliveries, results and
// every statistic, wavelet for wavelet, over patterns, loads up to saturation, queue depths,
// colors and mesh shapes; where the lanes are chosen and what they refuse; the deadlock report.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "fabric/lane_sweep.h"
#include "fabric/mesh.h"
#include "fabric/traffic/standalone.h"
#include "sim/errors.h"
#include "sim/stats/formatters.h"
#include "sim/stats/stats.h"
#include "tests/support/traffic_results.h"

namespace wafersim::fabric::fabric_lanes_test {
namespace {

// Builds without AVX2 do not offer the lanes (no mesh chooses them): these are skipped.
constexpr const char* kNoLanes = "no vector lanes in this build (WAFERSIM_ARCH without AVX2)";

using traffic::StandaloneTraffic;
using traffic::TrafficGenerator;
using traffic::TrafficOptions;
using traffic::TrafficResult;

FabricConfig fabric(std::uint32_t depth = 8, StatsDetail detail = StatsDetail::Routers) {
  FabricConfig c;
  c.colors = 24;
  c.queue_depth = depth;
  c.edge_io_channels = 0;
  c.stats_detail = detail;
  return c;
}

MeshOptions xy(bool idle_skip = true) {
  MeshOptions o;
  o.routing = Routing::XY;
  o.idle_skip = idle_skip;
  return o;
}

// What a mesh is told to expect: single-wavelet packets on `colors` colors at the load from
// which the lanes pay (they are chosen where they fit), or nothing (the routers' own sweep).
ExpectedTraffic heavy(std::uint32_t colors) {
  ExpectedTraffic t;
  t.moves = LaneSweep::kMinMoves;
  t.single_wavelet_colors = colors;
  return t;
}
MeshOptions expecting(ExpectedTraffic traffic, bool idle_skip = true) {
  MeshOptions o = xy(idle_skip);
  o.traffic = traffic;
  return o;
}

struct Outcome {
  TrafficResult result;
  std::vector<std::tuple<std::uint32_t, std::uint64_t, std::uint32_t, std::uint64_t, std::uint64_t>> deliveries;
  std::string stats;  // the mesh's statistics tree as JSON
  std::vector<LinkCounters> links;
  std::uint64_t forwarded = 0, stalls = 0, occupancy = 0, injected = 0, delivered = 0;
  bool lanes = false;
};

Outcome run(const FabricConfig& f, const MeshGeometry& g, const TrafficOptions& o, bool lanes, bool observe = true,
            bool idle_skip = true) {
  // (Whatever the generator's load would have the mesh choose.)
  StandaloneTraffic t(f, g, expecting(lanes ? heavy(o.colors) : ExpectedTraffic{}, idle_skip), o);
  Outcome out;
  out.lanes = t.mesh().lanes();
  if (observe)
    t.generator().set_observer([&out](const TrafficGenerator::Delivery& d) {
      out.deliveries.emplace_back(d.src, d.seq, d.color, d.created, d.ejected);
    });
  out.result = t.run();
  sim::stats::Group root("root");
  t.mesh().add_stats(root.group("fabric"));
  out.stats = sim::stats::to_json(root).dump();
  for (std::uint32_t r = 0; r < g.routers(); ++r)
    for (std::uint32_t p = 0; p < kPorts; ++p) out.links.push_back(t.mesh().link_counters(r, p));
  out.forwarded = t.mesh().forwarded();
  out.stalls = t.mesh().credit_stalls();
  out.occupancy = t.mesh().occupancy_integral();
  out.injected = t.mesh().injected();
  out.delivered = t.mesh().delivered();
  return out;
}

void expect_same(const Outcome& a, const Outcome& b, const std::string& what) {
  SCOPED_TRACE(what);
  test::expect_same_result(a.result, b.result);
  // (Sinks are told of arrivals in the order the routers are swept, which differs within a
  // cycle: the same deliveries, in any order.)
  auto sorted = [](auto v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_TRUE(sorted(a.deliveries) == sorted(b.deliveries)) << what;
  EXPECT_EQ(a.forwarded, b.forwarded) << what;
  EXPECT_EQ(a.stalls, b.stalls) << what;
  EXPECT_EQ(a.occupancy, b.occupancy) << what;
  EXPECT_EQ(a.injected, b.injected) << what;
  EXPECT_EQ(a.delivered, b.delivered) << what;
  ASSERT_EQ(a.links.size(), b.links.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.links.size(); ++i)
    differ += a.links[i].forwarded != b.links[i].forwarded || a.links[i].stalled != b.links[i].stalled ||
              a.links[i].occupancy != b.links[i].occupancy || a.links[i].queued != b.links[i].queued;
  EXPECT_EQ(differ, 0u) << what << ": router ports whose counters differ";
  EXPECT_EQ(a.stats, b.stats) << what;
}

TEST(Lanes, SameDeliveriesAndStatisticsAsTheRoutersOwnSweep) {
  if (!LaneRouters::kAvailable) GTEST_SKIP() << kNoLanes;
  struct Case {
    const char* pattern;
    double rate;
    std::uint32_t w, h, depth, colors;
  };
  const Case cases[] = {
      {"uniform", 0.1, 8, 8, 8, 4},
      {"uniform", 0.6, 8, 8, 2, 4},  // saturated: credit stalls
      {"uniform", 0.4, 16, 16, 4, 2},
      {"transpose", 0.3, 8, 8, 8, 1},
      {"tornado", 0.5, 12, 7, 3, 3},
      {"hotspot", 0.2, 9, 5, 8, 4},
      {"neighbor", 0.9, 5, 3, 1, 4},
      {"bit-complement", 0.35, 16, 8, 127, 4},
      {"shuffle", 0.25, 8, 4, 6, 2},
      {"uniform", 0.3, LaneRouters::kMaxWidth, 2, 4, 4},  // the widest rows: shifted stores at the padding
  };
  for (const Case& c : cases) {
    TrafficOptions o;
    o.pattern = c.pattern;
    o.rate = c.rate;
    o.colors = c.colors;
    o.warmup = 100;
    o.measure = 700;
    o.seed = 7;
    const std::string what = std::string(c.pattern) + " at " + std::to_string(c.rate) + " on " + std::to_string(c.w) +
                             " x " + std::to_string(c.h);
    const Outcome lanes = run(fabric(c.depth), MeshGeometry(c.w, c.h, 0), o, true);
    const Outcome own = run(fabric(c.depth), MeshGeometry(c.w, c.h, 0), o, false);
    ASSERT_TRUE(lanes.lanes) << what;
    ASSERT_FALSE(own.lanes) << what;
    EXPECT_GT(lanes.deliveries.size(), 100u) << what;
    expect_same(lanes, own, what);
    if (std::string(c.pattern) == "uniform" && c.rate >= 0.6) {
      EXPECT_GT(lanes.stalls, 0u) << what;
    }
  }
}

// Without an observer single-wavelet packets travel without records (their creation cycle in
// the tag): the lanes carry the tag as they carry the payload.
TEST(Lanes, SameResultForPacketsWithoutRecordsAndWithoutIdleSkipping) {
  if (!LaneRouters::kAvailable) GTEST_SKIP() << kNoLanes;
  TrafficOptions o;
  o.rate = 0.3;
  o.warmup = 100;
  o.measure = 1000;
  const Outcome a = run(fabric(4), MeshGeometry(16, 16, 0), o, true, false);
  const Outcome b = run(fabric(4), MeshGeometry(16, 16, 0), o, false, false);
  const Outcome c = run(fabric(4), MeshGeometry(16, 16, 0), o, true, false, false);
  ASSERT_TRUE(a.lanes);
  expect_same(a, b, "without records");
  expect_same(a, c, "lanes without idle skipping");
}

// Counters run in 32-bit lanes and are folded into 64-bit ones every 2^16 sweeps.
TEST(Lanes, CountersStayExactPastTheirFold) {
  if (!LaneRouters::kAvailable) GTEST_SKIP() << kNoLanes;
  TrafficOptions o;
  o.rate = 0.5;
  o.warmup = 0;
  o.measure = 70000;
  o.drain = 1000;
  const Outcome a = run(fabric(8), MeshGeometry(4, 2, 0), o, true, false);
  const Outcome b = run(fabric(8), MeshGeometry(4, 2, 0), o, false, false);
  ASSERT_TRUE(a.lanes);
  EXPECT_GT(a.result.cycles, 65536u);
  EXPECT_GT(a.occupancy, 1000000u);
  expect_same(a, b, "70,000 cycles");
}

TEST(Lanes, ChosenOnlyWhereTheModelFits) {
  if (!LaneRouters::kAvailable) GTEST_SKIP() << kNoLanes;
  auto lanes = [](const FabricConfig& f, MeshOptions m, ExpectedTraffic traffic) {
    m.traffic = traffic;
    return Mesh(f, MeshGeometry(8, 8, 0), std::move(m), nullptr).lanes();
  };
  FabricConfig f = fabric();
  EXPECT_TRUE(lanes(f, xy(), heavy(4)));
  EXPECT_TRUE(lanes(f, xy(), heavy(1)));
  EXPECT_FALSE(lanes(f, xy(), heavy(0)));  // no promise of single-wavelet packets
  EXPECT_FALSE(lanes(f, xy(), ExpectedTraffic{}));
  EXPECT_FALSE(Mesh(f, MeshGeometry(8, 8, 0), xy(), nullptr).lanes());  // told nothing
  ExpectedTraffic light = heavy(4);
  light.moves = LaneSweep::kMinMoves * 0.99;  // most routers idle: the routers' own sweep is faster
  EXPECT_FALSE(lanes(f, xy(), light));
  EXPECT_FALSE(lanes(f, xy(), heavy(5)));           // more colors than a lane router queues
  EXPECT_FALSE(lanes(f, MeshOptions{}, heavy(4)));  // static routes
  MeshOptions traced = xy();
  traced.trace_counters = StatsDetail::Routers;
  EXPECT_FALSE(lanes(f, traced, heavy(4)));
  FabricConfig links = fabric(8, StatsDetail::Links);
  EXPECT_FALSE(lanes(links, xy(), heavy(4)));  // per-link color counters
  FabricConfig deep = fabric(128);
  EXPECT_FALSE(lanes(deep, xy(), heavy(4)));
  FabricConfig slow = fabric();
  slow.hop_latency = sim::Cycle(2);
  EXPECT_FALSE(lanes(slow, xy(), heavy(4)));
  slow = fabric();
  slow.ramp_latency = sim::Cycle(2);
  EXPECT_FALSE(lanes(slow, xy(), heavy(4)));
  FabricConfig two = fabric();
  two.colors = 2;
  EXPECT_FALSE(lanes(two, xy(), heavy(3)));  // more than the fabric has
  EXPECT_FALSE(Mesh(f, MeshGeometry(64, 65, 0), expecting(heavy(4)), nullptr).lanes());
  EXPECT_TRUE(Mesh(f, MeshGeometry(LaneRouters::kMaxWidth, 2, 0), expecting(heavy(4)), nullptr).lanes());
  EXPECT_FALSE(Mesh(f, MeshGeometry(LaneRouters::kMaxWidth + 1, 2, 0), expecting(heavy(4)), nullptr).lanes());
}

TEST(Lanes, TheGeneratorTellsTheMeshToExpectThemForSingleWaveletPacketsOnly) {
  if (!LaneRouters::kAvailable) GTEST_SKIP() << kNoLanes;
  // Uniform on 8 x 8: 5.25 hops on average and the ejection, 6.25 moves a packet; the lanes from
  // 1 move per router and cycle on.
  auto lanes = [](const char* pattern, double rate, std::uint32_t packet_size = 1, std::uint32_t side = 8) {
    TrafficOptions o;
    o.pattern = pattern;
    o.rate = rate;
    o.packet_size = packet_size;
    return StandaloneTraffic(fabric(), MeshGeometry(side, side, 0), xy(), o).mesh().lanes();
  };
  EXPECT_TRUE(lanes("uniform", 0.17));
  EXPECT_FALSE(lanes("uniform", 0.15));
  // To (x + 1, y + 1) with wrap-around: 7/8 x 1 + 1/8 x 7 hops in each dimension, 4.5 moves a
  // packet.
  EXPECT_FALSE(lanes("neighbor", 0.22));
  EXPECT_TRUE(lanes("neighbor", 0.23));
  EXPECT_FALSE(lanes("uniform", 0.3, 1, 80));  // beyond LaneRouters::kMaxRouters
  EXPECT_FALSE(lanes("uniform", 0.3, 2));
  TrafficOptions o;
  o.rate = 0.3;
  o.colors = 3;
  const MeshGeometry g(8, 8, 0);
  const ExpectedTraffic single = TrafficGenerator::expected_traffic(o, g, Routing::XY);
  EXPECT_EQ(single.single_wavelet_colors, 3u);
  EXPECT_GT(single.moves, LaneSweep::kMinMoves);
  EXPECT_EQ(TrafficGenerator::expected_traffic(o, g, Routing::Static).single_wavelet_colors, 0u);
  EXPECT_EQ(TrafficGenerator::expected_traffic(o, g, Routing::Static).moves, 0.0);
  TrafficOptions packets = o;
  packets.packet_size = 2;
  EXPECT_EQ(TrafficGenerator::expected_traffic(packets, g, Routing::XY).single_wavelet_colors, 0u);
  // The sweep is chosen when the mesh is built: a scripted packet of several wavelets breaks the
  // promise, before the first wavelet as after it.
  StandaloneTraffic scripted(fabric(), g, xy(), o);
  ASSERT_TRUE(scripted.mesh().lanes());
  EXPECT_THROW(scripted.generator().add_packet({0, 0}, {3, 3}, 3, sim::Cycle(5)), std::logic_error);
  scripted.generator().add_packet({0, 0}, {3, 3}, 1, sim::Cycle(5));
  StandaloneTraffic late(fabric(), g, xy(), o);
  late.step(50);
  ASSERT_GT(late.mesh().injected(), 0u);
  EXPECT_THROW(late.generator().add_packet({0, 0}, {3, 3}, 3, sim::Cycle(60)), std::logic_error);
}

TEST(Lanes, SendsOutsideThePromiseAreLogicErrors) {
  if (!LaneRouters::kAvailable) GTEST_SKIP() << kNoLanes;
  FabricConfig f = fabric();
  f.edge_io_channels = 1;
  Mesh mesh(f, MeshGeometry(4, 4, 1), expecting(heavy(2)), nullptr);
  ASSERT_TRUE(mesh.lanes());
  const Flit single = Flit::make(pack_destination(3, 3), 0, true, true);
  const sim::Cycle now(0);
  EXPECT_THROW(mesh.send(0, hw::Color(2), single, now), std::logic_error);  // color beyond the promise
  EXPECT_THROW(mesh.send(0, hw::Color(0), Flit::make(pack_destination(3, 3), 0, true, false), now),
               std::logic_error);  // a head without its tail
  EXPECT_THROW(mesh.send(mesh.edge_endpoint(EdgeSide::West, 0), hw::Color(0), single, now), std::logic_error);
  EXPECT_FALSE(mesh.can_send(mesh.edge_endpoint(EdgeSide::West, 0), hw::Color(0)));
  EXPECT_FALSE(mesh.can_send(0, hw::Color(2)));
  ASSERT_TRUE(mesh.can_send(0, hw::Color(1)));
  mesh.send(0, hw::Color(1), single, now);
  EXPECT_EQ(mesh.injected(), 1u);
  // A mesh the lanes do not fit keeps its own sweep and holds no sender to the promise.
  MeshOptions traced = expecting(heavy(2));
  traced.trace_counters = StatsDetail::Routers;
  Mesh own(f, MeshGeometry(4, 4, 1), traced, nullptr);
  ASSERT_FALSE(own.lanes());
  EXPECT_TRUE(own.can_send(0, hw::Color(2)));
  own.send(0, hw::Color(2), Flit::make(pack_destination(3, 3), 0, true, false), now);
  own.send(own.edge_endpoint(EdgeSide::West, 0), hw::Color(0), single, now);
  EXPECT_EQ(own.injected(), 2u);
}

// Nothing pops router (1, 0)'s ramp: its receive queue fills, then the queues behind it, until
// nothing moves; the report names the full queues and why their heads wait.
// An endpoint that takes a wavelet only every third cycle: the ramp output runs out of credit
// and gets it back when the endpoint pops, in the same cycles as in the routers' own sweep.
TEST(Lanes, ASlowEndpointThrottlesTheRampOutputAsTheRoutersOwnSweepDoes) {
  if (!LaneRouters::kAvailable) GTEST_SKIP() << kNoLanes;
  struct Run {
    std::vector<std::pair<std::uint64_t, std::uint32_t>> popped;  // (cycle, payload)
    std::uint64_t stalls = 0, ramp_stalls = 0, sent = 0;
  };
  auto run = [](bool lanes) {
    FabricConfig f = fabric(2);
    Mesh mesh(f, MeshGeometry(4, 2, 0), expecting(lanes ? heavy(2) : ExpectedTraffic{}), nullptr);
    EXPECT_EQ(mesh.lanes(), lanes);
    const std::uint32_t sink = 3;  // (3, 0)
    Run out;
    for (std::uint64_t t = 0; t < 400; ++t) {
      const sim::Cycle now(t);
      mesh.read(now);
      mesh.evaluate(now);
      for (std::uint32_t src : {0u, 4u, 7u}) {  // (0, 0), (0, 1), (3, 1)
        const hw::Color c(static_cast<std::uint8_t>(src & 1u));
        if (t < 300 && mesh.can_send(src, c)) {
          mesh.send(src, c, Flit::make(pack_destination(3, 0), static_cast<std::uint32_t>(t * 8 + src), true, true),
                    now);
          ++out.sent;
        }
      }
      if (const std::uint64_t colors = mesh.visible(sink); t % 3 == 0 && colors != 0) {  // (one a cycle)
        const hw::Color c(static_cast<std::uint8_t>(__builtin_ctzll(colors)));
        out.popped.emplace_back(t, mesh.front(sink, c).payload);
        mesh.pop(sink, c, now);
      }
      mesh.write(now);
    }
    out.stalls = mesh.credit_stalls();
    out.ramp_stalls = mesh.link_counters(sink, index(Port::Ramp)).stalled;
    return out;
  };
  const Run lanes = run(true), own = run(false);
  EXPECT_EQ(lanes.sent, own.sent);
  EXPECT_TRUE(lanes.popped == own.popped);
  EXPECT_EQ(lanes.stalls, own.stalls);
  EXPECT_EQ(lanes.ramp_stalls, own.ramp_stalls);
  EXPECT_GT(lanes.ramp_stalls, 100u);  // the endpoint is the bottleneck
  EXPECT_GT(lanes.popped.size(), 100u);
}

TEST(Lanes, ADeadlockIsReportedWithTheStuckQueuesAsTheRoutersOwnSweepReportsIt) {
  if (!LaneRouters::kAvailable) GTEST_SKIP() << kNoLanes;
  auto run = [](bool lanes) {
    FabricConfig f = fabric(2);
    f.deadlock_timeout = sim::Cycle(20);
    Mesh mesh(f, MeshGeometry(4, 1, 0), expecting(lanes ? heavy(1) : ExpectedTraffic{}), nullptr);
    EXPECT_EQ(mesh.lanes(), lanes);
    std::string report;
    try {
      for (std::uint64_t t = 0; t < 500; ++t) {
        const sim::Cycle now(t);
        mesh.read(now);
        mesh.evaluate(now);
        if (mesh.can_send(0, hw::Color(0)))
          mesh.send(0, hw::Color(0), Flit::make(pack_destination(1, 0), static_cast<std::uint32_t>(t), true, true),
                    now);
        mesh.write(now);
      }
    } catch (const sim::SimulationError& e) {
      report = e.what();
    }
    return report;
  };
  const std::string report = run(true);
  ASSERT_FALSE(report.empty()) << "no deadlock reported";
  // 2 in the receive queue, 2 in (1, 0)'s west input, 2 in (0, 0)'s ramp input.
  EXPECT_NE(report.find("4 wavelet(s) in router queues"), std::string::npos) << report;
  EXPECT_NE(report.find("west input, color 0: 2/2"), std::string::npos) << report;
  EXPECT_NE(report.find("ramp input, color 0: 2/2"), std::string::npos) << report;
  EXPECT_NE(report.find("ramp: no credit"), std::string::npos) << report;
  EXPECT_NE(report.find("east: no credit"), std::string::npos) << report;
  EXPECT_EQ(report, run(false));
}

}  // namespace
}  // namespace wafersim::fabric::fabric_lanes_test
