// The weight-resident pipeline simulated: linear chains on a column of PEs per layer, all
// regions at once, activations over the fabric; bit-exact with the reference's order, never
// faster than its bound, and faster per token than the layer-by-layer run.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <systemc>

#include "models/reference/linear.h"
#include "models/resident/resident_plan.h"
#include "models/resident/resident_program.h"
#include "platforms/cluster.h"
#include "platforms/inference/pipeline_run.h"
#include "platforms/inference/place_weights.h"
#include "platforms/runtime/executor.h"
#include "sim/errors.h"
#include "tests/support/pipe_rig.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::resident_pipeline_test {
namespace {
using models::resident::PipelineProgram;
using models::resident::StageKind;
using platforms::inference::PipelineResult;
using test::differences;
using test::PipeRig;

models::ModelSpec with_batch(const std::string& preset, std::uint64_t batch) {
  return models::load_model(preset, {fmt::format("batch={}", batch)}).spec;
}

// Six layers, fp16: linear, silu, linear, relu, linear, gelu, linear, linear, linear.
models::ModelSpec deep_chain(std::uint64_t batch) {
  const std::string yaml = fmt::format(R"(name: deep-chain
dtype: fp16
batch: {}
sequence: 1
inputs:
  - {{name: x, kind: activations, features: 24}}
layers:
  - {{name: l1, kind: linear, inputs: [x], features: 40, bias: true}}
  - {{name: a1, kind: silu, inputs: [l1]}}
  - {{name: l2, kind: linear, inputs: [a1], features: 32}}
  - {{name: a2, kind: relu, inputs: [l2]}}
  - {{name: l3, kind: linear, inputs: [a2], features: 48, bias: true}}
  - {{name: a3, kind: gelu, inputs: [l3]}}
  - {{name: l4, kind: linear, inputs: [a3], features: 16, bias: true}}
  - {{name: l5, kind: linear, inputs: [l4], features: 24}}
  - {{name: l6, kind: linear, inputs: [l5], features: 16, bias: true}}
)",
                                       batch);
  return models::load_model_text(yaml, "deep-chain.yaml").spec;
}

// The layer-by-layer resident run of the same model (every layer on the whole wafer in
// turn) on a second wafer of the same kernel; built before the simulation starts.
struct LayerByLayer {
  models::resident::ResidentProgram rp;
  std::unique_ptr<sim::stats::Group> stats;
  std::unique_ptr<platforms::Cluster> cluster;
  std::unique_ptr<platforms::runtime::Executor> exec;
  LayerByLayer(const std::vector<std::string>& set, const models::ModelSpec& m) {
    const auto platform = platforms::load_platform("tiny", set);
    const models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
    rp = models::resident::compile_resident_program(m, target);
    auto data = platforms::runtime::make_host_data(rp.cm, 1);
    platforms::inference::place_weights(rp, data);
    platforms::BuildOptions build;
    build.routes = rp.cm.routes;
    stats = std::make_unique<sim::stats::Group>("");
    cluster = std::make_unique<platforms::Cluster>("lbl", platform.spec, build, *stats);
    exec = std::make_unique<platforms::runtime::Executor>(rp.cm, cluster->wafer(0), std::move(data));
  }
  // Cycles from the first layer's start to the end of the last one before the loss (step 0
  // places the weights; the pipeline has no loss).
  std::uint64_t run() {
    sc_core::sc_start(exec->load_inputs());
    for (std::size_t i = 0; i < exec->steps(); ++i) {
      exec->start(i);
      sc_core::sc_start();
      exec->finish(i);
      for (const auto& c : exec->results().back().checks) EXPECT_TRUE(c.passed()) << c.what;
    }
    std::uint64_t end = 0;
    for (const auto& r : exec->results())
      if (r.kind != models::LayerKind::CrossEntropy) end = r.end;
    return end - exec->results().at(1).start;
  }
};

const std::vector<std::string> k16 = {"wafer.width=16", "wafer.height=16"};

// Checks, exact cycles, and every bound below them.
void expect_run(PipeRig& rig, const PipelineResult& r, std::uint64_t cycles) {
  test::expect_checked_run(rig, r, cycles);
  // The plan's pipeline bound (for its own regions) is below the simulated run too.
  const models::resident::ClusterTarget ct{
      {rig.platform.spec.wafer, rig.platform.spec.fabric}, 1, rig.platform.spec.system.io_bandwidth_bits_per_s()};
  const auto plan = models::resident::plan_resident(rig.program.model, ct);
  EXPECT_GT(plan.prefill_cycles(rig.program.model.batch), 0u);
  EXPECT_GE(r.cycles(), plan.prefill_cycles(rig.program.model.batch));
}

TEST(ResidentPipeline, TinyMlpMatchesTheReferenceAndBeatsLayerByLayer) {
  const auto m = models::load_model("tiny-mlp").spec;
  PipeRig rig({}, m, {models::resident::PipelineCut::RowsOut, "cluster", 0});
  LayerByLayer lbl({}, m);
  ASSERT_EQ(rig.program.stages.size(), 2u);
  EXPECT_EQ(rig.program.stages[0].fused, "act");
  EXPECT_EQ(rig.program.replicas, 2u);
  EXPECT_EQ(rig.program.stages[0].rows, 4u);
  EXPECT_EQ(rig.program.bound_cycles(), 320u);
  const PipelineResult r = rig.run();
  expect_run(rig, r, 1033);
  // The plan's pipeline bound (its own regions) is below the simulated pipeline too.
  const models::resident::ClusterTarget ct{
      {rig.platform.spec.wafer, rig.platform.spec.fabric}, 1, rig.platform.spec.system.io_bandwidth_bits_per_s()};
  const auto plan = models::resident::plan_resident(m, ct);
  EXPECT_GE(r.cycles(), plan.prefill_cycles(m.batch));
  EXPECT_GT(plan.prefill_cycles(m.batch), 0u);
  // 4 tokens in flight on 4 pipelines: done before the layer-by-layer forward.
  const std::uint64_t layered = lbl.run();
  EXPECT_EQ(layered, 1776u);
  EXPECT_LT(r.cycles(), layered);
}

// Eight more tokens cost the slowest stage's interval each at least.
TEST(ResidentPipeline, TinyMlpSteadyState) {
  PipeRig a({}, with_batch("tiny-mlp", 8), {models::resident::PipelineCut::RowsOut, "a"});
  PipeRig b({}, with_batch("tiny-mlp", 16), {models::resident::PipelineCut::RowsOut, "b"});
  const PipelineResult ra = a.run();
  expect_run(a, ra, 2220);
  const PipelineResult rb = b.run();
  expect_run(b, rb, 4332);
  EXPECT_GE(rb.cycles() - ra.cycles(), 8 * b.program.interval_cycles());
}

// On tiny's 8 rows the layer-by-layer run of 4 tokens ends first (its FMACs chained on an
// ordered microthread); on 16 x 16 (below) the pipeline does.
TEST(ResidentPipeline, DeepChainOnTinyAgainstLayerByLayer) {
  const auto m = deep_chain(4);
  PipeRig rig({}, m);
  LayerByLayer lbl({}, m);
  ASSERT_EQ(rig.program.stages.size(), 6u);
  const PipelineResult r = rig.run();
  expect_run(rig, r, 3050);
  const std::uint64_t layered = lbl.run();
  EXPECT_EQ(layered, 2759u);
  EXPECT_GT(r.cycles(), layered);
}

TEST(ResidentPipeline, DeepChainOn16x16BeatsLayerByLayer) {
  const auto m = deep_chain(4);
  PipeRig rig(k16, m);
  LayerByLayer lbl(k16, m);
  const PipelineResult r = rig.run();
  expect_run(rig, r, 2265);
  const std::uint64_t layered = lbl.run();
  EXPECT_EQ(layered, 2817u);
  EXPECT_LT(r.cycles(), layered);
}

TEST(ResidentPipeline, DeepChainSixteenTokensOn16x16) {
  PipeRig rig(k16, deep_chain(16));
  expect_run(rig, rig.run(), 5625);
}

// Rows-in: every row continues the sums of the row above, so each output still sums its
// inputs in order after the bias: the same bits as rows-out.
TEST(ResidentPipeline, RowsInGivesTheSameBits) {
  const auto m = models::load_model("tiny-mlp").spec;
  PipeRig in({}, m, {models::resident::PipelineCut::RowsIn, "in"});
  PipeRig out({}, m, {models::resident::PipelineCut::RowsOut, "out"});
  EXPECT_EQ(in.program.bound_cycles(), 424u);
  const PipelineResult ri = in.run();
  expect_run(in, ri, 5633);
  const PipelineResult ro = out.run();
  expect_run(out, ro, 1164);
  EXPECT_EQ(ri.output, ro.output);
}

TEST(ResidentPipeline, RowsInDeepChainOn16x16) {
  PipeRig rig(k16, deep_chain(4), {models::resident::PipelineCut::RowsIn});
  expect_run(rig, rig.run(), 15393);
}

// Linear layers only: the outputs are models/reference linear_forward's, chained, bit for bit.
TEST(ResidentPipeline, LinearChainIsModelsReferenceBitForBit) {
  const auto m = models::load_model_text(R"(name: linear-chain
dtype: fp16
batch: 3
sequence: 2
inputs:
  - {name: x, kind: activations, features: 20}
layers:
  - {name: l1, kind: linear, inputs: [x], features: 12, bias: true}
  - {name: l2, kind: linear, inputs: [l1], features: 28}
  - {name: l3, kind: linear, inputs: [l2], features: 10, bias: true}
)",
                                         "linear-chain.yaml")
                     .spec;
  PipeRig rig({}, m);
  const PipelineResult r = rig.run();
  expect_run(rig, r, 1117);
  namespace ref = models::reference;
  ref::Tensor x(ref::Format::FP16, models::Shape{3, 2, 20});
  for (std::size_t i = 0; i < x.size(); ++i) x.set_bits(i, rig.program.input[i]);
  for (const auto& s : rig.program.stages) {
    ref::Tensor w(ref::Format::FP16, models::Shape{1, s.f_in, s.f_out});
    for (std::size_t i = 0; i < w.size(); ++i) w.set_bits(i, s.weight[i]);
    ref::Tensor b(ref::Format::FP16, models::Shape{1, 1, s.f_out});
    for (std::size_t i = 0; i < s.bias_values.size(); ++i) b.set_bits(i, s.bias_values[i]);
    x = ref::linear_forward(x, w, s.bias ? &b : nullptr);
  }
  ASSERT_EQ(x.size(), r.output.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x.bits(i), r.output[i]) << i;
}

TEST(ResidentPipeline, ModelsItDoesNotCoverAreCleanErrors) {
  const auto platform = platforms::load_platform("tiny");
  const models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
  try {
    models::resident::compile_pipeline(models::load_model("tiny-transformer").spec, target, 1);
    FAIL() << "tiny-transformer is not a linear chain";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not covered yet"), std::string::npos) << e.what();
  }
}

// Linear layers with RMSNorm layers between them (bf16), each norm a stage of its own.
models::ModelSpec norm_chain() {
  return models::load_model_text(R"(name: norm-chain
dtype: bf16
batch: 8
sequence: 1
inputs:
  - {name: x, kind: activations, features: 16}
layers:
  - {name: up, kind: linear, inputs: [x], features: 32, bias: true}
  - {name: act, kind: silu, inputs: [up]}
  - {name: norm1, kind: rmsnorm, inputs: [act], epsilon: 1.0e-5}
  - {name: down, kind: linear, inputs: [norm1], features: 16}
  - {name: norm2, kind: rmsnorm, inputs: [down]}
  - {name: head, kind: linear, inputs: [norm2], features: 24, bias: true}
)",
                                 "norm-chain.yaml")
      .spec;
}

// An RMSNorm stage: every row of its column receives the whole input anyway, takes its
// statistics in the reference's order and normalises its own features; the outputs equal
// models/reference rmsnorm_forward's between the linear layers, bit for bit.
TEST(ResidentPipeline, RmsNormStagesMatchTheReference) {
  const auto m = norm_chain();
  PipeRig rig({}, m);
  ASSERT_EQ(rig.program.stages.size(), 5u);
  EXPECT_EQ(rig.program.stages[1].kind, StageKind::RmsNorm);
  EXPECT_EQ(rig.program.stages[3].kind, StageKind::RmsNorm);
  EXPECT_FALSE(models::resident::is_norm(rig.program.stages[2].kind));
  EXPECT_EQ(rig.program.stages[1].x, 1u);
  const PipelineResult r = rig.run();
  expect_run(rig, r, 2690);
  // The expectation depends on the norms: with another epsilon it differs from the run.
  PipelineProgram other = rig.program;
  other.stages[1].epsilon = 0.5;
  EXPECT_GT(differences(other, r), 0u);
  // Norms need the rows-out cut.
  const models::compiler::Target target{rig.platform.spec.wafer, rig.platform.spec.fabric};
  EXPECT_THROW(models::resident::compile_pipeline(m, target, 1, models::resident::PipelineCut::RowsIn),
               sim::InputError);
}

// Residual adds: the skip (an earlier stage's input) travels with the activations, each stage
// from there on sending it after its outputs, and the add's rows sum their features of the two.
// Two pre-norm MLP sublayers (rmsnorm, linear + gelu or silu, linear, add), bf16.
TEST(ResidentPipeline, ResidualAddsCarryTheSkipAndMatchTheReference) {
  const auto m = models::load_model_text(R"(name: residual-chain
dtype: bf16
batch: 8
sequence: 1
inputs:
  - {name: x, kind: activations, features: 16}
layers:
  - {name: n1, kind: rmsnorm, inputs: [x]}
  - {name: up1, kind: linear, inputs: [n1], features: 32, bias: true}
  - {name: a1, kind: gelu, inputs: [up1]}
  - {name: down1, kind: linear, inputs: [a1], features: 16}
  - {name: r1, kind: add, inputs: [down1, x]}
  - {name: n2, kind: rmsnorm, inputs: [r1]}
  - {name: up2, kind: linear, inputs: [n2], features: 32}
  - {name: a2, kind: silu, inputs: [up2]}
  - {name: down2, kind: linear, inputs: [a2], features: 16, bias: true}
  - {name: r2, kind: add, inputs: [r1, down2]}
)",
                                         "residual-chain.yaml")
                     .spec;
  PipeRig rig({}, m);
  const auto& st = rig.program.stages;
  ASSERT_EQ(st.size(), 8u);
  EXPECT_EQ(st[3].kind, StageKind::Add);
  EXPECT_EQ(st[3].skip_from, 0u);
  EXPECT_EQ(st[7].skip_from, 4u);
  for (std::size_t k : {0, 1, 2, 4, 5, 6}) EXPECT_EQ(st[k].carry_out, 16u) << k;
  EXPECT_EQ(st[0].carry_in, 0u);
  EXPECT_EQ(st[1].carry_in, 16u);
  EXPECT_EQ(st[3].carry_in, 16u);
  EXPECT_EQ(st[3].carry_out, 0u);
  const PipelineResult r = rig.run();
  expect_run(rig, r, 3560);
  // The expectation depends on which input is the skip.
  PipelineProgram other = rig.program;
  other.stages[7].skip_from = 5;
  EXPECT_GT(differences(other, r), 0u);
  // Residual connections that overlap are not covered (a clean input error).
  const models::compiler::Target target{rig.platform.spec.wafer, rig.platform.spec.fabric};
  const auto overlap = models::load_model_text(R"(name: overlap
dtype: bf16
batch: 2
sequence: 1
inputs:
  - {name: x, kind: activations, features: 16}
layers:
  - {name: l1, kind: linear, inputs: [x], features: 16}
  - {name: l2, kind: linear, inputs: [l1], features: 16}
  - {name: r1, kind: add, inputs: [l2, l1]}
  - {name: r2, kind: add, inputs: [r1, x]}
)",
                                               "overlap.yaml")
                           .spec;
  try {
    models::resident::compile_pipeline(overlap, target, 1);
    FAIL() << "overlapping residual connections";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
  EXPECT_THROW(models::resident::compile_pipeline(m, target, 1, models::resident::PipelineCut::RowsIn),
               sim::InputError);
}

// A Llama-style MLP sublayer twice: rmsnorm, gate and up of one input as one gated stage (each
// row both projections of its features, then SwiGLU), down, residual add.
TEST(ResidentPipeline, SwigluSublayersAsGatedStagesMatchTheReference) {
  const auto m = models::load_model_text(R"(name: swiglu-mlp
dtype: bf16
batch: 8
sequence: 1
inputs:
  - {name: x, kind: activations, features: 16}
layers:
  - {name: n1, kind: rmsnorm, inputs: [x]}
  - {name: gate1, kind: linear, inputs: [n1], features: 32}
  - {name: up1, kind: linear, inputs: [n1], features: 32}
  - {name: act1, kind: swiglu, inputs: [gate1, up1]}
  - {name: down1, kind: linear, inputs: [act1], features: 16}
  - {name: r1, kind: add, inputs: [x, down1]}
  - {name: n2, kind: rmsnorm, inputs: [r1]}
  - {name: gate2, kind: linear, inputs: [n2], features: 32}
  - {name: up2, kind: linear, inputs: [n2], features: 32}
  - {name: act2, kind: swiglu, inputs: [gate2, up2]}
  - {name: down2, kind: linear, inputs: [act2], features: 16}
  - {name: r2, kind: add, inputs: [r1, down2]}
)",
                                         "swiglu-mlp.yaml")
                     .spec;
  PipeRig rig({}, m);
  const auto& st = rig.program.stages;
  ASSERT_EQ(st.size(), 8u);
  EXPECT_EQ(st[1].kind, StageKind::Gated);
  EXPECT_EQ(st[1].up, "up1");
  EXPECT_EQ(st[1].fused, "act1");
  EXPECT_EQ(st[1].fused_kind, models::LayerKind::Swiglu);
  const PipelineResult r = rig.run();
  expect_run(rig, r, 4685);
  // The expectation depends on the up projection.
  PipelineProgram other = rig.program;
  other.stages[1].weight2[0] ^= 0x4000;
  EXPECT_GT(differences(other, r), 0u);
  // Two projections of one input without swiglu after them are not covered.
  const models::compiler::Target target{rig.platform.spec.wafer, rig.platform.spec.fabric};
  const auto fan = models::load_model_text(R"(name: fan
dtype: bf16
batch: 2
sequence: 1
inputs:
  - {name: x, kind: activations, features: 16}
layers:
  - {name: a, kind: linear, inputs: [x], features: 16}
  - {name: b, kind: linear, inputs: [x], features: 16}
  - {name: s, kind: add, inputs: [a, b]}
)",
                                           "fan.yaml")
                       .spec;
  EXPECT_THROW(models::resident::compile_pipeline(fan, target, 1), sim::InputError);
}

TEST(ResidentPipeline, Cli) {
  const test::TempDir dir;
  const std::string out = " --force --out " + dir.path().string();
  const auto r = test::wafersim("infer tiny --model tiny-mlp --pipeline --json" + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cycles"], 1033);
  EXPECT_EQ(j["bound_cycles"], 320);
  EXPECT_EQ(j["replicas"], 2);
  EXPECT_EQ(j["tokens"], 4);
  EXPECT_EQ(j["checked"], 32);
  EXPECT_EQ(j["mismatches"], 0);
  EXPECT_EQ(j["stages"].size(), 2u);
  const auto text = test::wafersim("infer tiny --model tiny-mlp --pipeline" + out);
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("1033 simulated"), std::string::npos) << text.out;
  const auto one = test::wafersim("infer tiny --model tiny-mlp --pipeline --pipeline-replicas 1 --json" + out);
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_EQ(nlohmann::json::parse(one.out)["cycles"], 1164);
  const auto bad = test::wafersim("infer tiny --model tiny-mlp --pipeline --pipeline-replicas 5" + out, true);
  EXPECT_EQ(bad.code, 2) << bad.out;
  const auto tf = test::wafersim("infer tiny --model tiny-transformer --pipeline" + out, true);
  EXPECT_EQ(tf.code, 2) << tf.out;
  EXPECT_NE(tf.out.find("not covered yet"), std::string::npos) << tf.out;
  const auto streaming = test::wafersim("infer tiny --model tiny-mlp --placement streaming --pipeline" + out, true);
  EXPECT_EQ(streaming.code, 2) << streaming.out;
}

// The layer-by-layer run of the chain with 2 tokens per PE: every product checked (its FMACs on
// one accumulator must not overlap: with unordered asynchronous ones l3 differed in 60 of 768 outputs).
TEST(ResidentPipeline, LayerByLayerChainWithTwoTokensPerPeIsChecked) {
  LayerByLayer lbl({}, deep_chain(16));
  EXPECT_EQ(lbl.run(), 4324u);
  for (const auto& r : lbl.exec->results()) {
    if (r.kind == models::LayerKind::Linear && r.layer != "weights") {
      EXPECT_FALSE(r.checks.empty()) << r.layer;
    }
  }
}

// Eight tokens per PE (the products' vectors over the tokens): checked too.
TEST(ResidentPipeline, LayerByLayerEightTokensPerPeIsChecked) {
  LayerByLayer lbl({}, with_batch("tiny-mlp", 64));
  EXPECT_EQ(lbl.run(), 4474u);
}

// Replicas: pipelines on bands of rows share the tokens (m on band m % K); the same bits.
TEST(ResidentPipeline, ReplicasShareTheTokens) {
  const auto m = with_batch("tiny-mlp", 16);
  PipeRig one({}, m, {models::resident::PipelineCut::RowsOut, "one", 1});
  PipeRig eight({}, m, {models::resident::PipelineCut::RowsOut, "eight", 0});
  EXPECT_EQ(eight.program.replicas, 8u);
  EXPECT_EQ(eight.program.stages[0].rows, 1u);
  // Both forms of a stage, and so the same bits from each: fc1 with 32 outputs on its one row
  // FMACs over them; with 4 outputs per row (one pipeline of 8 rows) it takes dot products.
  EXPECT_EQ(eight.program.stages[0].form, models::resident::LinearForm::Fmac);
  EXPECT_EQ(one.program.stages[0].form, models::resident::LinearForm::Dot);
  EXPECT_EQ(eight.program.bound_cycles(), 1344u);
  const PipelineResult r1 = one.run();
  expect_run(one, r1, 4332);
  const PipelineResult r8 = eight.run();
  expect_run(eight, r8, 3782);
  EXPECT_EQ(r1.output, r8.output);
}

// The six-stage chain on 16 x 16 (2 replicas chosen): 16 more tokens cost at least one
// interval each per replica; with 32 tokens the layer-by-layer run ends first (its products
// vectorise over a PE's tokens, their FMACs chained on an ordered microthread).
TEST(ResidentPipeline, ReplicasOn16x16SteadyState) {
  PipeRig a(k16, deep_chain(16), {models::resident::PipelineCut::RowsOut, "a", 0});
  PipeRig b(k16, deep_chain(32), {models::resident::PipelineCut::RowsOut, "b", 0});
  LayerByLayer lbl(k16, deep_chain(32));
  EXPECT_EQ(b.program.replicas, 2u);
  const PipelineResult ra = a.run();
  expect_run(a, ra, 4898);
  const PipelineResult rb = b.run();
  expect_run(b, rb, 8594);
  EXPECT_GE(rb.cycles() - ra.cycles(), 8 * b.program.interval_cycles());
  const std::uint64_t layered = lbl.run();
  EXPECT_EQ(layered, 4391u);
  EXPECT_GT(rb.cycles(), layered);
}

}  // namespace
}  // namespace wafersim::resident_pipeline_test
