// The mesh under static color routes, driven by scripted PEs through the ramp contract on
// the cycle engine: exact timing, flow control, multicast, color isolation, fairness,
// conservation, idle skipping, edge channels and the deadlock watchdog.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric/mesh.h"
#include "fabric/route_loader.h"
#include "sim/errors.h"
#include "sim/stats/formatters.h"
#include "tests/support/test_pes.h"

namespace wafersim::fabric::fabric_mesh_test {
namespace {

using hw::PeCoord;

FabricConfig config(std::uint32_t depth = 8, std::uint64_t hop = 1, std::uint64_t ramp = 1) {
  FabricConfig c;
  c.colors = 24;
  c.queue_depth = depth;
  c.hop_latency = sim::Cycle(hop);
  c.ramp_latency = sim::Cycle(ramp);
  c.edge_io_channels = 8;
  c.deadlock_timeout = sim::Cycle(1000);
  c.stats_detail = StatsDetail::Links;
  return c;
}

// A mesh, its engine and scripted PEs; routes from YAML text.
struct Rig {
  Rig(const FabricConfig& c, const std::string& routes, bool idle_skip = true, const char* name = "engine")
      : geometry(8, 8, c.edge_io_channels),
        engine(name, sim::EngineOptions{units::Frequency{1e9}, idle_skip, sim::Cycle::never()}),
        mesh(c, geometry, options(c, routes), &engine),
        pes(mesh, engine) {}
  MeshOptions options(const FabricConfig& c, const std::string& routes) const {
    MeshOptions o;
    o.routing = Routing::Static;
    o.routes = std::make_shared<RouteTable>(parse_routes(routes, "test-routes.yaml", geometry, c.colors));
    return o;
  }
  MeshGeometry geometry;
  sim::Engine engine;
  Mesh mesh;
  test::TestPes pes;
};

void run(sim::Engine& engine, std::uint64_t cycles = 0) {
  if (cycles)
    sc_core::sc_start(sc_core::sc_time(static_cast<double>(cycles), sc_core::SC_NS));
  else
    sc_core::sc_start();
  engine.rethrow_failure();
}

// PE (1, 1) to PE (5, 4) on color 0: east along row 1, then south along column 5: 7 hops.
const char* kLShape = R"(routes:
  - {color: 0, at: [1, 1], from: ramp, to: east}
  - {color: 0, x: 2..4, y: 1, from: west, to: east}
  - {color: 0, at: [5, 1], from: west, to: south}
  - {color: 0, x: 5, y: 2..3, from: north, to: south}
  - {color: 0, at: [5, 4], from: north, to: ramp}
)";

struct Timing {
  std::uint64_t hop, ramp;
};
class ZeroLoad : public ::testing::TestWithParam<Timing> {};

// docs/fabric.md: a wavelet sent down a ramp in cycle t over H hops is visible at the
// destination's ramp from t + ramp + H x hop + ramp. The receiving PE polls every cycle, so
// a simulator one cycle early or late fails the equality.
TEST_P(ZeroLoad, LatencyIsExactlyTwoRampsPlusHopsTimesHopLatency) {
  const Timing tm = GetParam();
  Rig rig(config(8, tm.hop, tm.ramp), kLShape);
  rig.pes.send({1, 1}, 0, 0xabcd, 10);
  rig.pes.poll_until(100);
  run(rig.engine);
  const auto& got = rig.pes.received({5, 4});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(rig.pes.sent_at({1, 1}), std::vector<std::uint64_t>{10});
  const std::uint64_t expected = 10 + 2 * tm.ramp + 7 * tm.hop;
  EXPECT_EQ(got[0].cycle, expected);
  EXPECT_NE(got[0].cycle, expected - 1);
  EXPECT_NE(got[0].cycle, expected + 1);
  EXPECT_EQ(got[0].payload, 0xabcdu);
  EXPECT_EQ(rig.pes.total_received(), 1u);
  // It sat one cycle in each of the 8 input queues it passed (ramp input and 7 hops).
  EXPECT_EQ(rig.mesh.occupancy_integral(), 8u);
  EXPECT_EQ(rig.mesh.forwarded(), 8u);
  EXPECT_EQ(rig.mesh.in_network(), 0u);
}

INSTANTIATE_TEST_SUITE_P(HopAndRamp, ZeroLoad,
                         ::testing::Values(Timing{1, 1}, Timing{2, 1}, Timing{1, 2}, Timing{3, 2}), [](const auto& p) {
                           return "hop" + std::to_string(p.param.hop) + "_ramp" + std::to_string(p.param.ramp);
                         });

// A stream pipelines at one wavelet per cycle when the queues hold two (a slot freed in
// cycle t is a credit from t + 1); with one slot per queue it runs at one every 2 cycles.
TEST(Mesh, CreditRoundTripSetsStreamThroughput) {
  Rig one(config(1), kLShape, true, "depth1");
  Rig two(config(2), kLShape, true, "depth2");
  for (Rig* rig : {&one, &two})
    for (std::uint32_t i = 0; i < 20; ++i) rig->pes.send({1, 1}, 0, i, 5);
  sc_core::sc_start();
  for (Rig* rig : {&one, &two}) {
    rig->engine.rethrow_failure();
    const std::uint64_t spacing = rig == &one ? 2 : 1;
    SCOPED_TRACE(spacing);
    const auto& got = rig->pes.received({5, 4});
    ASSERT_EQ(got.size(), 20u);
    for (std::uint32_t i = 0; i < 20; ++i) {
      EXPECT_EQ(got[i].payload, i);
      EXPECT_EQ(got[i].cycle, 5 + 9 + i * spacing) << i;
    }
  }
}

// A ramp refuses a color beyond the fabric's on every call that takes one, naming it.
TEST(Mesh, ARampRefusesAColorBeyondTheFabric) {
  Rig rig(config(), kLShape);
  hw::RampPort& ramp = rig.mesh.ramp({5, 4});
  const std::uint32_t colors = rig.mesh.colors();
  const hw::Color bad(static_cast<std::uint8_t>(colors));
  const std::string expected =
      "ramp: color " + std::to_string(colors) + " used, but the fabric has " + std::to_string(colors) + " colors";
  auto refuses = [&](const char* call, auto&& f) {
    try {
      f();
      ADD_FAILURE() << call << " took color " << colors;
    } catch (const std::logic_error& e) {
      EXPECT_EQ(e.what(), expected) << call;
    }
  };
  refuses("has", [&] { (void)ramp.has(bad); });
  refuses("front", [&] { (void)ramp.front(bad); });
  refuses("pop", [&] { ramp.pop(bad, sim::Cycle(0)); });
  refuses("can_send", [&] { (void)ramp.can_send(bad); });
  refuses("send", [&] { ramp.send(hw::Wavelet{1, bad, false}, sim::Cycle(0)); });
  EXPECT_FALSE(ramp.has(hw::Color(static_cast<std::uint8_t>(colors - 1))));
}

// Control and data wavelets interleaved on one color, drained one every 3 cycles so that
// they queue at the receiver: the ramp's control-front mask follows each new head (TestPes
// compares it with front().control in every cycle) and the order and kinds arrive intact.
TEST(Mesh, ControlFrontMaskFollowsTheHeadOfEachReceiveQueue) {
  Rig rig(config(), kLShape);
  const bool kinds[] = {false, true, true, false, false, true, false, true};
  for (std::uint32_t i = 0; i < std::size(kinds); ++i) rig.pes.send({1, 1}, 0, 100 + i, 0, kinds[i]);
  rig.pes.drain_every({5, 4}, 3);
  run(rig.engine);
  const auto& got = rig.pes.received({5, 4});
  ASSERT_EQ(got.size(), std::size(kinds));
  for (std::uint32_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].payload, 100 + i);
    EXPECT_EQ(got[i].control, kinds[i]) << i;
  }
  EXPECT_EQ(rig.mesh.ramp({5, 4}).visible(), 0u);
  EXPECT_EQ(rig.mesh.ramp({5, 4}).control_fronts(), 0u);
}

TEST(Mesh, MulticastDeliversExactlyOneCopyPerDestination) {
  // PE (0, 3) sends color 2 east along row 3 with a tap at every PE; at (3, 3) the route
  // also turns south down column 3.
  Rig rig(config(), R"(routes:
  - {color: 2, at: [0, 3], from: ramp, to: east}
  - {color: 2, x: 1..6, y: 3, from: west, to: [east, ramp]}
  - {color: 2, at: [3, 3], from: west, to: [east, south, ramp], replace: true}
  - {color: 2, at: [7, 3], from: west, to: ramp}
  - {color: 2, x: 3, y: 4..6, from: north, to: [south, ramp]}
  - {color: 2, at: [3, 7], from: north, to: ramp}
)");
  for (std::uint32_t i = 0; i < 50; ++i) rig.pes.send({0, 3}, 2, 1000 + i, 1);
  run(rig.engine);
  std::vector<PeCoord> dests;
  for (std::uint16_t x = 1; x < 8; ++x) dests.push_back({x, 3});
  for (std::uint16_t y = 4; y < 8; ++y) dests.push_back({3, y});
  for (const PeCoord d : dests) {
    SCOPED_TRACE(::testing::Message() << "(" << d.x << ", " << d.y << ")");
    const auto& got = rig.pes.received(d);
    ASSERT_EQ(got.size(), 50u);
    for (std::uint32_t i = 0; i < 50; ++i) EXPECT_EQ(got[i].payload, 1000 + i);
    const std::uint64_t hops = d.y == 3 ? d.x : 3 + (d.y - 3u);
    EXPECT_EQ(got[0].cycle, 1 + 2 + hops);  // the first copy travels at zero load
  }
  EXPECT_EQ(rig.pes.total_received(), 50 * dests.size());
  EXPECT_EQ(rig.mesh.delivered(), 50 * dests.size());
  EXPECT_EQ(rig.mesh.in_network(), 0u);
}

// Color 1's destination never consumes; color 0 shares every link with it and must still
// reach full rate once color 1 has filled its queues.
TEST(Mesh, ColorsAreIndependentVirtualChannels) {
  FabricConfig c = config(4);
  c.deadlock_timeout = sim::Cycle(100000);
  Rig rig(c, R"(routes:
  - {color: 0, at: [0, 0], from: ramp, to: east}
  - {color: 1, at: [0, 1], from: ramp, to: north}
  - {color: 1, at: [0, 0], from: south, to: east}
  - {color: [0, 1], x: 1..3, y: 0, from: west, to: east}
  - {color: [0, 1], at: [4, 0], from: west, to: ramp}
)");
  rig.pes.never_drain({4, 0}, 1);
  for (std::uint32_t i = 0; i < 300; ++i) {
    rig.pes.send({0, 0}, 0, i, 1);
    rig.pes.send({0, 1}, 1, i, 1);
  }
  run(rig.engine, 1000);
  const auto& got = rig.pes.received({4, 0});
  ASSERT_EQ(got.size(), 300u);  // every color-0 wavelet, no color-1 one
  for (std::uint32_t i = 0; i < 300; ++i) {
    EXPECT_EQ(got[i].color, 0);
    EXPECT_EQ(got[i].payload, i);
  }
  // Color 1 holds every slot on its path: its ramp queue at (0, 1), the input queues of
  // (0, 0) .. (4, 0) and the receive queue at (4, 0): 7 queues of 4. The rest never left.
  EXPECT_EQ(rig.mesh.in_network(), 6u * 4);
  EXPECT_EQ(rig.pes.sent_at({0, 1}).size(), 7u * 4);
  // Once color 1 is stuck, color 0 gets every cycle of the shared links.
  for (std::size_t i = 100; i < got.size(); ++i) EXPECT_EQ(got[i].cycle, got[i - 1].cycle + 1) << i;
}

// Two streams compete for one output at full load: round robin alternates them exactly.
TEST(Mesh, OutputArbitrationIsRoundRobin) {
  Rig rig(config(), R"(routes:
  - {color: 4, at: [2, 2], from: ramp, to: east}
  - {color: 5, at: [3, 1], from: ramp, to: south}
  - {color: 4, at: [3, 2], from: west, to: east}
  - {color: 5, at: [3, 2], from: north, to: east}
  - {color: [4, 5], at: [4, 2], from: west, to: east}
  - {color: [4, 5], at: [5, 2], from: west, to: ramp}
)");
  for (std::uint32_t i = 0; i < 200; ++i) {
    rig.pes.send({2, 2}, 4, i);
    rig.pes.send({3, 1}, 5, i);
  }
  run(rig.engine);
  const auto& got = rig.pes.received({5, 2});
  ASSERT_EQ(got.size(), 400u);
  std::map<int, std::uint32_t> next;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].payload, next[got[i].color]++);
    if (i >= 4 && i + 4 < got.size()) {
      EXPECT_NE(got[i].color, got[i - 1].color) << i;      // alternating while both are backlogged
      EXPECT_EQ(got[i].cycle, got[i - 1].cycle + 1) << i;  // one wavelet per link per cycle
    }
  }
}

// Two streams merge on one color (a router accepting it from two inputs) into a slow
// consumer: back-pressure reaches the senders, nothing is lost, each stream stays in order.
TEST(Mesh, ConservationAndOrderUnderBackPressure) {
  const char* routes = R"(routes:
  - {color: 3, at: [0, 2], from: ramp, to: east}
  - {color: 3, at: [1, 2], from: west, to: east}
  - {color: 3, at: [2, 0], from: ramp, to: south}
  - {color: 3, at: [2, 1], from: north, to: south}
  - {color: 3, at: [2, 2], from: [west, north], to: east}
  - {color: 3, x: 3..4, y: 2, from: west, to: east}
  - {color: 3, at: [5, 2], from: west, to: south}
  - {color: 3, x: 5, y: 3..4, from: north, to: south}
  - {color: 3, at: [5, 5], from: north, to: ramp}
  - {color: 9, at: [6, 6], from: ramp, to: west}
  - {color: 9, x: 1..5, y: 6, from: east, to: west}
  - {color: 9, at: [0, 6], from: east, to: ramp}
)";
  Rig rig(config(3), routes);
  rig.pes.drain_every({5, 5}, 3);
  for (std::uint32_t i = 0; i < 300; ++i) {
    rig.pes.send({0, 2}, 3, (1u << 16) | i);
    rig.pes.send({2, 0}, 3, (2u << 16) | i);
    rig.pes.send({6, 6}, 9, (3u << 16) | i);
  }
  run(rig.engine);
  EXPECT_GT(rig.pes.stalled_sends(), 0u);
  std::map<std::uint32_t, std::uint32_t> next;
  for (const PeCoord d : {PeCoord{5, 5}, PeCoord{0, 6}})
    for (const auto& w : rig.pes.received(d)) EXPECT_EQ(w.payload & 0xffff, next[w.payload >> 16]++);
  EXPECT_EQ(next[1], 300u);
  EXPECT_EQ(next[2], 300u);
  EXPECT_EQ(next[3], 300u);
  EXPECT_EQ(rig.pes.total_received(), 900u);
  EXPECT_EQ(rig.mesh.injected(), 900u);
  EXPECT_EQ(rig.mesh.delivered(), 900u);
  EXPECT_EQ(rig.mesh.in_network(), 0u);
}

// Runs both rigs to the end and checks that they give the same statistics and deliver the
// same wavelets in the same cycles everywhere.
void expect_same_run(Rig& skip, Rig& all) {
  sc_core::sc_start();
  skip.engine.rethrow_failure();
  all.engine.rethrow_failure();
  sim::stats::Group a(""), b("");
  skip.mesh.add_stats(a.group("fabric"));
  all.mesh.add_stats(b.group("fabric"));
  EXPECT_EQ(sim::stats::stats_file_json(a), sim::stats::stats_file_json(b));
  for (std::uint16_t x = 0; x < 8; ++x)
    for (std::uint16_t y = 0; y < 8; ++y) {
      const auto& ra = skip.pes.received({x, y});
      const auto& rb = all.pes.received({x, y});
      EXPECT_EQ(ra.size(), rb.size());
      for (std::size_t i = 0; i < std::min(ra.size(), rb.size()); ++i) {
        EXPECT_EQ(ra[i].cycle, rb[i].cycle);
        EXPECT_EQ(ra[i].payload, rb[i].payload);
      }
    }
}

// The same scenario with idle skipping on and off, in one simulation: identical results
// and statistics, with far less work when idle routers are skipped.
TEST(Mesh, IdleSkippingChangesNoResult) {
  const char* routes = R"(routes:
  - {color: 3, at: [0, 2], from: ramp, to: east}
  - {color: 3, x: 1..6, y: 2, from: west, to: [east, ramp]}
  - {color: 3, at: [7, 2], from: west, to: ramp}
  - {color: 8, at: [4, 7], from: ramp, to: north}
  - {color: 8, x: 4, y: 1..6, from: south, to: north}
  - {color: 8, at: [4, 0], from: south, to: ramp}
)";
  Rig skip(config(2), routes, true, "skip");
  Rig all(config(2), routes, false, "all");
  Rig slow(config(2, 2, 2), routes, true, "slow");  // wavelets queue from the read phase (the wheel)
  for (Rig* rig : {&skip, &all, &slow}) {
    rig->pes.drain_every({7, 2}, 2);
    for (std::uint32_t i = 0; i < 40; ++i) {
      rig->pes.send({0, 2}, 3, i, 3 + i * 7 % 11);
      rig->pes.send({4, 7}, 8, i, 500 + i);
    }
  }
  expect_same_run(skip, all);
  EXPECT_EQ(skip.pes.total_received(), 40u * 7 + 40u);
  EXPECT_LT(skip.mesh.router_evaluations() * 2, all.mesh.router_evaluations() + 1);
  EXPECT_LT(skip.engine.component_ticks(), all.engine.component_ticks());
}

// A stream multicast along a row to PEs that take a wavelet only every 25 cycles (as a
// weight stream feeding slow consumers): the queues fill and almost every router waits for
// a credit almost every cycle. Waiting routers sleep until a credit returns, so the work
// follows the wavelets moved, not the cycles; every statistic, read while they sleep and at
// the end, equals that of visiting every router in every cycle.
TEST(Mesh, RoutersWaitingForCreditSleepAndCountAsIfVisited) {
  const char* routes = R"(routes:
  - {color: 5, at: [0, 3], from: ramp, to: east}
  - {color: 5, x: 1..6, y: 3, from: west, to: [east, ramp]}
  - {color: 5, at: [7, 3], from: west, to: ramp}
  - {color: 6, at: [2, 0], from: ramp, to: south}
  - {color: 6, x: 2, y: 1..2, from: north, to: south}
  - {color: 6, at: [2, 3], from: north, to: ramp}
)";
  Rig skip(config(2), routes, true, "skip");
  Rig all(config(2), routes, false, "all");
  Rig slow(config(2, 2, 2), routes, true, "slow");  // wavelets queue from the read phase (the wheel)
  for (Rig* rig : {&skip, &all, &slow}) {
    for (std::uint16_t x = 1; x < 8; ++x) rig->pes.drain_every({x, 3}, 25);
    for (std::uint32_t i = 0; i < 60; ++i) {
      rig->pes.send({0, 3}, 5, i, 1 + i);
      if (i < 10) rig->pes.send({2, 0}, 6, 100 + i, 300 + i);
    }
  }
  auto counters = [](const Mesh& m) {
    std::vector<std::uint64_t> v;
    for (std::uint32_t r = 0; r < m.geometry().routers(); ++r)
      for (std::uint32_t p = 0; p < kPorts; ++p) {
        const LinkCounters l = m.link_counters(r, p);
        v.insert(v.end(), {l.forwarded, l.stalled, l.occupancy, l.queued});
        for (std::uint32_t c : {5u, 6u}) {
          const LinkCounters lc = m.link_counters(r, p, c);
          v.insert(v.end(), {lc.forwarded, lc.stalled, lc.occupancy, lc.queued});
        }
      }
    return v;
  };
  // Each input queue stamps its own occupancy integral, apart from its input's: the two
  // colors' add up to the input's.
  auto colors_add_up = [](const Mesh& m, std::uint64_t t) {
    std::uint64_t sum = 0;
    for (std::uint32_t r = 0; r < m.geometry().routers(); ++r)
      for (std::uint32_t p = 0; p < kPorts; ++p) {
        const std::uint64_t input = m.link_counters(r, p).occupancy;
        EXPECT_EQ(m.link_counters(r, p, 5).occupancy + m.link_counters(r, p, 6).occupancy, input)
            << "router " << r << " port " << p << " at " << t;
        sum += input;
      }
    return sum;
  };
  for (std::uint64_t t : {200u, 351u, 777u}) {  // mid-run, with routers asleep
    sc_core::sc_start(sc_core::sc_time(static_cast<double>(t), sc_core::SC_NS));
    EXPECT_GE(skip.mesh.in_network(), 5u) << t;
    EXPECT_EQ(counters(skip.mesh), counters(all.mesh)) << t;
    EXPECT_GT(colors_add_up(skip.mesh, t), 0u);
    EXPECT_GT(colors_add_up(slow.mesh, t), 0u);
  }
  expect_same_run(skip, all);
  EXPECT_EQ(counters(skip.mesh), counters(all.mesh));
  EXPECT_EQ(colors_add_up(skip.mesh, ~std::uint64_t{0}), skip.mesh.occupancy_integral());
  EXPECT_EQ(colors_add_up(slow.mesh, ~std::uint64_t{0}), slow.mesh.occupancy_integral());
  EXPECT_EQ(slow.pes.total_received(), 60u * 7 + 10u);
  EXPECT_EQ(skip.pes.total_received(), 60u * 7 + 10u);
  // About 1,500 cycles of back-pressure over 8 routers; visits: about one per wavelet moved.
  EXPECT_GT(skip.engine.now().count(), 1500u);
  EXPECT_GT(skip.mesh.credit_stalls(), 5000u);
  EXPECT_LT(skip.mesh.router_evaluations(), 2 * skip.mesh.forwarded());
}

// Per link and color statistics on a known path.
TEST(Mesh, LinkAndColorStatisticsCountThePath) {
  Rig rig(config(), kLShape);
  for (std::uint32_t i = 0; i < 3; ++i) rig.pes.send({1, 1}, 0, i, 1);
  run(rig.engine);
  sim::stats::Group root("");
  rig.mesh.add_stats(root.group("fabric"));
  const auto* fwd = root.find("fabric.link_color_forwarded");
  ASSERT_NE(fwd, nullptr);
  auto at = [&](std::uint16_t x, std::uint16_t y, Port p, std::uint32_t c) {
    return fwd->element((std::size_t{rig.geometry.router(x, y)} * kPorts + index(p)) * 24 + c);
  };
  double sum = 0;
  for (std::size_t i = 0; i < fwd->size(); ++i) sum += fwd->element(i);
  EXPECT_EQ(sum, 3 * 8.0);
  for (std::uint16_t x = 1; x <= 4; ++x) EXPECT_EQ(at(x, 1, Port::East, 0), 3.0);
  for (std::uint16_t y = 1; y <= 3; ++y) EXPECT_EQ(at(5, y, Port::South, 0), 3.0);
  EXPECT_EQ(at(5, 4, Port::Ramp, 0), 3.0);
  EXPECT_EQ(at(5, 4, Port::Ramp, 1), 0.0);
  EXPECT_EQ(root.find("fabric.wavelets_forwarded")->value(), 24.0);
  EXPECT_EQ(root.find("fabric.forwarded_by_color")->element(0), 24.0);
  EXPECT_EQ(root.find("fabric.forwarded_by_port")->element(index(Port::East)), 12.0);
  EXPECT_EQ(root.find("fabric.router_forwarded")->element(rig.geometry.router(5, 1)), 3.0);
  EXPECT_EQ(root.find("fabric.wavelets_delivered")->value(), 3.0);
  EXPECT_EQ(root.find("fabric.credit_stalls")->value(), 0.0);
  EXPECT_EQ(root.find("fabric.link_color_forwarded")->size(), 64u * 5 * 24);
}

// A cyclic route set that multicasts every revolution fills the ring and deadlocks; the
// watchdog stops the run with a report naming the stuck routers, ports and colors.
TEST(Mesh, DeadlockIsReportedWithTheStuckQueues) {
  Rig rig(config(4), R"(routes:
  - {color: 0, at: [0, 0], from: [ramp, south], to: [east, ramp]}
  - {color: 0, at: [1, 0], from: [ramp, west], to: [south, ramp]}
  - {color: 0, at: [1, 1], from: [ramp, north], to: [west, ramp]}
  - {color: 0, at: [0, 1], from: [ramp, east], to: [north, ramp]}
)");
  for (std::uint32_t i = 0; i < 100; ++i)
    for (const PeCoord pe : {PeCoord{0, 0}, PeCoord{1, 0}, PeCoord{1, 1}, PeCoord{0, 1}})
      rig.pes.send(pe, 0, 0x100 * (pe.y * 2 + pe.x) + i);
  try {
    run(rig.engine);
    FAIL() << "no deadlock reported";
  } catch (const sim::SimulationError& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.exit_code(), sim::kExitSimulation);
    EXPECT_NE(m.find("fabric deadlock at cycle"), std::string::npos) << m;
    EXPECT_NE(m.find("none has moved for 1000 cycles (fabric.deadlock_timeout = 1000 cycles)"), std::string::npos) << m;
    EXPECT_NE(m.find("cyclic wait on color 0"), std::string::npos) << m;
    for (const char* q : {"router (0, 0):", "router (1, 0):", "router (1, 1):", "router (0, 1):",
                          "south input, color 0: 4/4", "west input, color 0: 4/4", "north input, color 0: 4/4",
                          "east input, color 0: 4/4", "no credit, router (1, 0) west input, color 0 full"})
      EXPECT_NE(m.find(q), std::string::npos) << q << "\n" << m;
    EXPECT_NE(m.find("(0, 0) south -> (1, 0) west -> (1, 1) north -> (0, 1) east -> (0, 0) south"), std::string::npos)
        << m;
  }
}

TEST(Mesh, AWaveletOnAnUnroutedColorIsASimulationError) {
  Rig rig(config(), kLShape);
  rig.pes.send({1, 1}, 6, 7, 2);
  try {
    run(rig.engine);
    FAIL();
  } catch (const sim::SimulationError& e) {
    EXPECT_NE(std::string(e.what()).find("wavelet on color 6 (payload 0x00000007) reached router (1, 1) from its ramp "
                                         "port, but the route table has no route for color 6 there"),
              std::string::npos)
        << e.what();
  }
}

// Host traffic enters at the west edge of row 5, crosses to PE (3, 5); PE (6, 5) sends out
// through the east edge channel of the same row.
TEST(Mesh, EdgeChannelsCarryTrafficInAndOut) {
  struct Edge final : EdgeListener {
    std::vector<std::uint64_t> arrivals;
    void on_arrival(EdgeSide side, std::uint32_t ch, hw::Color c, sim::Cycle at) override {
      EXPECT_EQ(side, EdgeSide::East);
      EXPECT_EQ(ch, 5u);
      EXPECT_EQ(c.id(), 1);
      arrivals.push_back(at.count());
    }
    void on_credit(EdgeSide, std::uint32_t, hw::Color, sim::Cycle) override {}
  } edge;
  Rig rig(config(8, 2, 1), R"(routes:
  - {color: 1, at: [0, 5], from: west, to: east}
  - {color: 1, x: 1..2, y: 5, from: west, to: east}
  - {color: 1, at: [3, 5], from: west, to: ramp}
  - {color: 1, at: [6, 5], from: ramp, to: east}
  - {color: 1, at: [7, 5], from: west, to: east}
)");
  rig.mesh.set_edge_listener(&edge);
  hw::RampPort& west = rig.mesh.edge_channel(EdgeSide::West, 5);
  hw::RampPort& east = rig.mesh.edge_channel(EdgeSide::East, 5);
  ASSERT_TRUE(west.can_send(hw::Color(1)));
  west.send(hw::Wavelet{77, hw::Color(1), false}, sim::Cycle(0));
  rig.pes.send({6, 5}, 1, 88, 0);
  rig.pes.poll_until(50);
  run(rig.engine);
  ASSERT_EQ(rig.pes.received({3, 5}).size(), 1u);
  EXPECT_EQ(rig.pes.received({3, 5})[0].cycle, 0 + 1 + 3 * 2 + 1);
  EXPECT_EQ(rig.pes.received({3, 5})[0].payload, 77u);
  ASSERT_EQ(edge.arrivals, std::vector<std::uint64_t>{0 + 1 + 1 * 2 + 1});
  ASSERT_TRUE(east.has(hw::Color(1)));
  EXPECT_EQ(east.front(hw::Color(1)).payload, 88u);
}

// The ramp contract's logic errors, without an engine.
// The tracing counters (Mesh::link_counters) follow one wavelet cycle by cycle: sent down
// router (0, 0)'s ramp in cycle 0, granted east by (0, 0) in cycle 1, queued at (1, 0)'s west
// input from the end of cycle 1 (while it is still in the arrival register) and counted in
// that queue's occupancy in cycle 2, when (1, 0) forwards it.
TEST(Mesh, LinkCountersFollowAWaveletCycleByCycle) {
  FabricConfig c = config();
  c.stats_detail = StatsDetail::Totals;
  MeshGeometry g(4, 1, c.edge_io_channels);
  MeshOptions o;
  o.routing = Routing::XY;
  o.trace_counters = StatsDetail::Links;
  Mesh mesh(c, g, o, nullptr);
  ASSERT_TRUE(mesh.keeps_link_counters());
  ASSERT_TRUE(mesh.keeps_color_counters());
  const std::uint32_t r0 = g.router(0, 0), r1 = g.router(1, 0), r2 = g.router(2, 0);
  const std::uint32_t west = index(Port::West), east = index(Port::East), ramp = index(Port::Ramp);
  const hw::Color color(3);
  mesh.send(r0, color, Flit::make(pack_destination(3, 0), 1, true, true), sim::Cycle(0));
  auto tick = [&](std::uint64_t t) {
    mesh.read(sim::Cycle(t));
    mesh.evaluate(sim::Cycle(t));
    mesh.write(sim::Cycle(t));
  };
  tick(0);  // on the ramp
  EXPECT_EQ(mesh.link_counters(r0, ramp).queued, 0u);
  EXPECT_EQ(mesh.link_counters(r0, east).forwarded, 0u);
  tick(1);  // in (0, 0)'s ramp queue, granted east
  EXPECT_EQ(mesh.link_counters(r0, ramp).occupancy, 1u);
  EXPECT_EQ(mesh.link_counters(r0, ramp).queued, 0u);
  EXPECT_EQ(mesh.link_counters(r0, east).forwarded, 1u);
  EXPECT_EQ(mesh.link_counters(r0, east, 3).forwarded, 1u);
  EXPECT_EQ(mesh.link_counters(r1, west).queued, 1u);
  EXPECT_EQ(mesh.link_counters(r1, west, 3).queued, 1u);
  EXPECT_EQ(mesh.link_counters(r1, west, 2).queued, 0u);
  EXPECT_EQ(mesh.link_counters(r1, west).occupancy, 0u);
  tick(2);  // in (1, 0)'s west queue, granted east
  EXPECT_EQ(mesh.link_counters(r1, west).queued, 0u);
  EXPECT_EQ(mesh.link_counters(r1, west).occupancy, 1u);
  EXPECT_EQ(mesh.link_counters(r1, west, 3).occupancy, 1u);
  EXPECT_EQ(mesh.link_counters(r1, east).forwarded, 1u);
  EXPECT_EQ(mesh.link_counters(r2, west).queued, 1u);
  EXPECT_EQ(mesh.link_counters(r2, west).occupancy, 0u);
  EXPECT_EQ(mesh.occupancy_integral(), 2u);
}

TEST(Mesh, SendingWithoutCreditOrTwiceInACycleIsALogicError) {
  const MeshGeometry g(4, 4, 0);
  MeshOptions o;
  o.routing = Routing::XY;
  Mesh mesh(config(2), g, o, nullptr);
  hw::RampPort& ramp = mesh.ramp({1, 1});
  ramp.send(hw::Wavelet{pack_destination(2, 1), hw::Color(0), false}, sim::Cycle(0));
  EXPECT_THROW(ramp.send(hw::Wavelet{pack_destination(2, 1), hw::Color(0), false}, sim::Cycle(0)), std::logic_error);
  ramp.send(hw::Wavelet{pack_destination(2, 1), hw::Color(0), false}, sim::Cycle(1));
  EXPECT_FALSE(ramp.can_send(hw::Color(0)));
  EXPECT_TRUE(ramp.can_send(hw::Color(1)));
  EXPECT_THROW(ramp.send(hw::Wavelet{pack_destination(2, 1), hw::Color(0), false}, sim::Cycle(2)), std::logic_error);
  EXPECT_THROW(ramp.pop(hw::Color(0), sim::Cycle(2)), std::logic_error);
  EXPECT_THROW((void)ramp.has(hw::Color(30)), std::logic_error);
}

}  // namespace
}  // namespace wafersim::fabric::fabric_mesh_test
