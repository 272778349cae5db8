// The weight-resident placement: the analytical plan (regions, SRAM, pipeline bound) on
// single wafers and clusters, the SRAM error, and resident-weight programs simulated on tiny
// wafers: bit-identical to the streamed products, checked against the host, never faster
// than their bounds.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <systemc>

#include <algorithm>

#include "models/compiler/compiler.h"
#include "models/compiler/routes.h"
#include "models/reference/attention.h"
#include "models/resident/kernel_decode_attention.h"
#include "models/resident/resident_plan.h"
#include "platforms/cluster.h"
#include "platforms/inference/decode_run.h"
#include "platforms/inference/place_weights.h"
#include "platforms/runtime/executor.h"
#include "sim/errors.h"
#include "tests/support/model_rig.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::resident_test {
namespace {
using models::LayerKind;
using models::resident::ClusterTarget;
using models::resident::Cut;
using models::resident::plan_resident;
using models::resident::ResidentPlan;

ClusterTarget cluster_target(const std::string& platform) {
  const auto p = platforms::load_platform(platform);
  return {{p.spec.wafer, p.spec.fabric}, p.spec.cluster.systems, p.spec.system.io_bandwidth_bits_per_s()};
}

// Regions lie on the grid, never overlap, and follow the pipeline in serpentine order.
void expect_regions_valid(const ResidentPlan& plan, const ClusterTarget& t) {
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    const auto& a = plan.layers[i].region;
    EXPECT_LT(a.wafer, plan.wafers);
    EXPECT_LT(a.x0, a.x1);
    EXPECT_LE(a.x1, t.wafer.width());
    EXPECT_LT(a.y0, a.y1);
    EXPECT_LE(a.y1, t.wafer.height());
    for (std::size_t j = i + 1; j < plan.layers.size(); ++j) {
      const auto& b = plan.layers[j].region;
      const bool apart = a.wafer != b.wafer || a.x1 <= b.x0 || b.x1 <= a.x0 || a.y1 <= b.y0 || b.y1 <= a.y0;
      EXPECT_TRUE(apart) << plan.layers[i].name << " and " << plan.layers[j].name << " overlap";
    }
    EXPECT_LE(plan.layers[i].decode.sram_bytes(), plan.sram_capacity) << plan.layers[i].name;
  }
}

// The pipeline's interval is its slowest stage, its latency the sum of the stages.
void expect_pipeline_consistent(const ResidentPlan& plan) {
  std::uint64_t most = 0, sum = 0;
  for (const auto& l : plan.layers) {
    most = std::max(most, l.decode.bound.cycles);
    sum += l.decode.bound.cycles;
  }
  for (const auto& w : plan.links) {
    most = std::max(most, w.cycles);
    sum += w.cycles;
  }
  EXPECT_EQ(plan.stage_cycles, most);
  EXPECT_EQ(plan.latency_cycles, sum);
  EXPECT_GT(plan.stage_cycles, 0u);
}

TEST(ResidentCost, LinearOnTwoByTwoPes) {
  const auto m = models::load_model("tiny-mlp").spec;
  const auto t = cluster_target("tiny").wafer;
  // fc1: 16 -> 32 with bias, fp32 (one lane): each PE holds 8 x 16 weights and 16 biases.
  const auto c = models::resident::layer_cost(m.layers[0], m, t, 2, 2, 1);
  EXPECT_EQ(c.cut, Cut::RowsIn);  // a tie: both cuts give 8 x 16 blocks
  EXPECT_EQ(c.weight_bytes, (8u * 16u + 16u) * 4u);
  EXPECT_EQ(c.kv_bytes, 0u);
  // 8 FMACs of 16 lanes-steps, the neighbour's partials, the bias, the rounding.
  EXPECT_EQ(c.work.datapath_steps, 8u * 16u + 16u + 16u + 16u);
  EXPECT_EQ(c.work.flops, 2u * 16u * 32u + 32u);
  EXPECT_EQ(c.bound.cycles, std::max({c.bound.compute, c.bound.sram, c.bound.fabric, c.bound.edge}));
}

TEST(ResidentCost, AttentionKeepsTheKvCacheForTheSequence) {
  const auto m = models::load_model("tiny-transformer").spec;
  const auto t = cluster_target("tiny").wafer;
  const auto* attn = m.find("h0.attn");
  ASSERT_NE(attn, nullptr);
  // batch 2 x sequence 8 x 2 kv heads x head_dim 4, keys and values, bf16, over 2 x 4 PEs.
  const auto c = models::resident::layer_cost(*attn, m, t, 2, 4, 8);
  EXPECT_EQ(c.kv_bytes, 2u * 2u * (8u / 4u) * (2u * 4u / 2u) * 2u);
  EXPECT_EQ(models::resident::resident_state_bytes(*attn, m), 2u * 2u * 8u * 2u * 4u * 2u);
  // Decode attends to more keys late in the sequence.
  EXPECT_LT(models::resident::layer_cost(*attn, m, t, 2, 4, 1).work.flops, c.work.flops);
}

TEST(ResidentPlan, Gpt3XlFitsOneWse2) {
  const auto t = cluster_target("wse2");
  const auto m = models::load_model("gpt3-xl").spec;
  const ResidentPlan plan = plan_resident(m, t);
  EXPECT_EQ(plan.wafers, 1u);
  EXPECT_EQ(plan.skipped, std::vector<std::string>{"loss"});
  EXPECT_EQ(plan.layers.size() + plan.skipped.size(), m.layers.size());
  expect_regions_valid(plan, t);
  expect_pipeline_consistent(plan);
  EXPECT_TRUE(plan.links.empty());
  EXPECT_LE(plan.colors_max, plan.colors_available);
  EXPECT_GT(plan.state_bytes, 2 * m.parameters());  // weights (fp16) and the KV cache
}

TEST(ResidentPlan, Llama70bOnOneWse2IsTheSramError) {
  const auto t = cluster_target("wse2");
  const auto m = models::load_model("llama3-70b").spec;
  try {
    plan_resident(m, t);
    FAIL() << "llama3-70b should not fit one WSE-2";
  } catch (const sim::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("does not fit the SRAM"), std::string::npos) << msg;
    EXPECT_NE(msg.find("layer '"), std::string::npos) << msg;
    EXPECT_NE(msg.find("PE ("), std::string::npos) << msg;
    EXPECT_NE(msg.find("short by"), std::string::npos) << msg;
  }
}

TEST(ResidentPlan, Llama70bSpreadsOverTheWafersOfACluster) {
  const auto t = cluster_target("andromeda");
  const auto m = models::load_model("llama3-70b").spec;
  const ResidentPlan plan = plan_resident(m, t);
  EXPECT_GT(plan.wafers, 1u);
  EXPECT_LE(plan.wafers, t.systems);
  EXPECT_EQ(plan.links.size(), plan.wafers - 1);
  expect_regions_valid(plan, t);
  expect_pipeline_consistent(plan);
  // Layers keep the pipeline's order over the wafers.
  for (std::size_t i = 1; i < plan.layers.size(); ++i)
    EXPECT_LE(plan.layers[i - 1].region.wafer, plan.layers[i].region.wafer);
  // Fewer wafers would not do: the plan uses the fewest.
  ClusterTarget fewer = t;
  fewer.systems = plan.wafers - 1;
  EXPECT_THROW(plan_resident(m, fewer), sim::InputError);
}

TEST(ResidentPlan, TinyTransformerOnTinyUsesBandsOfRows) {
  const auto t = cluster_target("tiny");
  const auto m = models::load_model("tiny-transformer").spec;
  const ResidentPlan plan = plan_resident(m, t);
  EXPECT_GT(plan.layers.size(), t.wafer.width());  // more layers than columns: bands of rows
  EXPECT_GT(plan.shelves, 1u);
  expect_regions_valid(plan, t);
  expect_pipeline_consistent(plan);
  EXPECT_EQ(plan.decode_step_cycles(m.batch), std::max(m.batch * plan.stage_cycles, plan.latency_cycles));
  EXPECT_EQ(plan.prefill_cycles(m.batch), m.batch * m.sequence * plan.prefill_stage_cycles);
  EXPECT_THROW(plan_resident(m, t, m.sequence + 1), sim::InputError);  // a prompt longer than the cache
}

// Streaming and resident inference of one model side by side on the two wafers of
// tiny-cluster, with the same host data.
struct SideBySide {
  platforms::LoadedPlatform platform;
  models::compiler::CompiledModel streaming;
  models::resident::ResidentProgram resident;
  std::unique_ptr<sim::stats::Group> stats;
  std::unique_ptr<platforms::Cluster> cluster;
  std::unique_ptr<platforms::runtime::Executor> exec_s, exec_r;

  explicit SideBySide(const models::ModelSpec& m, const std::vector<std::string>& platform_set = {})
      : platform(platforms::load_platform("tiny-cluster", platform_set)) {
    const models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
    models::compiler::CompileOptions o;
    o.training = false;
    streaming = models::compiler::compile(m, target, o);
    resident = models::resident::compile_resident_program(m, target);
    auto data_s = platforms::runtime::make_host_data(streaming, 7);
    auto data_r = platforms::runtime::make_host_data(resident.cm, 7);
    EXPECT_EQ(data_s.host, data_r.host);
    platforms::inference::place_weights(resident, data_r);
    platforms::BuildOptions build;
    build.routes = streaming.routes;  // the same layout and colors: the same route table
    stats = std::make_unique<sim::stats::Group>("");
    cluster = std::make_unique<platforms::Cluster>("cluster", platform.spec, build, *stats);
    exec_s = std::make_unique<platforms::runtime::Executor>(streaming, cluster->wafer(0), std::move(data_s));
    exec_r = std::make_unique<platforms::runtime::Executor>(resident.cm, cluster->wafer(1), std::move(data_r));
  }

  void run(platforms::runtime::Executor& e, std::size_t wafer) {
    sc_core::sc_start(e.load_inputs());
    for (std::size_t i = 0; i < e.steps(); ++i) {
      e.start(i);
      sc_core::sc_start();
      auto& engine = cluster->wafer(wafer).engine();
      if (engine.failed()) engine.rethrow_failure();
      e.finish(i);
    }
  }

  // The streamed and the resident run hold the same values of tensor `name`, bit for bit.
  void expect_same(const std::string& name) {
    const int t = streaming.tensor(name);
    ASSERT_GE(t, 0) << name;
    EXPECT_EQ(exec_s->read(static_cast<std::uint32_t>(t)),
              exec_r->read(static_cast<std::uint32_t>(resident.cm.tensor(name))))
        << name;
  }
};

void expect_checked(const std::deque<platforms::runtime::StepResult>& results) {
  for (std::size_t i = 1; i < results.size(); ++i) {
    const auto& r = results[i];
    EXPECT_FALSE(r.checks.empty()) << r.name();
    for (const auto& c : r.checks) EXPECT_TRUE(c.passed()) << r.name() << " " << c.what << ": " << c.first_mismatch;
    EXPECT_GT(r.bound.cycles, 0u) << r.name();
    EXPECT_LE(r.bound.cycles, r.cycles()) << r.name();
  }
}

void expect_checked_streaming(const std::deque<platforms::runtime::StepResult>& results) {
  for (const auto& r : results)
    for (const auto& c : r.checks) EXPECT_TRUE(c.passed()) << r.name() << " " << c.what << ": " << c.first_mismatch;
}

TEST(ResidentRun, TinyMlpForwardIsBitIdenticalToStreaming) {
  SideBySide sb(models::load_model("tiny-mlp").spec);
  sb.run(*sb.exec_s, 0);
  sb.run(*sb.exec_r, 1);
  const auto& rs = sb.exec_s->results();
  const auto& rr = sb.exec_r->results();
  ASSERT_EQ(rr.size(), rs.size() + 1);  // the weight placement first
  EXPECT_EQ(rr.front().layer, "weights");
  expect_checked_streaming(rs);
  expect_checked(rr);
  for (const char* name : {"fc1", "act", "fc2"}) {
    sb.expect_same(name);
  }
  // No weight enters through the edge in the resident products; the streamed ones take them all.
  for (std::size_t i = 0; i < rs.size(); ++i) {
    if (rs[i].kind != LayerKind::Linear) continue;
    EXPECT_GT(rs[i].wavelets_in, 0u) << rs[i].name();
    EXPECT_EQ(rr[i + 1].wavelets_in, 0u) << rr[i + 1].name();
  }
}

TEST(ResidentRun, DecodeShapedProductsAreVectorsOverOutputsAndBeatStreaming) {
  // One token per sample (a decode step's shape): the resident products take the weights as
  // vector operands over the outputs; the streamed ones wait for every weight at the edge.
  const auto m = models::load_model_text(R"(
name: gemv64
dtype: fp16
batch: 2
sequence: 1
inputs: [{name: x, kind: activations, features: 64}]
layers:
  - {name: fc1, kind: linear, inputs: [x], features: 64, bias: true}
  - {name: fc2, kind: linear, inputs: [fc1], features: 48}
)",
                                         "gemv64.yaml")
                     .spec;
  SideBySide sb(m);
  sb.run(*sb.exec_s, 0);
  sb.run(*sb.exec_r, 1);
  const auto& rs = sb.exec_s->results();
  const auto& rr = sb.exec_r->results();
  ASSERT_EQ(rr.size(), 3u);
  expect_checked_streaming(rs);
  expect_checked(rr);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    sb.expect_same(rs[i].layer);
    EXPECT_EQ(rr[i + 1].wavelets_in, 0u);
    // Fewer cycles (fc1 747 against 863, fc2 527 against 566): no weight crosses the edge.
    EXPECT_LT(rr[i + 1].cycles(), rs[i].cycles()) << rs[i].layer;
  }
}

TEST(ResidentRun, ProductsOverSeventyTwoRowsAreBitIdenticalToStreaming) {
  // 72 used rows (a 3 x 72 grid, 8 bands of 9): every product dispatches its chunks through
  // the chunk table, in both forms (one token per PE): fc1 with its tokens as the vectors (at
  // most 2 outputs per row), fc2 with vectors over the outputs (up to 3 per row).
  const auto m = models::load_model_text(R"(
name: tall
dtype: fp16
batch: 3
sequence: 1
inputs: [{name: x, kind: activations, features: 72}]
layers:
  - {name: fc1, kind: linear, inputs: [x], features: 80, bias: true}
  - {name: fc2, kind: linear, inputs: [fc1], features: 160}
)",
                                         "tall.yaml")
                     .spec;
  SideBySide sb(m, {"wafer.width=3", "wafer.height=72", "fabric.edge_io_channels=8"});
  ASSERT_EQ(sb.streaming.layout.slices(), 72u);
  sb.run(*sb.exec_s, 0);
  sb.run(*sb.exec_r, 1);
  const auto& rs = sb.exec_s->results();
  const auto& rr = sb.exec_r->results();
  ASSERT_EQ(rr.size(), 3u);
  expect_checked_streaming(rs);
  expect_checked(rr);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    sb.expect_same(rs[i].layer);
    EXPECT_EQ(rr[i + 1].wavelets_in, 0u);
  }
}

TEST(ResidentRun, TinyTransformerPrefillMatchesTheHostLayerByLayer) {
  // Eight key/value heads: the attention kernel needs one group per used row.
  auto m = models::load_model("tiny-transformer", {"transformer.heads=8", "transformer.kv_heads=8"}).spec;
  SideBySide sb(m);
  sb.run(*sb.exec_r, 1);
  const auto& rr = sb.exec_r->results();
  expect_checked(rr);
  // The keys and values the prefill leaves (the KV cache a decode step would extend) are the
  // streamed run's, bit for bit.
  sb.run(*sb.exec_s, 0);
  for (const char* name : {"h0.k", "h0.v", "head"}) {
    sb.expect_same(name);
  }
}

// Decode steps of one attention layer with the KV cache in SRAM: the cache holds the prompt's
// keys and values (as a prefill leaves them), each step appends its token's and attends to all.
TEST(ResidentDecode, StepsAppendTheKvCacheAndMatchTheReferenceBitForBit) {
  namespace ref = models::reference;
  namespace cc = models::compiler;
  const std::uint32_t B = 2, H = 4, KV = 2, hd = 4, S = 8, P = 5, steps = 3;
  const auto platform = platforms::load_platform("tiny");
  const cc::Target target{platform.spec.wafer, platform.spec.fabric};
  const hw::DType dt = hw::DType::BF16;
  cc::CompiledModel cm;
  cm.target = target;
  cm.model.name = "decode";
  cm.model.dtype = models::DType::BF16;
  cm.layout = cc::StreamingLayout::plan(target, B, H * hd, target.fabric.colors - cc::ColorPlan::kFixed);
  ASSERT_EQ(cm.layout.tokens_per_pe, 1u);
  cm.colors = cc::ColorPlan::make(cm.layout.rows_per_band_used, false);
  cm.routes = cc::build_routes(target, cm.layout, cm.colors);
  const std::uint32_t G = cm.layout.slices();
  auto tensor = [&](const std::string& name, std::uint64_t features, std::uint32_t groups) {
    cc::Tensor t;
    t.name = name;
    t.features = features;
    t.map = cc::FeatureMap::heads(features, G, groups);
    t.dtype = dt;
    t.bytes = static_cast<std::uint32_t>(t.map.max_count() * 2);
    cm.tensors.push_back(t);
    return static_cast<std::uint32_t>(cm.tensors.size() - 1);
  };
  cm.tensors.push_back(models::resident::kv_cache_tensor("k_cache", cm.layout, KV, hd, S, dt));
  cm.tensors.push_back(models::resident::kv_cache_tensor("v_cache", cm.layout, KV, hd, S, hw::DType::F32));
  struct StepTensors {
    std::uint32_t q, k, v, out;
  };
  std::vector<StepTensors> st;
  for (std::uint32_t i = 0; i < steps; ++i) {
    const std::string n = std::to_string(i);
    st.push_back({tensor("q" + n, H * hd, KV), tensor("k" + n, KV * hd, KV), tensor("v" + n, KV * hd, KV),
                  tensor("out" + n, H * hd, KV)});
  }
  cc::SramArena arena(target.sram_bytes());
  for (auto& t : cm.tensors) t.addr = *arena.allocate(t.name, (t.bytes + 7) / 8 * 8, 32);

  // The host's sequences: the prompt's keys and values in the cache, the steps' tokens after.
  const ref::Tensor q = ref::Tensor::uniform(ref::Format::BF16, {B, S, H * hd}, -1, 1, 11);
  const ref::Tensor k = ref::Tensor::uniform(ref::Format::BF16, {B, S, KV * hd}, -1, 1, 12);
  const ref::Tensor v = ref::Tensor::uniform(ref::Format::BF16, {B, S, KV * hd}, -1, 1, 13);
  const ref::Tensor v32 = v.converted(ref::Format::FP32);
  const ref::Tensor want = ref::attention_forward(q, k, v, {H, KV, true});
  auto cache = [&](const ref::Tensor& x, std::uint32_t keys) {
    platforms::runtime::Bits c(std::uint64_t{B} * KV * hd * S, 0);
    for (std::uint32_t b = 0; b < B; ++b)
      for (std::uint32_t g = 0; g < KV; ++g)
        for (std::uint32_t d = 0; d < hd; ++d)
          for (std::uint32_t j = 0; j < keys; ++j)
            c[(std::uint64_t{b} * KV + g) * hd * S + d * S + j] =
                static_cast<std::uint32_t>(x.bits(x.at(std::uint64_t{b} * S + j, g * hd + d)));
    return c;
  };
  auto token = [&](const ref::Tensor& x, std::uint32_t pos) {
    platforms::runtime::Bits r;
    for (std::uint32_t b = 0; b < B; ++b)
      for (std::uint64_t f = 0; f < x.cols(); ++f)
        r.push_back(static_cast<std::uint32_t>(x.bits(x.at(std::uint64_t{b} * S + pos, f))));
    return r;
  };
  platforms::runtime::HostData data;
  data.preload.emplace_back(0, cache(k, P));
  data.preload.emplace_back(1, cache(v32, P));
  for (std::uint32_t i = 0; i < steps; ++i) {
    data.preload.emplace_back(st[i].q, token(q, P + i));
    data.preload.emplace_back(st[i].k, token(k, P + i));
    data.preload.emplace_back(st[i].v, token(v, P + i));
  }
  for (std::uint32_t i = 0; i < steps; ++i) {
    cc::KernelContext ctx{target, cm.layout, cm.colors, cm.tensors, arena, true, cc::Accumulate::Fp32, dt, "attn", {}};
    models::resident::DecodeAttentionArgs a;
    a.layer = "attn";
    a.q = st[i].q;
    a.k = st[i].k;
    a.v = st[i].v;
    a.out = st[i].out;
    a.k_cache = 0;
    a.v_cache = 1;
    a.heads = H;
    a.kv_heads = KV;
    a.head_dim = hd;
    a.capacity = S;
    a.position = P + i;
    cm.programs.push_back(models::resident::lower_decode_attention(ctx, a));
    ctx.release_scratch();
  }
  {
    cc::KernelContext ctx{target, cm.layout, cm.colors, cm.tensors, arena, true, cc::Accumulate::Fp32, dt, "attn", {}};
    models::resident::DecodeAttentionArgs a;
    a.layer = "attn";
    a.heads = H;
    a.kv_heads = KV;
    a.head_dim = hd;
    a.capacity = S;
    a.position = S;  // beyond the cache
    EXPECT_THROW(models::resident::lower_decode_attention(ctx, a), sim::InputError);
  }

  platforms::BuildOptions build;
  build.routes = cm.routes;
  sim::stats::Group stats("");
  platforms::Cluster cluster("cluster", platform.spec, build, stats);
  platforms::runtime::Executor exec(cm, cluster.wafer(0), std::move(data));
  sc_core::sc_start(exec.load_inputs());
  for (std::uint32_t i = 0; i < steps; ++i) {
    exec.start(i);
    sc_core::sc_start();
    exec.finish(i);
    const auto& r = exec.results().back();
    EXPECT_GT(r.bound.cycles, 0u);
    EXPECT_LE(r.bound.cycles, r.cycles());
    EXPECT_EQ(exec.read(st[i].out), token(want, P + i)) << "decode step " << i;
    EXPECT_EQ(exec.read(0), cache(k, P + i + 1)) << "keys after step " << i;
    EXPECT_EQ(exec.read(1), cache(v32, P + i + 1)) << "values after step " << i;
  }
  // Later tokens attend to more keys.
  EXPECT_LT(exec.results()[0].cycles(), exec.results()[2].cycles());
}

// The tiny transformer token by token on one wafer (the prompt filling the KV cache, then
// decode steps) beside its parallel prefill on another, with the same tokens.
TEST(ResidentDecode, TokenByTokenCacheEqualsTheParallelPrefillsKeysAndValues) {
  namespace cc = models::compiler;
  namespace rs = models::resident;
  namespace inf = platforms::inference;
  const std::vector<std::string> heads{"transformer.heads=8", "transformer.kv_heads=8"};
  const auto full = models::load_model("tiny-transformer", heads).spec;  // sequence 8, batch 2
  auto one_set = heads;
  one_set.push_back("sequence=1");
  const auto one = models::load_model("tiny-transformer", one_set).spec;
  const std::uint64_t S = full.sequence, B = full.batch, prompt = 5;
  const auto platform = platforms::load_platform("tiny");
  const cc::Target target{platform.spec.wafer, platform.spec.fabric};
  auto par = rs::compile_resident_program(full, target);
  auto dec = rs::compile_resident_decode(one, target, prompt, S, S);
  ASSERT_EQ(dec.position_start.size(), S);
  ASSERT_EQ(dec.attention.size(), S);
  auto data_p = platforms::runtime::make_host_data(par.cm, 3);
  auto data_d = platforms::runtime::make_host_data(dec.rp.cm, 3);
  ASSERT_EQ(data_p.host, data_d.host);  // the same parameters
  inf::add_position_inputs(dec, data_d, 3);
  // Position p of sample b gets the parallel run's token (b, p).
  const auto ids = static_cast<std::uint32_t>(par.cm.tensor("tokens"));
  const platforms::runtime::Bits* tokens = nullptr;
  for (const auto& [t, bits] : data_p.preload)
    if (t == ids) tokens = &bits;
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(data_d.preload.size(), S);
  for (std::uint64_t p = 0; p < S; ++p)
    for (std::uint64_t b = 0; b < B; ++b) data_d.preload[p].second.at(b) = tokens->at(b * S + p);
  inf::place_weights(par, data_p);
  inf::place_weights(dec.rp, data_d);

  // Two one-wafer platforms, each with its layout's routes.
  platforms::BuildOptions build_p, build_d;
  build_p.routes = par.cm.routes;
  build_d.routes = dec.rp.cm.routes;
  sim::stats::Group stats("");
  platforms::Cluster cluster_p("parallel", platform.spec, build_p, stats.group("parallel"));
  platforms::Cluster cluster_d("decode", platform.spec, build_d, stats.group("decode"));
  platforms::runtime::Executor ep(par.cm, cluster_p.wafer(0), std::move(data_p));
  platforms::runtime::Executor ed(dec.rp.cm, cluster_d.wafer(0), std::move(data_d));
  platforms::runtime::Bits k, v;                 // the parallel prefill's, read while they are live
  std::vector<platforms::runtime::Bits> logits;  // the token-by-token run's, per position
  auto run = [&](platforms::runtime::Executor& e, const rs::ResidentDecode* d) {
    sc_core::sc_start(e.load_inputs());
    for (std::size_t i = 0; i < e.steps(); ++i) {
      e.start(i);
      sc_core::sc_start();
      e.finish(i);
      if (d && e.results().back().layer == "head")
        logits.push_back(e.read(static_cast<std::uint32_t>(dec.rp.cm.tensor("head"))));
      if (!d && e.results().back().layer == "h0.attn") {
        k = e.read(static_cast<std::uint32_t>(par.cm.tensor("h0.k")));
        v = e.read(static_cast<std::uint32_t>(par.cm.tensor("h0.v")));
      }
      if (d)
        for (const auto& a : d->attention)
          if (a.program == i) {
            const auto c = inf::check_decode_attention(e, *d, a);
            EXPECT_TRUE(c.passed()) << a.args.layer << ": " << c.first_mismatch;
            EXPECT_EQ(c.compared, B * (8 * 2 + 8 * 2));  // (k, v) x 8 features, and 8 x 2 outputs, per sample
          }
    }
  };
  run(ep, nullptr);
  run(ed, &dec);
  expect_checked(ep.results());
  for (std::size_t i = 1; i < ed.results().size(); ++i) {  // attention steps: checked above
    const auto& r = ed.results()[i];
    for (const auto& c : r.checks) EXPECT_TRUE(c.passed()) << r.name() << " " << c.what << ": " << c.first_mismatch;
    EXPECT_EQ(r.checks.empty(), r.kind == LayerKind::Attention) << r.name();
    EXPECT_GT(r.bound.cycles, 0u) << r.name();
    EXPECT_LE(r.bound.cycles, r.cycles()) << r.name();
  }
  // The caches hold the parallel prefill's keys and values for every position, bit for bit
  // (values widened to fp32).
  ASSERT_EQ(k.size(), B * S * 16);
  const auto& a = dec.attention.back().args;
  const auto kc = ed.read(a.k_cache), vc = ed.read(a.v_cache);
  const std::uint64_t F = 8 * 2;  // kv heads x head_dim
  for (std::uint64_t b = 0; b < B; ++b)
    for (std::uint64_t f = 0; f < F; ++f)
      for (std::uint64_t j = 0; j < S; ++j) {
        const std::uint64_t at = b * F * S + f * S + j;
        EXPECT_EQ(kc[at], k[(b * S + j) * F + f]) << "key " << j << " feature " << f << " sample " << b;
        EXPECT_EQ(vc[at], v[(b * S + j) * F + f] << 16) << "value " << j << " feature " << f << " sample " << b;
      }
  // Every position's logits (prompt and decode) equal the parallel prefill's, bit for bit.
  const auto want = ep.read(static_cast<std::uint32_t>(par.cm.tensor("head")));
  ASSERT_EQ(logits.size(), S);
  const std::uint64_t V = 32;
  for (std::uint64_t p = 0; p < S; ++p)
    for (std::uint64_t b = 0; b < B; ++b)
      for (std::uint64_t f = 0; f < V; ++f)
        ASSERT_EQ(logits[p].at(b * V + f), want.at((b * S + p) * V + f)) << "position " << p << " sample " << b;
  // The check fails when what it compares is stale: position 5's step against tensors that
  // now hold position 7's key and value.
  EXPECT_GT(inf::check_decode_attention(ed, dec, dec.attention[prompt]).mismatches, 0u);
  // Decode steps attend to more keys than the first prompt positions.
  EXPECT_LT(ed.results()[dec.attention.front().program].cycles(), ed.results()[dec.attention.back().program].cycles());
}

// The prompt as one parallel prefill whose keys and values are copied into the KV caches, then
// decode steps on the same wafer, beside the token-by-token run with the same tokens on another:
// the same caches and the same logits at every position, bit for bit, in fewer cycles.
TEST(ResidentDecode, ParallelPrefillLeavesTheKvCacheForTheDecodeSteps) {
  namespace rs = models::resident;
  namespace inf = platforms::inference;
  namespace cc = models::compiler;
  const auto one = models::load_model("tiny-transformer", {"sequence=1"}).spec;  // 4 heads, 2 kv heads
  const std::uint64_t S = 8, B = one.batch, prompt = 5, V = 32;
  const auto whole = models::load_model("tiny-transformer", {fmt::format("sequence={}", prompt)}).spec;
  const auto platform = platforms::load_platform("tiny");
  const cc::Target target{platform.spec.wafer, platform.spec.fabric};
  auto par = rs::compile_resident_decode(one, target, prompt, S, S, cc::Accumulate::Fp32, &whole);
  auto tbt = rs::compile_resident_decode(one, target, prompt, S, S);
  ASSERT_TRUE(par.prefill.has_value());
  ASSERT_FALSE(tbt.prefill.has_value());
  ASSERT_EQ(par.fills.size(), 1u);
  ASSERT_EQ(par.position_start.size(), S - prompt);
  ASSERT_EQ(par.attention.size(), S - prompt);
  EXPECT_EQ(par.prefill->cm.layout.tokens_per_pe, prompt);
  EXPECT_EQ(par.prefill->cm.layout.columns, B);
  auto data_p = platforms::runtime::make_host_data(par.rp.cm, 3);
  auto data_pre = platforms::runtime::make_host_data(par.prefill->cm, 3);
  auto data_t = platforms::runtime::make_host_data(tbt.rp.cm, 3);
  ASSERT_EQ(data_pre.host, data_t.host);  // the same parameters
  inf::add_position_inputs(par, data_p, 3, &data_pre);
  inf::add_position_inputs(tbt, data_t, 3);
  // The same tokens: the prefill's token (b, p) is the token-by-token run's position p.
  ASSERT_EQ(data_pre.preload.size(), 1u);
  ASSERT_EQ(data_t.preload.size(), S);
  ASSERT_EQ(data_p.preload.size(), S - prompt);
  for (std::uint64_t p = 0; p < S; ++p)
    for (std::uint64_t b = 0; b < B; ++b)
      ASSERT_EQ(data_t.preload[p].second.at(b),
                p < prompt ? data_pre.preload[0].second.at(b * prompt + p) : data_p.preload[p - prompt].second.at(b));
  inf::place_weights(*par.prefill, data_pre);
  inf::place_weights(tbt.rp, data_t);

  platforms::BuildOptions build_p, build_t;
  build_p.routes = par.rp.cm.routes;
  build_t.routes = tbt.rp.cm.routes;
  sim::stats::Group stats("");
  platforms::Cluster cluster_p("parallel", platform.spec, build_p, stats.group("parallel"));
  platforms::Cluster cluster_t("tokens", platform.spec, build_t, stats.group("tokens"));
  platforms::runtime::Executor ep(par.prefill->cm, cluster_p.wafer(0), std::move(data_pre));
  platforms::runtime::Executor et(tbt.rp.cm, cluster_t.wafer(0), std::move(data_t));
  std::vector<platforms::runtime::Bits> logits_p, logits_t;  // per decode position / per position
  auto steps = [&](platforms::runtime::Executor& e, const rs::ResidentDecode& d, const inf::PrefillKv* kv,
                   std::vector<platforms::runtime::Bits>* logits) {
    for (std::size_t i = 0; i < e.steps(); ++i) {
      e.start(i);
      sc_core::sc_start();
      e.finish(i);
      const auto& r = e.results().back();
      for (const auto& c : r.checks) EXPECT_TRUE(c.passed()) << r.name() << " " << c.what << ": " << c.first_mismatch;
      EXPECT_LE(r.bound.cycles, r.cycles()) << r.name();
      if (logits && r.layer == "head") logits->push_back(e.read(static_cast<std::uint32_t>(d.rp.cm.tensor("head"))));
      if (&e == &ep && !kv) continue;  // the prefill: the executor's checks only
      for (const auto& c : inf::check_resident_step(e, d, i, kv)) {
        EXPECT_TRUE(c.passed()) << r.name() << " " << c.what << ": " << c.first_mismatch;
        EXPECT_GT(c.compared, 0u) << r.name();
      }
    }
  };
  // The parallel run: the prefill, then the fills and the decode steps on the same wafer.
  sc_core::sc_start(ep.load_inputs());
  steps(ep, par, nullptr, nullptr);
  expect_checked(ep.results());
  const auto prefill_logits = ep.read(static_cast<std::uint32_t>(par.prefill->cm.tensor("head")));
  const inf::PrefillKv kv = inf::read_prefill_kv(ep, par);
  const std::size_t n_prefill = ep.results().size();
  ep.continue_with(par.rp.cm, std::move(data_p));
  sc_core::sc_start(ep.load_inputs());
  steps(ep, par, &kv, &logits_p);
  ASSERT_EQ(ep.results().size(), n_prefill + par.rp.cm.programs.size());
  EXPECT_EQ(ep.results()[n_prefill].layer, "h0.attn.kv_fill");
  EXPECT_GT(ep.results()[n_prefill].bound.cycles, 0u);
  // A fill's check fails when the cache does not hold what the prefill left.
  inf::PrefillKv wrong = kv;
  wrong.k[0][7] ^= 1;
  EXPECT_EQ(inf::check_kv_cache_fill(ep, par, 0, wrong).mismatches, 1u);
  EXPECT_EQ(inf::check_kv_cache_fill(ep, par, 0, kv).mismatches, 0u);

  sc_core::sc_start(et.load_inputs());
  steps(et, tbt, nullptr, &logits_t);
  // The same caches and the same logits at every position.
  const auto& a = par.attention.back().args;
  const auto& at = tbt.attention.back().args;
  EXPECT_EQ(ep.read(a.k_cache), et.read(at.k_cache));
  EXPECT_EQ(ep.read(a.v_cache), et.read(at.v_cache));
  ASSERT_EQ(logits_t.size(), S);
  ASSERT_EQ(logits_p.size(), S - prompt);
  for (std::uint64_t p = 0; p < S; ++p)
    for (std::uint64_t b = 0; b < B; ++b)
      for (std::uint64_t f = 0; f < V; ++f)
        ASSERT_EQ(logits_t[p].at(b * V + f),
                  p < prompt ? prefill_logits.at((b * prompt + p) * V + f) : logits_p[p - prompt].at(b * V + f))
            << "position " << p << " sample " << b << " logit " << f;
  // Fewer cycles than feeding the prompt token by token (exact, deterministic counts; from the
  // weights' placement to the last step's end, the decode steps' token ids loaded in between).
  const std::uint64_t parallel = ep.results().back().end - ep.results().front().start;
  const std::uint64_t token_by_token = et.results().back().end - et.results().front().start;
  EXPECT_EQ(parallel, 23119u);
  EXPECT_EQ(token_by_token, 33639u);
  EXPECT_LT(parallel, token_by_token);
  // A model with learned positions cannot leave the cache by a parallel prefill.
  const auto gpt_one = models::load_model("tiny-transformer", {"sequence=1", "transformer.positions=learned"}).spec;
  const auto gpt_whole =
      models::load_model("tiny-transformer", {fmt::format("sequence={}", prompt), "transformer.positions=learned"})
          .spec;
  EXPECT_THROW(rs::compile_resident_decode(gpt_one, target, prompt, S, S, cc::Accumulate::Fp32, &gpt_whole),
               sim::InputError);
}

TEST(ResidentCli, CompilePrintsThePlanAndJson) {
  const auto r = test::wafersim("compile tiny-transformer --platform tiny --placement resident --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["placement"], "resident");
  EXPECT_EQ(j["wafers"], 1);
  EXPECT_FALSE(j["layers"].empty());
  EXPECT_GT(j["pipeline"]["tokens_per_s"].get<double>(), 0);
  const auto text = test::wafersim("compile gpt3-xl --platform wse2 --placement resident");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("pipeline    slowest stage"), std::string::npos) << text.out;
}

TEST(ResidentCli, ModelThatDoesNotFitExitsWithTwo) {
  const auto r = test::wafersim("compile llama3-70b --platform wse2 --placement resident", true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("short by"), std::string::npos) << r.out;
}

TEST(ResidentCli, RunPrintsPrefillAndDecode) {
  const test::TempDir dir;
  const std::string out = " --force --out " + dir.path().string();
  const auto r = test::wafersim("infer tiny --model tiny-mlp" + out, true);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("prefill"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all "), std::string::npos) << r.out;
  const auto no = test::wafersim("run tiny --model tiny-mlp --placement resident" + out, true);
  EXPECT_EQ(no.code, 2) << no.out;
  const auto dec = test::wafersim("infer tiny --model tiny-transformer --decode-tokens 3 --json" + out);
  ASSERT_EQ(dec.code, 0) << dec.out;
  const auto j = nlohmann::json::parse(dec.out);
  EXPECT_EQ(j["mismatches"], 0);
  EXPECT_EQ(j["inference"]["prompt_tokens"], 5);
  EXPECT_EQ(j["inference"]["decode_tokens"], 3);
  // The prompt in one parallel prefill, its keys and values copied into the caches, then the
  // decode steps; with --token-by-token the same decode steps after one position per step.
  EXPECT_EQ(j["inference"]["prompt"], "parallel prefill");
  EXPECT_EQ(j["inference"]["prefill_cycles"], 9769);
  EXPECT_EQ(j["inference"]["kv_cache_fill_cycles"], 76);
  EXPECT_EQ(j["inference"]["decode_cycles"], 13173);
  const auto tbt =
      test::wafersim("infer tiny --model tiny-transformer --decode-tokens 3 --token-by-token --json" + out);
  ASSERT_EQ(tbt.code, 0) << tbt.out;
  const auto jt = nlohmann::json::parse(tbt.out);
  EXPECT_EQ(jt["mismatches"], 0);
  EXPECT_EQ(jt["inference"]["prompt"], "token by token");
  EXPECT_EQ(jt["inference"]["prefill_cycles"], 20462);
  EXPECT_EQ(jt["inference"]["kv_cache_fill_cycles"], 0);
  EXPECT_EQ(jt["inference"]["decode_cycles"], 13173);
  EXPECT_LT(j["inference"]["cycles"].get<std::uint64_t>(), jt["inference"]["cycles"].get<std::uint64_t>());
  const auto lone = test::wafersim("infer tiny --model tiny-mlp --token-by-token" + out, true);
  EXPECT_EQ(lone.code, 2) << lone.out;
}

}  // namespace
}  // namespace wafersim::resident_test
