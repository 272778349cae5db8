// The whole loop MemoryX -> SwarmX -> N model endpoints -> SwarmX -> MemoryX on the
// tiny-cluster and cs2-cluster presets: one training step takes exactly the documented time
// (docs/memoryx.md, "One training step"), the breakdown adds up, and in functional runs the
// weights equal the host reference of data-parallel training bit for bit.

#include <gtest/gtest.h>

#include <systemc>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "memoryx/reference_optimizer.h"
#include "platforms/cluster.h"
#include "platforms/edge/model_endpoint.h"
#include "platforms/step_timeline.h"
#include "sim/errors.h"
#include "sim/stats/formatters.h"
#include "tests/support/temp_dir.h"

namespace wafersim::platforms::cluster_step_test {
namespace {
using sim::Picos;
using units::Bandwidth;

struct Loop {
  sim::stats::Group stats{"root"};
  std::unique_ptr<Cluster> cluster;
  Loop(const std::string& preset, std::vector<memoryx::LayerSpec> layers, platforms::edge::ModelEndpointConfig ec,
       bool functional = false, const memoryx::OptimizerConfig& opt = {}) {
    const auto spec = load_platform(preset).spec;
    ec.layers = static_cast<std::uint32_t>(layers.size());
    ec.functional = functional;
    ClusterParts parts;
    parts.layers = std::move(layers);
    parts.optimizer = opt;
    parts.functional = functional;
    parts.seed = 3;
    parts.stand_ins = model_endpoints(ec);
    cluster = std::make_unique<Cluster>("cluster", spec, std::move(parts), stats);
  }
};

platforms::edge::ModelEndpointConfig rates(double forward_bps, double backward_bps, double loss_s) {
  platforms::edge::ModelEndpointConfig ec;
  ec.rates = platforms::edge::LayerRates{Bandwidth{forward_bps}, Bandwidth{backward_bps}};
  ec.loss_time = units::Duration{loss_s};
  return ec;
}

// A wafer's link per plane: min(port, min(io ports x port bandwidth, edge channels x wavelet x clock) / planes).
TEST(ClusterStep, EdgeIoBandwidthFromThePlatform) {
  const auto cs2 = edge_io_config(load_platform("cs2-cluster").spec);
  EXPECT_EQ(cs2.direction_bandwidth().bits_per_s, 1.2e12);  // 12 x 100 GbE (60 channels carry 2.112 Tb/s)
  EXPECT_EQ(cs2.plane_bandwidth().bits_per_s, 100e9);
  EXPECT_EQ(cs2.planes, 12u);
  const auto tiny = edge_io_config(load_platform("tiny-cluster").spec);
  EXPECT_EQ(tiny.direction_bandwidth().bits_per_s, 100e9);
  // Two edge channels at 32 b x 1.1 GHz carry 70.4 Gb/s: the fabric edge is the bound.
  const auto narrow = edge_io_config(load_platform("tiny-cluster", {"fabric.edge_io_channels=2"}).spec);
  EXPECT_EQ(sim::bits_per_second(narrow.plane_bandwidth()), 70'400'000'000u);
  const auto ports = stream_port_config(load_platform("cs2-cluster").spec);
  EXPECT_EQ(ports.chunk_bytes, 65536u);
  EXPECT_EQ(ports.planes, 12u);
}

// Runs every event before `t`.
void run_before(Picos t) { sc_core::sc_start(sim::to_sc_time(t - sim::now())); }

// The simulated step's A, E, G, T_opt(0) and T that docs/memoryx.md's table quotes, as the
// test's properties (docs/figures.yaml reads them from the test binary's JSON report).
void record_step(const StepBreakdown& b) {
  const auto exposed = [&](Activity a) { return b.exposed[static_cast<std::size_t>(a)]; };
  const Picos a = exposed(Activity::Stream), e = a + exposed(Activity::Compute), g = e + exposed(Activity::Reduce);
  for (const auto& [key, t] : {std::pair{"a_ps", a},
                               {"e_ps", e},
                               {"g_ps", g},
                               {"t_opt_ps", exposed(Activity::Optimizer)},
                               {"t_ps", b.duration()}})
    ::testing::Test::RecordProperty(key, std::to_string(t.count()));
}

// tiny-cluster: 2 wafers, 1 plane, 4 KiB chunks, 100 Gb/s links, 1 us per switch, one switch
// level; DRAM 200 Gb/s with 100 ns latency; optimizer 1 Gparam/s. Layers of 8 and 4 chunks,
// forward at 10 Gb/s and backward at 5 Gb/s per wafer (compute-bound), loss 2 us.
TEST(ClusterStep, TinyClusterStepTakesExactlyTheFormula) {
  Loop s("tiny-cluster", {{"l0", 8192}, {"l1", 4096}}, rates(10e9, 5e9, 2e-6));
  auto& c = *s.cluster;
  ASSERT_EQ(c.endpoint_count(), 2u);
  ASSERT_EQ(c.swarmx().levels(), 1u);
  const Picos lat{100'000}, dram_read{163'840}, dram_write{163'840}, link{327'680}, d{1'000'000};
  const Picos fwd{3'276'800}, bwd{6'553'600}, loss{2'000'000};
  // Stream: first chunk at the wafers after a DRAM read and L + 1 links through L switches.
  const Picos A = lat + dram_read + 2 * link + d;
  // Compute: every chunk of the step, forward and backward, plus the loss.
  const Picos E = A + 12 * fwd + loss + 12 * bwd;
  // Reduce: the last gradient chunk up one switch level and written to DRAM.
  const Picos G = E + link + d + link + dram_write + lat;
  // Optimizer on layer 0: read latency + max(8192 params at 1 Gparam/s, state traffic) + write latency.
  const Picos opt0 = lat + Picos(8'192'000) + lat;
  const Picos T = G + opt0;
  EXPECT_EQ(T, Picos(132'195'200));

  c.memoryx().schedule_steps(1);
  run_before(T);
  EXPECT_FALSE(c.memoryx().finished()) << "the step ended before the formula's time";
  run_before(T + Picos(1));
  EXPECT_TRUE(c.memoryx().finished());
  sc_core::sc_start();
  const auto t = step_timeline(c.memoryx(), c.endpoints());
  ASSERT_EQ(t.steps.size(), 1u);
  const auto& b = t.steps[0];
  EXPECT_EQ(b.duration(), T);
  EXPECT_EQ(b.exposed[static_cast<std::size_t>(Activity::Stream)], A);
  EXPECT_EQ(b.exposed[static_cast<std::size_t>(Activity::Compute)], E - A);
  EXPECT_EQ(b.exposed[static_cast<std::size_t>(Activity::Reduce)], G - E);
  EXPECT_EQ(b.exposed[static_cast<std::size_t>(Activity::Optimizer)], opt0);
  EXPECT_EQ(b.idle, Picos(0));
  record_step(b);
  // Hidden parts: layer 1's update ran during layer 0's backward compute.
  EXPECT_EQ(b.busy[static_cast<std::size_t>(Activity::Optimizer)], opt0 + lat + Picos(4'096'000) + lat);
  EXPECT_GT(b.busy[static_cast<std::size_t>(Activity::Stream)], A);
}

// cs2-cluster: 4 CS-2, 12 planes of 100 Gb/s (1.2 Tb/s per wafer), 64 KiB chunks, one switch
// level; DRAM 4.8 Tb/s (400 Gb/s per plane); optimizer 200 Gparam/s, bounded here by DRAM.
// Layers of 24 and 12 chunks; 600 Gb/s forward and 300 Gb/s backward per wafer; loss 2 us.
TEST(ClusterStep, Cs2ClusterStepTakesExactlyTheFormula) {
  Loop s("cs2-cluster", {{"l0", 393'216}, {"l1", 196'608}}, rates(600e9, 300e9, 2e-6));
  auto& c = *s.cluster;
  ASSERT_EQ(c.endpoint_count(), 4u);
  ASSERT_EQ(c.swarmx().planes(), 12u);
  const Picos lat{100'000}, dram_read{1'310'720}, dram_write{1'310'720}, link{5'242'880}, d{1'000'000};
  const Picos fwd{873'814}, bwd{1'747'627}, loss{2'000'000};  // 64 KiB at 600 and 300 Gb/s, rounded up
  const Picos A = lat + dram_read + 2 * link + d;
  const Picos E = A + 36 * fwd + loss + 36 * bwd;
  const Picos G = E + link + d + link + dram_write + lat;
  // 393,216 params: 1.97 us at 200 Gparam/s, but 6 MiB of Adam state read at 4.8 Tb/s: 10.49 us.
  const Picos opt0 = lat + Picos(10'485'760) + lat;
  const Picos T = G + opt0;
  EXPECT_EQ(T, Picos(132'850'596));

  c.memoryx().schedule_steps(1);
  run_before(T);
  EXPECT_FALSE(c.memoryx().finished());
  run_before(T + Picos(1));
  EXPECT_TRUE(c.memoryx().finished());
  sc_core::sc_start();
  const auto t = step_timeline(c.memoryx(), c.endpoints());
  const auto& b = t.steps.at(0);
  EXPECT_EQ(b.duration(), T);
  EXPECT_EQ(b.exposed[static_cast<std::size_t>(Activity::Stream)], A);
  EXPECT_EQ(b.exposed[static_cast<std::size_t>(Activity::Compute)], E - A);
  EXPECT_EQ(b.exposed[static_cast<std::size_t>(Activity::Reduce)], G - E);
  EXPECT_EQ(b.exposed[static_cast<std::size_t>(Activity::Optimizer)], opt0);
  record_step(b);
  // Every wafer received both passes of both layers; SwarmX reduced 36 gradient chunks.
  for (std::uint32_t e = 0; e < 4; ++e) EXPECT_EQ(c.endpoint(e).weights_in(0).bytes(), 2 * 3 * 65536u);
  EXPECT_EQ(c.memoryx().counters().bytes_in, (393'216u + 196'608u) * 4);
  std::uint64_t reductions = 0;
  for (std::uint32_t p = 0; p < 12; ++p) reductions += c.swarmx().node(p, 0, 0).reductions();
  EXPECT_EQ(reductions, 36u);
}

// A stream-bound step (wafers faster than the links) exposes streaming instead.
TEST(ClusterStep, FastWafersExposeStreaming) {
  Loop s("tiny-cluster", {{"l0", 8192}, {"l1", 4096}}, rates(0, 0, 0));
  auto t = run_training_steps(*s.cluster, 1);
  const auto& b = t.steps.at(0);
  EXPECT_EQ(b.exposed[static_cast<std::size_t>(Activity::Compute)], Picos(0));
  EXPECT_GT(b.exposed[static_cast<std::size_t>(Activity::Stream)],
            b.exposed[static_cast<std::size_t>(Activity::Reduce)]);
  Picos sum = b.idle;
  for (auto x : b.exposed) sum += x;
  EXPECT_EQ(sum, b.duration());
}

// Three steps: each forward stream of a layer waits for that layer's previous update, so the
// steps do not overlap and each is as long as the first.
TEST(ClusterStep, StepsRepeatWithTheSameTime) {
  Loop s("tiny-cluster", {{"l0", 8192}, {"l1", 4096}}, rates(10e9, 5e9, 2e-6));
  auto t = run_training_steps(*s.cluster, 3);
  ASSERT_EQ(t.steps.size(), 3u);
  EXPECT_EQ(t.steps[0].duration(), Picos(132'195'200));
  EXPECT_EQ(t.steps[1].duration(), t.steps[0].duration());
  EXPECT_EQ(t.steps[2].duration(), t.steps[0].duration());
  for (const auto& st : t.steps) EXPECT_EQ(st.exposed[static_cast<std::size_t>(Activity::Optimizer)], Picos(8'392'000));
  add_stats(s.stats, t);
  EXPECT_EQ(s.stats.find("step2.time")->value(), 132'195'200.0);
  EXPECT_EQ(s.stats.find("step1.exposed_optimizer")->value(), 8'392'000.0);
  EXPECT_EQ(to_json(t)[1]["exposed_stream_ps"], 1'919'200u);
}

// Data parallel on N wafers: the weights after K steps equal the host reference applied to
// the gradients summed in SwarmX's order.
void expect_reference_weights(const std::string& preset, std::vector<memoryx::LayerSpec> layers,
                              const memoryx::OptimizerConfig& opt, std::uint32_t steps) {
  Loop s(preset, layers, rates(0, 0, 0), true, opt);
  auto& mx = s.cluster->memoryx();
  const std::uint32_t n = s.cluster->endpoint_count();
  std::vector<memoryx::ReferenceState> ref;
  for (std::uint32_t l = 0; l < layers.size(); ++l)
    ref.push_back(memoryx::ReferenceState::with_weights(mx.weights(l), opt.kind));
  run_training_steps(*s.cluster, steps);
  const std::uint32_t a = s.cluster->spec().swarmx.arity();
  for (std::uint32_t step = 0; step < steps; ++step)
    for (std::uint32_t l = 0; l < layers.size(); ++l) {
      std::vector<std::vector<float>> g(n, std::vector<float>(layers[l].params));
      for (std::uint32_t e = 0; e < n; ++e)
        for (std::size_t k = 0; k < g[e].size(); ++k)
          g[e][k] = platforms::edge::ModelEndpoint::default_gradient(1, e, l, step, k);
      // One switch level here (n <= arity): the sum is ((g0 + g1) + g2) + ...
      ASSERT_LE(n, a);
      std::vector<const std::vector<float>*> order;
      for (auto& x : g) order.push_back(&x);
      memoryx::reference_step(opt, ref[l], memoryx::reference_sum(order));
    }
  for (std::uint32_t l = 0; l < layers.size(); ++l) {
    ASSERT_EQ(mx.weights(l).size(), ref[l].weights.size());
    EXPECT_EQ(std::memcmp(mx.weights(l).data(), ref[l].weights.data(), ref[l].weights.size() * 4), 0)
        << preset << " layer " << l;
    if (!ref[l].m.empty()) {
      EXPECT_EQ(std::memcmp(mx.moment1(l).data(), ref[l].m.data(), ref[l].m.size() * 4), 0) << l;
    }
  }
}

TEST(ClusterStep, TinyClusterTrainsLikeTheReferenceAdamW) {
  memoryx::OptimizerConfig opt;
  opt.kind = memoryx::OptimizerKind::AdamW;
  opt.weight_decay = 0.01F;
  opt.gradient_scale = 0.5F;  // the mean over 2 wafers
  expect_reference_weights("tiny-cluster", {{"l0", 3000}, {"l1", 1500}, {"l2", 77}}, opt, 3);
}

TEST(ClusterStep, Cs2ClusterTrainsLikeTheReferenceMomentum) {
  memoryx::OptimizerConfig opt;
  opt.kind = memoryx::OptimizerKind::Momentum;
  opt.learning_rate = 0.1F;
  opt.weight_decay = 1e-4F;
  expect_reference_weights("cs2-cluster", {{"l0", 50'000}, {"l1", 20'001}}, opt, 2);
}

TEST(ClusterStep, ModelTooBigForMemoryXIsAnInputError) {
  // tiny-cluster: 1 GiB DRAM (240 MB of it staging) + 4 GiB flash at 20 B per parameter: one
  // 30 M-parameter block fits in DRAM, seven in flash, the ninth nowhere.
  std::vector<memoryx::LayerSpec> layers;
  for (int i = 0; i < 9; ++i) layers.push_back({"block" + std::to_string(i), 30'000'000});
  try {
    Loop s("tiny-cluster", layers, rates(0, 0, 0));
    FAIL() << "expected the model not to fit";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'block8' (#8, 30000000 parameters x 20 B) needs 600014848 B"),
              std::string::npos)
        << e.what();
  }
}

TEST(ClusterStep, DescribeStateNamesWhatEveryModuleWaitsFor) {
  // Wafers consuming 1 bit per second: after 1 ms every buffer is full and MemoryX waits.
  Loop s("tiny-cluster", {{"l0", 8192}}, rates(1, 1, 0));
  auto& c = *s.cluster;
  c.memoryx().schedule_steps(1);
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  EXPECT_FALSE(c.memoryx().finished());
  const std::string d = c.describe_state();
  for (const char* what : {"1 of 2 streams sent", "4 slots held, 0 credits", "p0_l0_s0: down 4 buffered",
                           "wafer1: plane 0 4 weights buffered", "waiting for chunk 0 of stream 0 (busy)"})
    EXPECT_NE(d.find(what), std::string::npos) << what << " in\n" << d;
}

// Two steps of a functional cs2-cluster run with every statistic; written to the file named by
// WAFERSIM_STATS_OUT when set (see the next test).
TEST(ClusterStep, StatsOfAFunctionalRun) {
  memoryx::OptimizerConfig opt;
  Loop s("cs2-cluster", {{"l0", 70'000}, {"l1", 30'000}}, rates(800e9, 400e9, 1e-6), true, opt);
  auto t = run_training_steps(*s.cluster, 2);
  add_stats(s.stats, t);
  const std::string json = sim::stats::stats_file_json(s.stats);
  EXPECT_NE(json.find("\"prefetch\""), std::string::npos);
  if (const char* out = std::getenv("WAFERSIM_STATS_OUT")) std::ofstream(out) << json;
}

// Same inputs, same bytes: the run above twice, in two processes (fresh SystemC kernels).
TEST(ClusterStep, StatsAreDeterministic) {
  test::TempDir dir;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string files[2];
  for (int i = 0; i < 2; ++i) {
    const auto out = dir.path() / ("stats" + std::to_string(i) + ".json");
    const std::string cmd = "WAFERSIM_STATS_OUT=" + out.string() + " " + self +
                            " --gtest_filter=ClusterStep.StatsOfAFunctionalRun > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream in(out);
    std::stringstream ss;
    ss << in.rdbuf();
    files[i] = ss.str();
  }
  EXPECT_GT(files[0].size(), 1000u);
  EXPECT_EQ(files[0], files[1]);
}

}  // namespace
}  // namespace wafersim::platforms::cluster_step_test
