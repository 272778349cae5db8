// The mesh swept in bands of rows on a thread team (sim/parallel/row_bands.h): both sweeps,
// XY packets and static routes with multicast, longer hops and ramps, edge channels, per-link
// color counters, idle skipping off, sleeping routers, a deadlock and repartitions in mid-run
// give the deliveries in the same order, the same results and the same statistics tree as one
// thread, at 2, 3, 4 and 8 threads (more threads than cores: slow, still exact).

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "fabric/lane_sweep.h"
#include "fabric/mesh.h"
#include "fabric/route_table.h"
#include "fabric/traffic/standalone.h"
#include "sim/errors.h"
#include "sim/parallel/row_bands.h"
#include "sim/parallel/team.h"
#include "sim/stats/formatters.h"
#include "sim/stats/stats.h"
#include "tests/support/traffic_results.h"

namespace wafersim::fabric::parallel_fabric_test {
namespace {

using traffic::StandaloneTraffic;
using traffic::TrafficGenerator;
using traffic::TrafficOptions;
using traffic::TrafficResult;

constexpr unsigned kThreads[] = {2, 3, 4, 8};

FabricConfig fabric(std::uint32_t depth = 4, StatsDetail detail = StatsDetail::Routers) {
  FabricConfig c;
  c.colors = 8;
  c.queue_depth = depth;
  c.edge_io_channels = 0;
  c.stats_detail = detail;
  c.deadlock_timeout = sim::Cycle(300);
  return c;
}

TrafficOptions load(const char* pattern, double rate, std::uint32_t packet = 1) {
  TrafficOptions o;
  o.pattern = pattern;
  o.rate = rate;
  o.packet_size = packet;
  o.warmup = 50;
  o.measure = 150;
  o.drain = 300;
  o.seed = 5;
  return o;
}

struct Outcome {
  TrafficResult result;
  std::vector<std::tuple<std::uint32_t, std::uint64_t, std::uint32_t, std::uint64_t, std::uint64_t>> deliveries;
  std::string stats;
  std::string error;
  bool lanes = false;
  std::uint32_t bands = 1;
  std::uint64_t rebalances = 0;
  std::uint64_t read_jobs = 0;
};

// A run on `threads` threads (1: no team). `before(traffic, bands)` runs once the mesh is built
// (repartitions in mid-run, for instance, by stepping it).
Outcome run(const FabricConfig& f, const MeshGeometry& g, MeshOptions m, const TrafficOptions& o, unsigned threads,
            const std::function<void(StandaloneTraffic&, sim::parallel::RowBands&)>& before = {}) {
  sim::parallel::Team team(threads);
  sim::parallel::RowBands bands(&team, g.height(), Mesh::kBandRows, threads);
  bands.set_rebalance(false);
  m.bands = &bands;
  StandaloneTraffic t(f, g, m, o);
  Outcome out;
  out.lanes = t.mesh().lanes();
  out.bands = bands.count();
  t.generator().set_observer([&out](const TrafficGenerator::Delivery& d) {
    out.deliveries.emplace_back(d.src, d.seq, d.color, d.created, d.ejected);
  });
  try {
    if (before) before(t, bands);
    out.result = t.run(20000);
  } catch (const sim::SimulationError& e) {
    out.error = e.what();
  }
  sim::stats::Group root("root");
  t.mesh().add_stats(root.group("fabric"));
  out.stats = sim::stats::to_json(root).dump();
  out.rebalances = bands.rebalances();
  out.read_jobs = t.mesh().read_jobs();
  return out;
}

// Deliveries in the same order (the sinks hear of arrivals in the order of the serial sweep),
// the same result and the same statistics.
void expect_same(const Outcome& serial, const Outcome& parallel, unsigned threads) {
  SCOPED_TRACE("threads " + std::to_string(threads));
  EXPECT_EQ(serial.error, parallel.error);
  test::expect_same_result(serial.result, parallel.result);
  EXPECT_TRUE(serial.deliveries == parallel.deliveries);
  EXPECT_EQ(serial.stats, parallel.stats);
  EXPECT_EQ(serial.lanes, parallel.lanes);
}

void expect_exact(const FabricConfig& f, const MeshGeometry& g, const MeshOptions& m, const TrafficOptions& o) {
  const Outcome serial = run(f, g, m, o, 1);
  ASSERT_FALSE(serial.deliveries.empty());
  for (const unsigned n : kThreads) {
    const Outcome parallel = run(f, g, m, o, n);
    EXPECT_EQ(parallel.bands, std::min(n, (g.height() + 7) / 8));
    expect_same(serial, parallel, n);
  }
}

MeshOptions xy(bool idle_skip = true) {
  MeshOptions m;
  m.routing = Routing::XY;
  m.idle_skip = idle_skip;
  return m;
}

TEST(ParallelFabric, RoutersOwnSweepUnderXyTrafficIsExact) {
  const MeshGeometry g(24, 32, 0);
  expect_exact(fabric(), g, xy(), load("uniform", 0.15));
  expect_exact(fabric(2), g, xy(), load("uniform", 0.6));  // saturated: credit stalls, sleeping routers
  expect_exact(fabric(), MeshGeometry(32, 32, 0), xy(), load("transpose", 0.1, 3));
}

// The routers' own sweep reads (deliveries into receive queues, freed slots, wavelets off the
// wheel) as a job of the bands in the cycles with enough due, each band its own rows, and on the
// caller's thread in the others; one thread never makes it a job.
TEST(ParallelFabric, ReadPhasesInBandsAreExact) {
  const MeshGeometry g(24, 32, 0);
  const TrafficOptions o = load("uniform", 0.4, 2);  // packets of two: not the lanes
  const Outcome serial = run(fabric(2), g, xy(), o, 1);
  EXPECT_FALSE(serial.lanes);
  EXPECT_EQ(serial.read_jobs, 0u);
  for (const unsigned n : kThreads) {
    const Outcome parallel = run(fabric(2), g, xy(), o, n);
    EXPECT_GT(parallel.read_jobs, 100u);
    EXPECT_LT(parallel.read_jobs, serial.result.cycles);
    expect_same(serial, parallel, n);
  }
}

TEST(ParallelFabric, PacketsOfSeveralWaveletsAndTornadoAreExact) {
  expect_exact(fabric(), MeshGeometry(16, 16, 0), xy(), load("tornado", 0.3, 4));
  expect_exact(fabric(1), MeshGeometry(13, 27, 0), xy(), load("hotspot", 0.2, 2));
}

TEST(ParallelFabric, LanesAreExact) {
  if (!LaneRouters::kAvailable) GTEST_SKIP() << "no vector lanes in this build";
  MeshOptions m = xy();
  ExpectedTraffic heavy;
  heavy.moves = LaneSweep::kMinMoves;
  heavy.single_wavelet_colors = 4;
  m.traffic = heavy;
  const Outcome serial = run(fabric(4, StatsDetail::Totals), MeshGeometry(20, 32, 0), m, load("uniform", 0.5), 1);
  ASSERT_TRUE(serial.lanes);
  for (const unsigned n : kThreads)
    expect_same(serial, run(fabric(4, StatsDetail::Totals), MeshGeometry(20, 32, 0), m, load("uniform", 0.5), n), n);
  expect_exact(fabric(4, StatsDetail::Totals), MeshGeometry(64, 24, 0), m, load("neighbor", 0.7));
}

TEST(ParallelFabric, WithoutIdleSkippingAndWithLinkColorCountersIsExact) {
  expect_exact(fabric(), MeshGeometry(8, 24, 0), xy(false), load("uniform", 0.3));
  expect_exact(fabric(3, StatsDetail::Links), MeshGeometry(6, 32, 0), xy(), load("bit-complement", 0.25));
}

TEST(ParallelFabric, LongerHopsAndRampsAreExact) {
  FabricConfig f = fabric();
  f.hop_latency = sim::Cycle(3);
  f.ramp_latency = sim::Cycle(2);
  expect_exact(f, MeshGeometry(16, 24, 0), xy(), load("uniform", 0.2));
  f.hop_latency = sim::Cycle(2);
  expect_exact(f, MeshGeometry(16, 32, 0), xy(false), load("shuffle", 0.2, 2));
}

// Columns multicast down across every band boundary, a row to an east edge channel.
std::shared_ptr<RouteTable> column_routes(const MeshGeometry& g) {
  auto t = std::make_shared<RouteTable>(g.width(), g.height(), 8);
  for (std::uint32_t x = 0; x < g.width(); x += 3)
    for (std::uint32_t y = 0; y < g.height(); ++y) {
      RouteEntry e;
      e.accept = y == 0 ? bit(Port::Ramp) : bit(Port::North);
      e.forward =
          static_cast<std::uint8_t>((y + 1 < g.height() ? bit(Port::South) : 0) | (y > 0 ? bit(Port::Ramp) : 0));
      t->set(g.router(x, y), 2 + x % 3, e);
    }
  const std::uint32_t row = g.channel_row(0);
  for (std::uint32_t x = 0; x < g.width(); ++x) {
    RouteEntry e;
    e.accept = x == 1 ? bit(Port::Ramp) : bit(Port::West);
    e.forward = bit(Port::East);
    if (x >= 1) t->set(g.router(x, row), 7, e);
  }
  return t;
}

TEST(ParallelFabric, StaticMulticastAcrossBandsAndEdgeChannelsAreExact) {
  FabricConfig f = fabric();
  f.edge_io_channels = 2;
  const MeshGeometry g(10, 40, 2);
  MeshOptions m;
  m.routing = Routing::Static;
  m.routes = column_routes(g);
  TrafficOptions o = load("uniform", 0.4);
  expect_exact(f, g, m, o);
  m.idle_skip = false;
  expect_exact(f, g, m, o);
}

// A ring of four routers across the boundary of rows 7 and 8 fills up and deadlocks: the same
// report, naming the same queues, at any thread count.
TEST(ParallelFabric, ADeadlockAcrossABandBoundaryIsReportedTheSame) {
  const MeshGeometry g(4, 16, 0);
  auto t = std::make_shared<RouteTable>(4, 16, 8);
  auto set = [&](std::uint32_t x, std::uint32_t y, std::uint8_t from, std::uint8_t to) {
    t->set(g.router(x, y), 0, RouteEntry{static_cast<std::uint8_t>(from | bit(Port::Ramp)), to});
  };
  set(1, 7, bit(Port::South), static_cast<std::uint8_t>(bit(Port::East) | bit(Port::Ramp)));
  set(2, 7, bit(Port::West), static_cast<std::uint8_t>(bit(Port::South) | bit(Port::Ramp)));
  set(2, 8, bit(Port::North), static_cast<std::uint8_t>(bit(Port::West) | bit(Port::Ramp)));
  set(1, 8, bit(Port::East), static_cast<std::uint8_t>(bit(Port::North) | bit(Port::Ramp)));
  MeshOptions m;
  m.routing = Routing::Static;
  m.routes = t;
  TrafficOptions o = load("uniform", 1.0);
  const Outcome serial = run(fabric(2), g, m, o, 1);
  ASSERT_NE(serial.error.find("fabric deadlock at cycle"), std::string::npos) << serial.error;
  ASSERT_NE(serial.error.find("cyclic wait on color 0"), std::string::npos) << serial.error;
  for (const unsigned n : {2u, 4u}) {
    const Outcome parallel = run(fabric(2), g, m, o, n);
    EXPECT_EQ(parallel.bands, 2u);
    expect_same(serial, parallel, n);
  }
}

// Bands moved while wavelets are in flight and routers sleep: nothing changes but who sweeps.
TEST(ParallelFabric, RepartitionsInMidRunChangeNothing) {
  const MeshGeometry g(16, 48, 0);
  auto moving = [](StandaloneTraffic& t, sim::parallel::RowBands& bands) {
    const std::vector<std::vector<std::uint32_t>> plans = {
        {0, 8, 16, 48}, {0, 32, 40, 48}, {0, 8, 40, 48}, {0, 16, 24, 48}};
    for (const auto& plan : plans) {
      t.step(37);
      if (bands.count() == 3) bands.repartition(plan);
    }
  };
  for (const std::uint32_t packet : {1u, 2u})  // the lanes, the routers' own sweep (whose reads are in bands)
    for (const bool idle_skip : {true, false}) {
      const TrafficOptions o = load("uniform", 0.45, packet);
      const Outcome serial = run(fabric(2), g, xy(idle_skip), o, 1);
      const Outcome parallel = run(fabric(2), g, xy(idle_skip), o, 3, moving);
      EXPECT_EQ(parallel.rebalances, 4u);
      EXPECT_EQ(parallel.lanes, packet == 1 && LaneRouters::kAvailable);
      if (!parallel.lanes) {
        EXPECT_GT(parallel.read_jobs, 0u);
      }
      expect_same(serial, parallel, 3);
    }
}

// Rows [y0, y1) each a source at x = 0 multicasting east to every ramp of its row.
std::shared_ptr<RouteTable> busy_rows(const MeshGeometry& g, std::uint32_t y0, std::uint32_t y1) {
  auto t = std::make_shared<RouteTable>(g.width(), g.height(), 8);
  for (std::uint32_t y = y0; y < y1; ++y)
    for (std::uint32_t x = 0; x < g.width(); ++x) {
      RouteEntry e;
      e.accept = x == 0 ? bit(Port::Ramp) : bit(Port::West);
      e.forward = static_cast<std::uint8_t>((x + 1 < g.width() ? bit(Port::East) : 0) | (x > 0 ? bit(Port::Ramp) : 0));
      t->set(g.router(x, y), 1, e);
    }
  return t;
}

// The bands follow the work: traffic confined to the bottom rows squeezes the bands there;
// the same bands, given a mesh busy in its top rows, move up. Both runs are the one-thread runs.
TEST(ParallelFabric, BandsFollowABusyRegion) {
  const MeshGeometry g(16, 64, 0);
  TrafficOptions o = load("uniform", 0.5);
  o.measure = 2000;
  sim::parallel::Team team(4);
  sim::parallel::RowBands bands(&team, g.height(), Mesh::kBandRows, 4);
  for (const bool bottom : {true, false}) {
    MeshOptions m;
    m.routing = Routing::Static;
    m.routes = bottom ? busy_rows(g, 48, 64) : busy_rows(g, 0, 16);
    const Outcome serial = run(fabric(), g, m, o, 1);
    m.bands = &bands;
    StandaloneTraffic t(fabric(), g, m, o);
    Outcome parallel;
    t.generator().set_observer([&parallel](const TrafficGenerator::Delivery& d) {
      parallel.deliveries.emplace_back(d.src, d.seq, d.color, d.created, d.ejected);
    });
    parallel.result = t.run(20000);
    sim::stats::Group root("root");
    t.mesh().add_stats(root.group("fabric"));
    parallel.stats = sim::stats::to_json(root).dump();
    expect_same(serial, parallel, 4);
    // Two bands of one granule each over the 16 busy rows, the others beside them.
    if (bottom) {
      EXPECT_EQ(bands.first_row(2), 48u);
      EXPECT_EQ(bands.first_row(3), 56u);
    } else {
      EXPECT_EQ(bands.first_row(1), 8u);
      EXPECT_EQ(bands.first_row(2), 16u);
    }
  }
  EXPECT_GE(bands.rebalances(), 2u);
}

}  // namespace
}  // namespace wafersim::fabric::parallel_fabric_test
