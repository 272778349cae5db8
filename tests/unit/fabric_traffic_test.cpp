// Synthetic traffic, run without SystemC (fabric/traffic/standalone.h): patterns, Bernoulli
// injection, exact zero-load packet latency, wormhole order, conservation, determinism and
// saturation against the analytic bounds.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "fabric/traffic/pattern.h"
#include "fabric/traffic/standalone.h"
#include "sim/errors.h"
#include "tests/support/traffic_results.h"

namespace wafersim::fabric::traffic::fabric_traffic_test {
namespace {

FabricConfig fabric(std::uint32_t depth = 8, std::uint64_t hop = 1, std::uint64_t ramp = 1) {
  FabricConfig c;
  c.colors = 24;
  c.queue_depth = depth;
  c.hop_latency = sim::Cycle(hop);
  c.ramp_latency = sim::Cycle(ramp);
  c.edge_io_channels = 0;
  c.stats_detail = StatsDetail::Totals;
  return c;
}

MeshOptions xy() {
  MeshOptions o;
  o.routing = Routing::XY;
  return o;
}

TrafficResult run(std::uint32_t k, TrafficOptions o, const FabricConfig& f = fabric()) {
  StandaloneTraffic t(f, MeshGeometry(k, k, 0), xy(), o);
  return t.run();
}

using test::expect_same_result;

TEST(Patterns, PermutationsOnAnEightByEightMesh) {
  SplitMix64 rng(1);
  auto d = [&](const char* name, std::uint32_t x, std::uint32_t y) {
    const std::uint32_t r = Pattern::make(name, 8, 8).destination(y * 8 + x, rng);
    return std::make_pair(r % 8, r / 8);
  };
  using P = std::pair<std::uint32_t, std::uint32_t>;
  EXPECT_EQ(d("transpose", 2, 5), P(5, 2));
  EXPECT_EQ(d("transpose", 3, 3), P(3, 3));
  EXPECT_EQ(d("bit-complement", 1, 6), P(6, 1));
  // Node 0b001'101 (x 5, y 1) reversed over 6 bits is 0b101'100 (x 4, y 5).
  EXPECT_EQ(d("bit-reverse", 5, 1), P(4, 5));
  // Shuffle rotates the 6 index bits left: 0b100'011 (x 3, y 4) -> 0b000'111 (x 7, y 0).
  EXPECT_EQ(d("shuffle", 3, 4), P(7, 0));
  EXPECT_EQ(d("tornado", 6, 1), P(1, 4));  // +3 mod 8 in each dimension
  EXPECT_EQ(d("neighbor", 7, 2), P(0, 3));
}

TEST(Patterns, UniformNeverPicksTheSourceAndCoversTheRest) {
  const Pattern p = Pattern::make("uniform", 4, 4);
  SplitMix64 rng(7);
  std::map<std::uint32_t, int> hits;
  for (int i = 0; i < 15000; ++i) ++hits[p.destination(5, rng)];
  EXPECT_EQ(hits.count(5), 0u);
  EXPECT_EQ(hits.size(), 15u);
  for (const auto& [dst, n] : hits) EXPECT_NEAR(n, 1000, 120) << dst;
}

TEST(Patterns, HotspotSendsTheRequestedShareToTheHotRouter) {
  const Pattern p = Pattern::make("hotspot", 8, 8, hw::PeCoord{2, 3}, 0.25);
  SplitMix64 rng(3);
  int hot = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) hot += p.destination(0, rng) == 3 * 8 + 2;
  // 25% directly, plus the uniform share 0.75 / 63.
  EXPECT_NEAR(hot / static_cast<double>(n), 0.25 + 0.75 / 63, 0.01);
}

TEST(Patterns, ImpossiblePatternsAreInputErrors) {
  EXPECT_THROW(Pattern::make("transpose", 8, 4), sim::InputError);
  EXPECT_THROW(Pattern::make("bit-reverse", 6, 6), sim::InputError);
  EXPECT_THROW(Pattern::make("hotspot", 8, 8, hw::PeCoord{8, 0}), sim::InputError);
  try {
    Pattern::make("tornade", 8, 8);
    FAIL();
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'tornado'?"), std::string::npos) << e.what();
  }
}

TEST(Injection, OfferedLoadMatchesTheRate) {
  TrafficOptions o;
  o.rate = 0.3;
  o.packet_size = 3;
  o.warmup = 200;
  o.measure = 4000;
  const TrafficResult r = run(8, o);
  EXPECT_NEAR(r.offered, 0.3, 0.01);
  EXPECT_NEAR(r.accepted, 0.3, 0.01);
  EXPECT_TRUE(r.drained);
}

struct Timing {
  std::uint64_t hop, ramp;
};
class PacketZeroLoad : public ::testing::TestWithParam<Timing> {};

// docs/fabric.md: a packet of L wavelets over H hops, alone in the fabric, is ejected (its
// tail popped at the destination) exactly 2 x ramp + H x hop + L - 1 cycles after its
// creation. Packets are spaced so none meets another.
TEST_P(PacketZeroLoad, LatencyIsExact) {
  const Timing tm = GetParam();
  TrafficOptions o;
  o.rate = 0;
  o.warmup = 0;
  o.measure = 1;
  StandaloneTraffic t(fabric(8, tm.hop, tm.ramp), MeshGeometry(8, 8, 0), xy(), o);
  struct Case {
    hw::PeCoord src, dst;
    std::uint32_t size;
  };
  const std::vector<Case> cases = {{{1, 1}, {6, 5}, 1}, {{1, 1}, {6, 5}, 4},  {{7, 0}, {0, 7}, 1}, {{7, 0}, {0, 7}, 9},
                                   {{3, 3}, {3, 3}, 2}, {{0, 4}, {5, 4}, 16}, {{4, 6}, {4, 1}, 3}};
  std::map<std::uint64_t, std::uint64_t> expected;  // created -> ejected
  std::uint64_t at = 3;
  for (const Case& c : cases) {
    t.generator().add_packet(c.src, c.dst, c.size, sim::Cycle(at));
    const std::uint64_t hops = static_cast<std::uint64_t>(std::abs(c.src.x - c.dst.x) + std::abs(c.src.y - c.dst.y));
    expected[at] = at + 2 * tm.ramp + hops * tm.hop + c.size - 1;
    at += 200;
  }
  std::map<std::uint64_t, std::uint64_t> got;
  t.generator().set_observer([&](const TrafficGenerator::Delivery& d) { got[d.created] = d.ejected; });
  const TrafficResult r = t.run(100000);
  ASSERT_TRUE(r.drained);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(r.packets, cases.size());
}

INSTANTIATE_TEST_SUITE_P(HopAndRamp, PacketZeroLoad,
                         ::testing::Values(Timing{1, 1}, Timing{2, 1}, Timing{1, 3}, Timing{4, 2}), [](const auto& p) {
                           return "hop" + std::to_string(p.param.hop) + "_ramp" + std::to_string(p.param.ramp);
                         });

// Multi-wavelet packets on several colors under load: the generator checks every ejected
// wavelet (right destination, in order within its packet, packets never interleaved on a
// color) and throws otherwise; here packets between a pair also arrive in creation order
// per color, and every packet created arrives exactly once.
TEST(Wormhole, PacketsArriveWholeInOrderAndExactlyOnce) {
  TrafficOptions o;
  o.rate = 0;
  o.warmup = 0;
  o.measure = 1;
  StandaloneTraffic t(fabric(4), MeshGeometry(8, 8, 0), xy(), o);
  SplitMix64 rng(11);
  std::uint64_t wavelets = 0;
  const std::uint32_t packets = 3000;
  for (std::uint32_t i = 0; i < packets; ++i) {
    const auto src = static_cast<std::uint16_t>(rng.below(64)), dst = static_cast<std::uint16_t>(rng.below(64));
    const std::uint32_t size = 1 + rng.below(6);
    wavelets += size;
    t.generator().add_packet({static_cast<std::uint16_t>(src % 8), static_cast<std::uint16_t>(src / 8)},
                             {static_cast<std::uint16_t>(dst % 8), static_cast<std::uint16_t>(dst / 8)}, size,
                             sim::Cycle(i / 8));
  }
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint64_t> last_seq;
  std::set<std::pair<std::uint32_t, std::uint64_t>> seen;
  t.generator().set_observer([&](const TrafficGenerator::Delivery& d) {
    EXPECT_TRUE(seen.insert({d.src, d.seq}).second) << "delivered twice";
    auto key = std::make_tuple(d.src, d.dst, d.color);
    auto it = last_seq.find(key);
    if (it != last_seq.end()) {
      EXPECT_GT(d.seq, it->second) << "overtaken on one color";
    }
    last_seq[key] = d.seq;
  });
  const TrafficResult r = t.run(1000000);
  EXPECT_TRUE(r.drained);
  EXPECT_EQ(seen.size(), packets);
  EXPECT_EQ(t.generator().ejected_wavelets(), wavelets);
  EXPECT_EQ(t.generator().generated_wavelets(), wavelets);
  EXPECT_TRUE(t.mesh().idle());
  EXPECT_EQ(t.mesh().injected(), wavelets);
  EXPECT_EQ(t.mesh().delivered(), wavelets);
}

TEST(Traffic, SameSeedSameResultOtherSeedOtherResult) {
  TrafficOptions o;
  o.rate = 0.35;
  o.warmup = 300;
  o.measure = 1500;
  const TrafficResult a = run(8, o), b = run(8, o);
  o.seed = 2;
  const TrafficResult c = run(8, o);
  expect_same_result(a, b);
  EXPECT_NE(a.latency_avg, c.latency_avg);
}

TEST(Traffic, NoIdleSkipGivesTheSameResult) {
  TrafficOptions o;
  o.rate = 0.05;
  o.packet_size = 2;
  o.warmup = 100;
  o.measure = 1000;
  MeshOptions skip = xy(), all = xy();
  all.idle_skip = false;
  StandaloneTraffic a(fabric(), MeshGeometry(8, 8, 0), skip, o);
  StandaloneTraffic b(fabric(), MeshGeometry(8, 8, 0), all, o);
  const TrafficResult ra = a.run(), rb = b.run();
  expect_same_result(ra, rb);
  EXPECT_EQ(a.mesh().forwarded(), b.mesh().forwarded());
  EXPECT_EQ(a.mesh().occupancy_integral(), b.mesh().occupancy_integral());
  EXPECT_LT(a.mesh().router_evaluations(), b.mesh().router_evaluations());
}

// Without an observer a single-wavelet packet carries its creation cycle and measured mark in
// its tag and the sink reads no record; with one, every packet keeps its record. The
// measurement must not tell them apart: warm-up and drain packets (unmeasured) included, and
// scripted packets (always measured) among the random ones.
TEST(Traffic, PacketsWithoutRecordsMeasureAsThoseWithRecords) {
  TrafficOptions o;
  o.rate = 0.3;
  o.warmup = 200;
  o.measure = 600;
  auto once = [&](bool observe) {
    StandaloneTraffic t(fabric(), MeshGeometry(8, 8, 0), xy(), o);
    t.generator().add_packet({0, 0}, {7, 7}, 1, sim::Cycle(50));  // in the warm-up, measured all the same
    t.generator().add_packet({7, 0}, {0, 7}, 1, sim::Cycle(700));
    std::uint64_t seen = 0;
    if (observe) t.generator().set_observer([&](const TrafficGenerator::Delivery&) { ++seen; });
    const TrafficResult r = t.run();
    EXPECT_EQ(seen, observe ? t.generator().ejected_wavelets() : 0u);
    return std::make_pair(r, t.generator().ejected_wavelets());
  };
  const auto [with, with_ejected] = once(true);
  const auto [without, without_ejected] = once(false);
  EXPECT_EQ(without_ejected, with_ejected);
  ASSERT_TRUE(with.drained);
  expect_same_result(without, with);
}

TEST(Traffic, AnObserverSetAfterTheFirstPacketIsALogicError) {
  TrafficOptions o;
  o.rate = 0.5;
  StandaloneTraffic t(fabric(), MeshGeometry(4, 4, 0), xy(), o);
  t.generator().set_observer([](const TrafficGenerator::Delivery&) {});  // before: fine
  t.step(20);
  ASSERT_GT(t.generator().generated_wavelets(), 0u);
  EXPECT_THROW(t.generator().set_observer([](const TrafficGenerator::Delivery&) {}), std::logic_error);
}

// A single-wavelet packet that finds its queue empty and its output free is granted on
// arrival without passing through the queue (Mesh::bypassed); per-link color counters turn
// that off. Both must give the same deliveries, cycle for cycle, and the same counters, also
// with shallow queues where credits run out.
TEST(Traffic, GrantOnArrivalGivesTheSameDeliveriesAsTheQueues) {
  for (const std::uint32_t depth : {2u, 8u}) {
    TrafficOptions o;
    o.rate = 0.3;
    o.warmup = 100;
    o.measure = 1500;
    MeshOptions bypass = xy(), queues = xy();
    bypass.traffic = ExpectedTraffic{};  // (the routers' own sweep: the lanes have no grant on arrival)
    queues.trace_counters = StatsDetail::Links;
    StandaloneTraffic a(fabric(depth), MeshGeometry(8, 8, 0), bypass, o);
    StandaloneTraffic b(fabric(depth), MeshGeometry(8, 8, 0), queues, o);
    using D = std::tuple<std::uint32_t, std::uint64_t, std::uint32_t, std::uint64_t, std::uint64_t>;
    std::vector<D> da, db;
    a.generator().set_observer(
        [&](const TrafficGenerator::Delivery& d) { da.emplace_back(d.src, d.seq, d.color, d.created, d.ejected); });
    b.generator().set_observer(
        [&](const TrafficGenerator::Delivery& d) { db.emplace_back(d.src, d.seq, d.color, d.created, d.ejected); });
    a.run();
    b.run();
    EXPECT_GT(a.mesh().bypassed(), a.mesh().forwarded() / 4) << "depth " << depth;
    EXPECT_EQ(b.mesh().bypassed(), 0u);
    if (depth == 2) {
      EXPECT_GT(a.mesh().credit_stalls(), 0u);
    }
    EXPECT_GT(da.size(), 1000u);
    EXPECT_TRUE(da == db) << "depth " << depth;
    EXPECT_EQ(a.mesh().forwarded(), b.mesh().forwarded());
    EXPECT_EQ(a.mesh().credit_stalls(), b.mesh().credit_stalls());
    EXPECT_EQ(a.mesh().occupancy_integral(), b.mesh().occupancy_integral());
  }
}

// The saturation point: the largest offered load (bisection, to < 1%) at which the
// average latency of the measured packets stays within 3 x the zero-load latency (the
// usual definition; a flow beyond its bottleneck's capacity queues without bound and
// drives the average up). `lo` must be sustained, `hi` not.
double saturation(std::uint32_t k, const char* pattern, double lo, double hi) {
  auto latency = [&](double rate) {
    TrafficOptions o;
    o.pattern = pattern;
    o.rate = rate;
    o.warmup = 1000;
    o.measure = 3000;
    o.drain = 20000;
    const TrafficResult r = run(k, o);
    return r.drained ? r.latency_avg : 1e30;
  };
  const double zero_load = latency(0.005);
  for (int i = 0; i < 8; ++i) {
    const double mid = (lo + hi) / 2;
    (latency(mid) <= 3 * zero_load ? lo : hi) = mid;
  }
  return lo;
}

TEST(Saturation, UniformReachesEightyPercentOfTheBisectionBound) {
  for (std::uint32_t k : {8u, 16u}) {
    const double bound = 4.0 / k;
    // Offered at the bound: the accepted throughput is what the network can carry.
    TrafficOptions o;
    o.rate = bound;
    o.warmup = 1000;
    o.measure = 2000;
    o.drain = 0;
    const double accepted = run(k, o).accepted;
    const double sat = saturation(k, "uniform", 0.5 * bound, 1.05 * bound);
    std::printf(
        "uniform %ux%u (1-wavelet packets, 4 colors, depth 8): saturation %.4f, accepted at the bound "
        "%.4f; bisection bound 4/k = %.4f (%.0f%%)\n",
        k, k, sat, accepted, bound, 100 * sat / bound);
    EXPECT_GE(sat, 0.8 * bound) << k;
    EXPECT_GE(accepted, 0.8 * bound) << k;
    EXPECT_LE(accepted, bound) << k;
  }
}

TEST(Saturation, TransposeSaturatesNearItsChannelLoadBound) {
  // Under XY routing the busiest row channel carries 7 sources' traffic on 8 x 8: 1/7.
  const double bound = 1.0 / 7;
  const double sat = saturation(8, "transpose", 0.05, 0.3);
  std::printf("transpose 8x8 (XY): saturation %.4f; channel-load bound 1/7 = %.4f (%.0f%%)\n", sat, bound,
              100 * sat / bound);
  EXPECT_GE(sat, 0.85 * bound);
  EXPECT_LE(sat, 1.03 * bound);
}

// Static routes: each PE whose route accepts a color from its ramp is a source; a
// multicast counts one ejection per copy; the run ends when the fabric is empty.
TEST(StaticTraffic, MulticastCopiesAreEjectedAndTheFabricDrains) {
  const MeshGeometry g(8, 8, 0);
  MeshOptions m;
  m.routing = Routing::Static;
  auto table = std::make_shared<RouteTable>(8, 8, 24);
  for (std::uint32_t x = 0; x < 8; ++x) {
    RouteEntry e;
    e.accept = x == 0 ? bit(Port::Ramp) : bit(Port::West);
    e.forward = static_cast<std::uint8_t>((x < 7 ? bit(Port::East) : 0) | (x > 0 ? bit(Port::Ramp) : 0));
    table->set(g.router(x, 2), 5, e);
  }
  m.routes = table;
  TrafficOptions o;
  o.rate = 0.5;
  o.warmup = 100;
  o.measure = 1000;
  StandaloneTraffic t(fabric(), g, m, o);
  std::uint64_t copies = 0;
  t.generator().set_observer([&](const TrafficGenerator::Delivery& d) {
    EXPECT_EQ(d.src, g.router(0, 2));
    EXPECT_EQ(d.dst / 8, 2u);
    EXPECT_EQ(d.ejected - d.created, 2 + d.dst % 8);  // zero load: the only source
    ++copies;
  });
  const TrafficResult r = t.run(100000);
  EXPECT_TRUE(r.drained);
  EXPECT_EQ(t.generator().sources(), 1u);
  EXPECT_EQ(copies, 7 * t.generator().generated_wavelets());
  EXPECT_TRUE(t.mesh().idle());
}

}  // namespace
}  // namespace wafersim::fabric::traffic::fabric_traffic_test
