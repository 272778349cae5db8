// MemoryX on its own: placement (DRAM first, flash spill, the error naming the shortfall),
// the optimizer engine against the host reference bit for bit, weight streaming with exact
// timing, and prefetch hiding or exposing flash latency (docs/memoryx.md).

#include <gtest/gtest.h>

#include <systemc>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>

#include "memoryx/memoryx.h"
#include "memoryx/reference_optimizer.h"
#include "platforms/edge/model_endpoint.h"
#include "sim/errors.h"
#include "sim/stats/stats.h"

namespace wafersim::memoryx::memoryx_test {
namespace {
using sim::Picos;
using units::Bandwidth;
using units::DataSize;
using units::Duration;

constexpr std::uint64_t KiB = 1024;

MemoryXConfig small_config() {
  MemoryXConfig c;
  c.dram = TierConfig{
      DataSize::from_bytes(448 * KiB), Bandwidth{200e9}, Bandwidth{200e9}, Duration{100e-9}, Duration{100e-9},
      DataSize::from_bytes(64)};
  c.flash =
      TierConfig{DataSize::from_bytes(1024 * KiB), Bandwidth{200e9}, Bandwidth{50e9}, Duration{100e-6}, Duration{1e-3},
                 DataSize::from_bytes(16 * KiB)};
  c.optimizer_throughput = units::ParamRate{1e9};
  c.bytes_per_param = 20;
  c.prefetch_depth = 1;
  return c;
}

// ---------------------------------------------------------------- placement

TEST(MemoryXPlacement, DramFirstThenFlash) {
  // 2 x 320 KiB of state against 448 KiB of DRAM: 128 KiB staging (2 slots x 64 KiB of FP32
  // weights), layer 0 fills the rest of DRAM, layer 1 goes to flash.
  auto p = place({{"a", 16384}, {"b", 16384}}, small_config(), OptimizerKind::Adam);
  EXPECT_EQ(p.staging_slots, 2u);
  EXPECT_EQ(p.staging_bytes, 128 * KiB);
  EXPECT_EQ(p.layers[0].tier, Tier::Dram);
  EXPECT_EQ(p.layers[0].offset, 128 * KiB);
  EXPECT_EQ(p.layers[0].bytes, 320 * KiB);
  EXPECT_EQ(p.layers[1].tier, Tier::Flash);
  EXPECT_EQ(p.layers[1].offset, 0u);
  EXPECT_EQ(p.dram_used, 448 * KiB);
  EXPECT_EQ(p.flash_used, 320 * KiB);
}

TEST(MemoryXPlacement, AllInDramNeedsNoStaging) {
  auto p = place({{"a", 4096}, {"b", 4096}}, small_config(), OptimizerKind::Adam);
  EXPECT_EQ(p.staging_bytes, 0u);
  EXPECT_EQ(p.flash_layers(), 0u);
  EXPECT_EQ(p.layers[1].offset, 80 * KiB);
}

TEST(MemoryXPlacement, ModelThatDoesNotFitNamesTheLayerAndTheShortfall) {
  // DRAM: 128 KiB staging + layer 0; flash: layers 1..3 (960 KiB of 1024); layer 4 needs 320 KiB.
  std::vector<LayerSpec> layers;
  for (int i = 0; i < 5; ++i) layers.push_back({"block" + std::to_string(i), 16384});
  try {
    place(layers, small_config(), OptimizerKind::Adam);
    FAIL() << "expected the model not to fit";
  } catch (const sim::InputError& e) {
    EXPECT_EQ(e.exit_code(), sim::kExitBadInput);
    const std::string m = e.what();
    EXPECT_NE(m.find("layer 'block4' (#4, 16384 parameters x 20 B) needs 327680 B"), std::string::npos) << m;
    EXPECT_NE(m.find("DRAM has 0 B free"), std::string::npos) << m;
    EXPECT_NE(m.find("flash 65536 B free (of 1048576 B)"), std::string::npos) << m;
    EXPECT_NE(m.find("needs 1638400 B"), std::string::npos) << m;
  }
  layers.pop_back();
  EXPECT_NO_THROW(place(layers, small_config(), OptimizerKind::Adam));
}

TEST(MemoryXPlacement, BytesPerParamMustHoldTheOptimizerState) {
  MemoryXConfig c = small_config();
  c.bytes_per_param = 12;
  EXPECT_NO_THROW(place({{"a", 10}}, c, OptimizerKind::Momentum));  // weight, gradient, 1 moment
  EXPECT_THROW(place({{"a", 10}}, c, OptimizerKind::Adam), sim::InputError);
}

TEST(MemoryXPlacement, TheModuleRefusesAModelThatDoesNotFit) {
  sim::stats::Group stats("root");
  std::vector<LayerSpec> layers(5, LayerSpec{"x", 16384});
  EXPECT_THROW(
      MemoryX("memoryx", small_config(), StreamPortConfig{}, layers, OptimizerConfig{}, MemoryXOptions{}, stats),
      sim::InputError);
}

// ---------------------------------------------------------------- optimizer math

std::vector<float> random_vector(std::size_t n, std::uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = (static_cast<float>(gen() >> 8) / 16777216.0F - 0.5F) * scale;
  return v;
}

// The engine updates in chunks of varying size (as MemoryX stores them); the reference works
// on whole tensors. Three updates, several hyper-parameter sets, bit-for-bit equality.
TEST(MemoryXOptimizer, EngineEqualsHostReferenceBitForBit) {
  const std::size_t n = 5000;
  for (auto kind : {OptimizerKind::Sgd, OptimizerKind::Momentum, OptimizerKind::Adam, OptimizerKind::AdamW}) {
    for (float wd : {0.0F, 0.01F}) {
      OptimizerConfig c;
      c.kind = kind;
      c.learning_rate = 3e-3F;
      c.weight_decay = wd;
      c.momentum = 0.85F;
      c.beta1 = 0.8F;
      c.beta2 = 0.95F;
      c.epsilon = 1e-6F;
      c.gradient_scale = 0.25F;
      auto w = random_vector(n, 1, 2.0F);
      std::vector<float> m(n, 0.0F), v(n, 0.0F);
      auto ref = ReferenceState::with_weights(w, kind);
      for (std::uint32_t t = 1; t <= 3; ++t) {
        const auto g = random_vector(n, 10 + t, 4.0F);
        for (std::size_t at = 0, len = 1; at < n; at += len, len = len * 3 + 1) {
          const std::size_t k = std::min(len, n - at);
          engine_update(c, t, w.data() + at, m.data() + at, v.data() + at, g.data() + at, k);
        }
        reference_step(c, ref, g);
      }
      EXPECT_EQ(std::memcmp(w.data(), ref.weights.data(), n * 4), 0) << to_string(kind) << " wd " << wd;
      if (moment_count(kind) >= 1) {
        EXPECT_EQ(std::memcmp(m.data(), ref.m.data(), n * 4), 0) << to_string(kind);
      }
      if (moment_count(kind) >= 2) {
        EXPECT_EQ(std::memcmp(v.data(), ref.v.data(), n * 4), 0) << to_string(kind);
      }
    }
  }
}

TEST(MemoryXOptimizer, TextbookValues) {
  OptimizerConfig c;
  c.kind = OptimizerKind::Sgd;
  c.learning_rate = 0.5F;
  float w = 2.0F, g = 3.0F;
  engine_update(c, 1, &w, nullptr, nullptr, &g, 1);
  EXPECT_EQ(w, 0.5F);  // 2 - 0.5 * 3
  c.kind = OptimizerKind::Momentum;
  c.momentum = 0.5F;
  w = 2.0F;
  float m = 1.0F;
  engine_update(c, 1, &w, &m, nullptr, &g, 1);
  EXPECT_EQ(m, 3.5F);   // 0.5 * 1 + 3
  EXPECT_EQ(w, 0.25F);  // 2 - 0.5 * 3.5
  // Adam's first step moves each weight by lr * g / (|g| + eps): about lr against the gradient.
  c.kind = OptimizerKind::Adam;
  c.learning_rate = 1e-2F;
  w = 1.0F;
  m = 0.0F;
  float v = 0.0F;
  g = -4.0F;
  engine_update(c, 1, &w, &m, &v, &g, 1);
  EXPECT_NEAR(w, 1.01F, 1e-6F);
  // AdamW decays the weight by lr * wd first: Adam's step from w * (1 - lr * wd).
  c.kind = OptimizerKind::AdamW;
  c.weight_decay = 0.5F;
  w = 1.0F;
  m = v = 0.0F;
  engine_update(c, 1, &w, &m, &v, &g, 1);
  EXPECT_NEAR(w, 1.0F * (1.0F - 1e-2F * 0.5F) + 1e-2F, 1e-6F);
}

TEST(MemoryXOptimizer, BadHyperParametersAreInputErrors) {
  OptimizerConfig c;
  c.beta2 = 1.0F;
  EXPECT_THROW(c.validate(), sim::InputError);
  c = OptimizerConfig{};
  c.learning_rate = -1.0F;
  EXPECT_THROW(c.validate(), sim::InputError);
  EXPECT_EQ(parse_optimizer_kind("adamw"), OptimizerKind::AdamW);
  EXPECT_THROW(parse_optimizer_kind("lamb"), sim::InputError);
}

// ---------------------------------------------------------------- streaming and prefetch

// MemoryX wired straight to one model endpoint over one plane (no SwarmX).
struct Standalone {
  sim::stats::Group stats{"root"};
  std::unique_ptr<MemoryX> mx;
  std::unique_ptr<platforms::edge::ModelEndpoint> ep;

  Standalone(const MemoryXConfig& c, std::vector<LayerSpec> layers, Bandwidth rate, bool functional = false) {
    StreamPortConfig ports;
    ports.planes = 1;
    ports.chunk_bytes = 4 * KiB;
    ports.port_bandwidth = Bandwidth{100e9};
    ports.buffer_chunks = 4;
    platforms::edge::EdgeIoConfig io;
    io.io_ports = 1;
    io.planes = 1;
    io.buffer_chunks = 4;
    platforms::edge::ModelEndpointConfig ec;
    ec.layers = static_cast<std::uint32_t>(layers.size());
    ec.rates = platforms::edge::LayerRates{rate, rate};
    ec.functional = functional;
    mx = std::make_unique<MemoryX>("memoryx", c, ports, std::move(layers), OptimizerConfig{},
                                   MemoryXOptions{functional, 7}, stats);
    ep = std::make_unique<platforms::edge::ModelEndpoint>("wafer0", io, 0, ec, stats);
    mx->stream_out(0).connect(ep->weights_in(0));
    ep->gradients_out(0).connect(mx->gradient_in(0));
  }
};

// Per-chunk times of the setup (4 KiB chunks): DRAM read at 200 Gb/s, link at 100 Gb/s.
constexpr Picos kDramRead{163'840};
constexpr Picos kDramLatency{100'000};
constexpr Picos kLink{327'680};
constexpr Picos kFirstArrival{100'000 + 163'840 + 327'680};  // A = read latency + read + link
// Staging 64 KiB from flash: read latency + 64 KiB at min(200, 200) Gb/s + DRAM write latency.
constexpr Picos kStage{100'000'000 + 2'621'440 + 100'000};

TEST(MemoryXStream, LinkBoundStreamArrivesOnTheFormula) {
  // One layer of 8 chunks, endpoint consuming instantly: the link is the bottleneck.
  MemoryXConfig c = small_config();
  Standalone s(c, {{"a", 8192}}, Bandwidth{0});
  s.mx->schedule_steps(1);
  sc_core::sc_start();
  ASSERT_TRUE(s.mx->finished());
  const auto& arrived = s.ep->records().stream_arrived;
  // T = read latency + one DRAM read + 8 link serialisations.
  EXPECT_EQ(arrived.at(0), kDramLatency + kDramRead + 8 * kLink);
  EXPECT_EQ(s.mx->counters().dram_read, 2 * 32 * KiB + 8192 * 16u);  // two streams + Adam's state
  EXPECT_EQ(s.mx->counters().bytes_out, 2 * 32 * KiB);
}

// Layer 0 in DRAM (16 chunks), layer 1 in flash (16 chunks). The prefetch of layer 1 starts
// at time 0; the stream of layer 1 could start when MemoryX's output slots free up, which
// with 4 + 4 slots and a compute-bound endpoint is I = A + 9 s_c + s_link (docs/memoryx.md).
TEST(MemoryXPrefetch, LongComputeHidesFlashLatency) {
  const Picos sc{16'384'000};  // 4 KiB at 2 Gb/s
  Standalone s(small_config(), {{"a", 16384}, {"b", 16384}}, Bandwidth{2e9});
  ASSERT_EQ(s.mx->placement().layers[1].tier, Tier::Flash);
  s.mx->schedule_steps(1);
  sc_core::sc_start();
  ASSERT_TRUE(s.mx->finished());
  const Picos ready = kFirstArrival + 9 * sc + kLink;
  ASSERT_GE(ready, kStage);  // the condition for hiding
  EXPECT_EQ(s.mx->streams()[1].wanted, ready);
  EXPECT_EQ(s.mx->streams()[1].first_issue, ready);
  EXPECT_EQ(s.mx->counters().prefetch_hits, 2u);  // forward; backward reuses the staged copy
  EXPECT_EQ(s.mx->counters().prefetch_misses, 0u);
  EXPECT_EQ(s.mx->counters().prefetch_stall_ps, 0u);
  EXPECT_EQ(s.mx->counters().prefetches, 1u);
  const auto& r = s.ep->records();
  EXPECT_EQ(r.stream_arrived.at(0), kFirstArrival + 12 * sc + kLink);
  EXPECT_EQ(r.stream_arrived.at(1), kFirstArrival + 28 * sc + kLink);
  // The endpoint never waits: one busy interval over all 64 chunks (2 layers x 2 passes).
  ASSERT_EQ(r.busy.size(), 1u);
  EXPECT_EQ(r.busy[0].start, kFirstArrival);
  EXPECT_EQ(r.busy[0].end, kFirstArrival + 64 * sc);
}

TEST(MemoryXPrefetch, ShortComputeExposesFlashLatency) {
  const Picos sc{655'360};  // 4 KiB at 50 Gb/s
  Standalone s(small_config(), {{"a", 16384}, {"b", 16384}}, Bandwidth{50e9});
  s.mx->schedule_steps(1);
  sc_core::sc_start();
  ASSERT_TRUE(s.mx->finished());
  const Picos ready = kFirstArrival + 9 * sc + kLink;
  EXPECT_EQ(s.mx->streams()[1].wanted, ready);
  EXPECT_EQ(s.mx->streams()[1].first_issue, kStage);
  EXPECT_EQ(s.mx->counters().prefetch_misses, 1u);
  EXPECT_EQ(s.mx->counters().prefetch_hits, 1u);
  EXPECT_EQ(s.mx->counters().prefetch_stall_ps, (kStage - ready).count());
  const auto& r = s.ep->records();
  // Layer 0 is consumed by A + 16 s_c; layer 1's first chunk arrives A after staging ends.
  ASSERT_GE(r.busy.size(), 2u);
  EXPECT_EQ(r.busy[0].start, kFirstArrival);
  EXPECT_EQ(r.busy[0].end, kFirstArrival + 16 * sc);
  EXPECT_EQ(r.busy[1].start, kStage + kFirstArrival);
  EXPECT_EQ(r.stream_arrived.at(1), kStage + kFirstArrival + 12 * sc + kLink);
}

TEST(MemoryXPrefetch, StatisticsAreInTheTree) {
  Standalone s(small_config(), {{"a", 16384}, {"b", 16384}}, Bandwidth{50e9});
  s.mx->schedule_steps(1);
  sc_core::sc_start();
  EXPECT_EQ(s.stats.find("memoryx.prefetch.misses")->value(), 1.0);
  EXPECT_EQ(s.stats.find("memoryx.flash.bytes_read")->value(),
            static_cast<double>(64 * KiB + 16384 * 16));  // staging + the optimizer's state reads
  EXPECT_EQ(s.stats.find("memoryx.optimizer.updates")->value(), 2.0);
  EXPECT_EQ(s.stats.find("memoryx.stream_out0.chunks")->value(), 64.0);
  EXPECT_GT(s.stats.find("memoryx.optimizer.busy")->value(), 0.0);
}

// ---------------------------------------------------------------- functional

TEST(MemoryXFunctional, OneEndpointStepMatchesTheReference) {
  Standalone s(small_config(), {{"a", 16384}, {"b", 16384}}, Bandwidth{50e9}, true);
  std::vector<ReferenceState> ref;
  for (std::uint32_t l = 0; l < 2; ++l)
    ref.push_back(ReferenceState::with_weights(s.mx->weights(l), OptimizerKind::Adam));
  s.mx->schedule_steps(2);
  sc_core::sc_start();
  ASSERT_TRUE(s.mx->finished());
  for (std::uint32_t step = 0; step < 2; ++step)
    for (std::uint32_t l = 0; l < 2; ++l) {
      std::vector<float> g(16384);
      for (std::size_t k = 0; k < g.size(); ++k)
        g[k] = platforms::edge::ModelEndpoint::default_gradient(1, 0, l, step, k);
      reference_step(OptimizerConfig{}, ref[l], g);
    }
  for (std::uint32_t l = 0; l < 2; ++l) {
    EXPECT_EQ(s.mx->updates_done(l), 2u);
    EXPECT_EQ(std::memcmp(s.mx->weights(l).data(), ref[l].weights.data(), 16384 * 4), 0) << l;
  }
}

struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> socket{"socket"};
  explicit Host(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {}
};

TEST(MemoryXHost, TransportDbgReadsAndWritesWeights) {
  Standalone s(small_config(), {{"a", 16}, {"b", 8}}, Bandwidth{0}, true);
  Host host("host");
  host.socket.bind(s.mx->host);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  float x[2] = {1.5F, -2.5F};
  tlm::tlm_generic_payload t;
  t.set_command(tlm::TLM_WRITE_COMMAND);
  t.set_address(16 * 4 + 8);  // layer 1, parameters 2 and 3
  t.set_data_ptr(reinterpret_cast<unsigned char*>(x));
  t.set_data_length(8);
  EXPECT_EQ(host.socket->transport_dbg(t), 8u);
  EXPECT_EQ(s.mx->weights(1)[2], 1.5F);
  EXPECT_EQ(s.mx->weights(1)[3], -2.5F);
  float y[2] = {};
  t.set_command(tlm::TLM_READ_COMMAND);
  t.set_data_ptr(reinterpret_cast<unsigned char*>(y));
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  host.socket->b_transport(t, delay);
  EXPECT_TRUE(t.is_response_ok());
  EXPECT_EQ(y[1], -2.5F);
  t.set_address(24 * 4);  // past the last layer
  EXPECT_EQ(host.socket->transport_dbg(t), 0u);
  EXPECT_EQ(t.get_response_status(), tlm::TLM_ADDRESS_ERROR_RESPONSE);
}

}  // namespace
}  // namespace wafersim::memoryx::memoryx_test
