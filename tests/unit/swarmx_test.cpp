// SwarmX: broadcast and reduction timing through a two-level tree equals the formulas of
// docs/swarmx.md to the picosecond (and not one picosecond earlier), back-pressure with one
// buffer slot, FP32 sums in the documented order, and per-node statistics.

#include <gtest/gtest.h>

#include <systemc>

#include <cstring>
#include <memory>
#include <vector>

#include "memoryx/reference_optimizer.h"
#include "sim/stats/stats.h"
#include "swarmx/swarmx.h"
#include "tests/support/chunk_modules.h"

namespace wafersim::swarmx::swarmx_test {
namespace {
using sim::Picos;
using test::ChunkSink;
using test::ChunkSource;
using test::make_chunks;

constexpr std::uint64_t kChunk = 64 * 1024;

SwarmXConfig config(Fanout fanout = Fanout::OneToFour) {
  SwarmXConfig c;
  c.fanout = fanout;
  c.port_bandwidth = units::Bandwidth{100e9};
  c.reduce_throughput = units::Bandwidth{100e9};
  c.node_latency = units::Duration{1e-6};
  c.planes = 1;
  c.chunk_size = units::DataSize::from_bytes(kChunk);
  c.buffer_chunks = 4;
  return c;
}

// A tree with a source at the root and at every endpoint, a sink at the root and at every endpoint.
struct Bench {
  sim::stats::Group stats{"root"};
  std::unique_ptr<SwarmX> tree;
  std::unique_ptr<ChunkSource> root_source;
  std::unique_ptr<ChunkSink> root_sink;
  std::vector<std::unique_ptr<ChunkSource>> leaf_sources;
  std::vector<std::unique_ptr<ChunkSink>> leaf_sinks;

  // `down`: chunks per plane sent from the root; `up(e)`: chunks per plane sent by endpoint e.
  Bench(const SwarmXConfig& c, std::uint32_t endpoints, std::vector<std::vector<sim::stream::Chunk>> down,
        const std::function<std::vector<std::vector<sim::stream::Chunk>>(std::uint32_t)>& up, bool functional,
        std::uint32_t sink_capacity = 4) {
    tree = std::make_unique<SwarmX>("swarmx", c, endpoints, c.port_bandwidth, functional, stats);
    down.resize(c.planes);
    root_source = std::make_unique<ChunkSource>("root_source", c.port_bandwidth, down);
    root_sink = std::make_unique<ChunkSink>("root_sink", c.planes, sink_capacity);
    for (std::uint32_t e = 0; e < endpoints; ++e) {
      auto chunks = up(e);
      chunks.resize(c.planes);
      leaf_sources.push_back(
          std::make_unique<ChunkSource>(("leaf_source" + std::to_string(e)).c_str(), c.port_bandwidth, chunks));
      leaf_sinks.push_back(
          std::make_unique<ChunkSink>(("leaf_sink" + std::to_string(e)).c_str(), c.planes, sink_capacity));
    }
    for (std::uint32_t p = 0; p < c.planes; ++p) {
      root_source->out(p).connect(tree->root_in(p));
      tree->root_out(p).connect(root_sink->in(p));
      for (std::uint32_t e = 0; e < endpoints; ++e) {
        tree->leaf_out(e, p).connect(leaf_sinks[e]->in(p));
        leaf_sources[e]->out(p).connect(tree->leaf_in(e, p));
      }
    }
  }
  [[nodiscard]] bool all_leaves_have(std::uint64_t bytes) const {
    for (const auto& s : leaf_sinks)
      if (s->bytes() != bytes) return false;
    return true;
  }
};

std::vector<std::vector<sim::stream::Chunk>> none(std::uint32_t) { return {}; }

// Runs every event before `t` (SystemC's sc_start(d) stops short of the events at now + d).
void run_before(Picos t) { sc_core::sc_start(sim::to_sc_time(t - sim::now())); }

// Serialization of `bytes` at 100 Gb/s: bytes * 80 ps.
Picos ser100(std::uint64_t bytes) { return Picos(bytes * 80); }

// The simulated time docs/swarmx.md's worked examples quote, as the test's `time_ps` property
// (docs/figures.yaml reads it from the test binary's JSON report).
void record_time(Picos t) { ::testing::Test::RecordProperty("time_ps", std::to_string(t.count())); }

// docs/swarmx.md, uniform links: T = sum_i s(c_i) + L * (d + max_i s(c_i)).
TEST(SwarmX, BroadcastThroughTwoLevelsTakesExactlyTheFormula) {
  const std::uint64_t S = 1'000'000;  // 15 chunks of 64 KiB and one of 16960 B
  const SwarmXConfig c = config();
  Bench b(c, 5, make_chunks(S, kChunk, 1, sim::stream::Pass::Forward), none, false);
  ASSERT_EQ(b.tree->levels(), 2u);
  ASSERT_EQ(b.tree->width(1), 2u);
  const Picos d = sim::to_picos(c.node_latency);
  const Picos s = ser100(kChunk);
  EXPECT_EQ(s, Picos(5'242'880));
  const Picos sum = ser100(kChunk) * 15 + ser100(S - 15 * kChunk);
  const Picos T = sum + 2 * (d + s);
  EXPECT_EQ(T, Picos(92'485'760));

  run_before(T);  // everything up to T - 1 ps
  EXPECT_FALSE(b.all_leaves_have(S)) << "the last byte arrived before the formula's time";
  run_before(T + Picos(1));  // and the events at T
  EXPECT_TRUE(b.all_leaves_have(S));
  for (const auto& sink : b.leaf_sinks) EXPECT_EQ(sink->last(), T);
  record_time(b.leaf_sinks.back()->last());
  sc_core::sc_start();
  // No back-pressure with 4 slots: B * s >= 2 s + d.
  EXPECT_EQ(b.tree->node(0, 0, 0).down_out(0).blocked_ps(), 0u);
}

TEST(SwarmX, ReductionThroughTwoLevelsTakesExactlyTheFormula) {
  const std::uint64_t S = 1'000'000;
  const SwarmXConfig c = config();
  Bench b(
      c, 5, {}, [&](std::uint32_t) { return make_chunks(S, kChunk, 1, sim::stream::Pass::Gradient); }, false);
  const Picos d = sim::to_picos(c.node_latency);
  const Picos T = ser100(kChunk) * 15 + ser100(S - 15 * kChunk) + 2 * (d + ser100(kChunk));
  run_before(T);  // everything up to T - 1 ps
  EXPECT_LT(b.root_sink->bytes(), S);
  run_before(T + Picos(1));  // and the events at T
  EXPECT_EQ(b.root_sink->bytes(), S);
  EXPECT_EQ(b.root_sink->last(), T);
  record_time(b.root_sink->last());
  sc_core::sc_start();
  EXPECT_EQ(b.tree->node(0, 0, 0).reductions(), 16u);
  EXPECT_EQ(b.tree->node(0, 1, 1).reductions(), 16u);  // the leaf switch with one endpoint forwards
}

// A reduce throughput below the port bandwidth makes the switches' upward links the
// bottleneck: T = sum_j s_j(C) + L d + (n - 1) max_j s_j(C) for n equal chunks.
TEST(SwarmX, ReduceThroughputBoundsTheReduction) {
  SwarmXConfig c = config();
  c.reduce_throughput = units::Bandwidth{50e9};
  const std::uint64_t S = 16 * kChunk;
  Bench b(
      c, 5, {}, [&](std::uint32_t) { return make_chunks(S, kChunk, 1, sim::stream::Pass::Gradient); }, false);
  const Picos s = ser100(kChunk);
  const Picos r = Picos(kChunk * 160);  // 50 Gb/s
  const Picos d = sim::to_picos(c.node_latency);
  const Picos T = s + 2 * r + 2 * d + r * 15;
  EXPECT_EQ(T, Picos(185'500'800));
  run_before(T);  // everything up to T - 1 ps
  EXPECT_LT(b.root_sink->bytes(), S);
  sc_core::sc_start();
  EXPECT_EQ(b.root_sink->last(), T);
  record_time(b.root_sink->last());
  // The endpoints' links waited for the leaf switches (back-pressure), the top did not.
  EXPECT_GT(b.leaf_sources[0]->out(0).blocked_ps(), 0u);
  EXPECT_EQ(b.tree->node(0, 0, 0).up_out().blocked_ps(), 0u);
}

// One slot per port: every hop waits for the next node to drain, the period becomes 2s + d:
// T = (L + 1) s + L d + (n - 1)(2 s + d).
TEST(SwarmX, OneBufferSlotThrottlesTheBroadcast) {
  SwarmXConfig c = config();
  c.buffer_chunks = 1;
  const std::uint64_t S = 8 * kChunk;
  Bench b(c, 5, make_chunks(S, kChunk, 1, sim::stream::Pass::Forward), none, false, 1);
  const Picos s = ser100(kChunk);
  const Picos d = sim::to_picos(c.node_latency);
  const Picos T = 3 * s + 2 * d + 7 * (2 * s + d);
  run_before(T);  // everything up to T - 1 ps
  EXPECT_FALSE(b.all_leaves_have(S));
  sc_core::sc_start();
  for (const auto& sink : b.leaf_sinks) EXPECT_EQ(sink->last(), T);
  record_time(b.leaf_sinks.back()->last());
  // The root link waited s + d per chunk after the first for the top switch's slot.
  EXPECT_EQ(b.root_source->out(0).blocked_ps(), 7 * (s + d).count());
  EXPECT_EQ(b.tree->node(0, 0, 0).down_in().peak_occupancy(), 1u);
}

// Planes split the chunks round-robin; each plane is its own tree.
TEST(SwarmX, PlanesCarryChunksRoundRobin) {
  SwarmXConfig c = config();
  c.planes = 3;
  const std::uint64_t S = 7 * kChunk;  // planes get 3, 2, 2 chunks
  Bench b(c, 2, make_chunks(S, kChunk, 3, sim::stream::Pass::Forward), none, false);
  sc_core::sc_start();
  const Picos s = ser100(kChunk);
  const Picos d = sim::to_picos(c.node_latency);
  EXPECT_EQ(b.leaf_sinks[1]->last(), 3 * s + 1 * (d + s));  // L = 1, the plane with 3 chunks
  EXPECT_EQ(b.tree->node(1, 0, 0).down_out(1).chunks(), 2u);
  EXPECT_EQ(b.tree->node(0, 0, 0).down_out(1).bytes(), 3 * kChunk);
}

// Values: endpoint e sends g_e; a switch sums its children left to right; the documented
// order for 8 endpoints under 1:4 switches is (((g0+g1)+g2)+g3) + (((g4+g5)+g6)+g7).
TEST(SwarmX, ReductionSumsFp32InTreeOrder) {
  const SwarmXConfig c = config();
  const std::uint64_t n = 3000;  // 12000 B: one chunk
  auto value = [](std::uint32_t e, std::uint64_t k) {
    const float mag[] = {1e8F, 1.0F, -1e8F, 3.0F, 1e-3F, 7e7F, -7e7F, 0.25F};
    return mag[e] * (1.0F + static_cast<float>((k * 7 + e * 13) % 17) / 17.0F);
  };
  Bench b(
      c, 8, {},
      [&](std::uint32_t e) {
        return make_chunks(n * 4, kChunk, 1, sim::stream::Pass::Gradient,
                           [&, e](std::uint64_t k) { return value(e, k); });
      },
      true);
  sc_core::sc_start();
  std::vector<std::vector<float>> g(8, std::vector<float>(n));
  for (std::uint32_t e = 0; e < 8; ++e)
    for (std::uint64_t k = 0; k < n; ++k) g[e][k] = value(e, k);
  const auto left = memoryx::reference_sum({&g[0], &g[1], &g[2], &g[3]});
  const auto right = memoryx::reference_sum({&g[4], &g[5], &g[6], &g[7]});
  const auto tree_order = memoryx::reference_sum({&left, &right});
  const auto flat = memoryx::reference_sum({&g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6], &g[7]});
  const auto got = b.root_sink->values(n);
  EXPECT_EQ(std::memcmp(got.data(), tree_order.data(), n * 4), 0) << "not the documented summation order";
  EXPECT_NE(std::memcmp(flat.data(), tree_order.data(), n * 4), 0) << "the data does not tell the orders apart";
}

TEST(SwarmX, PairOfOneToTwoSumsPairwise) {
  const SwarmXConfig c = config(Fanout::TwoOneToTwo);
  const std::uint64_t n = 1024;
  auto value = [](std::uint32_t e, std::uint64_t k) {
    const float mag[] = {1e8F, 1.0F, -1e8F, 1.0F};
    return mag[e] + static_cast<float>(k % 5);
  };
  Bench b(
      c, 4, {},
      [&](std::uint32_t e) {
        return make_chunks(n * 4, kChunk, 1, sim::stream::Pass::Gradient,
                           [&, e](std::uint64_t k) { return value(e, k); });
      },
      true);
  ASSERT_EQ(b.tree->levels(), 2u);
  sc_core::sc_start();
  const auto got = b.root_sink->values(n);
  for (std::uint64_t k = 0; k < n; ++k) {
    const float pair0 = value(0, k) + value(1, k);
    const float pair1 = value(2, k) + value(3, k);
    EXPECT_EQ(got[k], pair0 + pair1) << k;
  }
}

TEST(SwarmX, BroadcastDeliversTheSameValuesToEveryEndpoint) {
  const SwarmXConfig c = config();
  const std::uint64_t n = 40000;  // 160000 B: 3 chunks
  auto value = [](std::uint64_t k) { return static_cast<float>(k) * 0.5F - 3.0F; };
  Bench b(c, 5, make_chunks(n * 4, kChunk, 1, sim::stream::Pass::Forward, value), none, true);
  sc_core::sc_start();
  for (const auto& sink : b.leaf_sinks) {
    const auto got = sink->values(n);
    for (std::uint64_t k = 0; k < n; ++k) ASSERT_EQ(got[k], value(k)) << k;
  }
}

TEST(SwarmX, NodeAndLinkStatisticsAreInTheTree) {
  const SwarmXConfig c = config();
  const std::uint64_t S = 2 * kChunk;
  Bench b(c, 5, make_chunks(S, kChunk, 1, sim::stream::Pass::Forward), none, false);
  sc_core::sc_start();
  const auto* bytes = b.stats.find("swarmx.p0_l0_s0.down_out1.bytes");
  ASSERT_NE(bytes, nullptr);
  EXPECT_EQ(bytes->value(), static_cast<double>(S));
  const auto* busy = b.stats.find("swarmx.p0_l1_s0.down_out3.busy");
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ(busy->value(), static_cast<double>(2 * ser100(kChunk).count()));
  const auto* bc = b.stats.find("swarmx.p0_l1_s1.broadcasts");
  ASSERT_NE(bc, nullptr);
  EXPECT_EQ(bc->value(), 2.0);
  EXPECT_EQ(b.stats.find("swarmx.switches")->value(), 3.0);
}

// A sparse gradient chunk alternates FP32 values and uint32 index words (docs/training.md,
// "Sparse weights"): the values are summed in tree order, the indices pass unchanged.
float index_word(std::uint64_t i) {
  const auto bits = static_cast<std::uint32_t>(i * 3 + 1);
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::vector<std::vector<sim::stream::Chunk>> sparse_chunks(std::uint32_t e, std::uint64_t entries, bool other_index) {
  auto chunks = make_chunks(entries * 8, kChunk, 1, sim::stream::Pass::Gradient, [=](std::uint64_t k) {
    if (k % 2) return index_word(k / 2 + (other_index && k == 41 ? 1 : 0));
    return 0.5F + static_cast<float>(e) * 0.25F + static_cast<float>(k % 13);
  });
  for (auto& plane : chunks)
    for (auto& ch : plane) ch.info.sparse = true;
  return chunks;
}

TEST(SwarmX, SparseChunksSumValuesAndKeepIndices) {
  const std::uint64_t entries = 1000;
  Bench b(
      config(), 4, {}, [&](std::uint32_t e) { return sparse_chunks(e, entries, false); }, true);
  sc_core::sc_start();
  const auto got = b.root_sink->values(entries * 2);
  for (std::uint64_t k = 0; k < entries * 2; ++k) {
    if (k % 2) {
      const float index = index_word(k / 2);
      ASSERT_EQ(std::memcmp(&got[k], &index, 4), 0) << "index word " << k;
      continue;
    }
    float want = 0.5F + static_cast<float>(k % 13);
    for (std::uint32_t e = 1; e < 4; ++e)
      want = want + (0.5F + static_cast<float>(e) * 0.25F + static_cast<float>(k % 13));
    ASSERT_EQ(got[k], want) << "value word " << k;
  }
}

TEST(SwarmX, SparseChunksWithOtherIndicesAreASimulationError) {
  Bench b(
      config(), 2, {}, [&](std::uint32_t e) { return sparse_chunks(e, 100, e == 1); }, true);
  EXPECT_THROW(sc_core::sc_start(), sim::SimulationError);
}

TEST(SwarmX, MismatchedGradientChunksAreASimulationError) {
  const SwarmXConfig c = config();
  Bench b(
      c, 2, {},
      [&](std::uint32_t e) {
        auto chunks = make_chunks(8192, kChunk, 1, sim::stream::Pass::Gradient);
        chunks[0][0].info.layer = e;  // endpoint 1 sends another layer
        return chunks;
      },
      false);
  EXPECT_THROW(sc_core::sc_start(), sim::SimulationError);
}

}  // namespace
}  // namespace wafersim::swarmx::swarmx_test
