// Compiled layers on a simulated `tiny` wafer beyond the linear ones: elementwise kinds
// forward and backward with checked numerics, a compute-bound GEMM's share of the dense
// peak, the SRAM error of a model that does not fit, and the mapping of every layer kind.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <map>
#include <set>
#include <stdexcept>

#include "models/compiler/compiler.h"
#include "sim/errors.h"
#include "tests/support/model_rig.h"
#include "tests/support/run_wafersim.h"

namespace wafersim::compiler_layers_test {
namespace {

using models::LayerKind;
using models::compiler::Phase;

using test::expect_all_checked;

// Every elementwise kind, forward and backward, between two linear layers (so that every
// gradient is needed), with a residual add that makes one gradient accumulate.
const char* kElementwise = R"(
name: ew
dtype: bf16
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 16}]
layers:
  - {name: a, kind: linear, inputs: [x], features: 16}
  - {name: b, kind: linear, inputs: [x], features: 16}
  - {name: g, kind: gelu, inputs: [a]}
  - {name: s, kind: silu, inputs: [b]}
  - {name: r, kind: relu, inputs: [a]}
  - {name: m, kind: mul, inputs: [g, s]}
  - {name: w, kind: swiglu, inputs: [m, r]}
  - {name: sum, kind: add, inputs: [w, a]}
  - {name: out, kind: linear, inputs: [sum], features: 8}
)";

TEST(CompilerLayers, ElementwiseKindsForwardAndBackwardOnTiny) {
  test::ModelRun run("tiny", {}, kElementwise);
  const auto& results = run.run();
  std::set<std::pair<LayerKind, Phase>> seen;
  for (const auto& r : results) seen.insert({r.kind, r.phase});
  for (LayerKind k :
       {LayerKind::Add, LayerKind::Mul, LayerKind::Gelu, LayerKind::Silu, LayerKind::Relu, LayerKind::Swiglu})
    for (Phase p : {Phase::Forward, Phase::BackwardData})
      EXPECT_TRUE(seen.count({k, p})) << models::to_string(k) << " " << models::compiler::to_string(p);
  expect_all_checked(results);
}

// RMSNorm forward (inference): 20 features over the 8 rows (uneven slices), bit-exact with
// models/reference in fp16 and bf16.
std::string rmsnorm_model(const char* dtype) {
  return std::string("name: rms\ndtype: ") + dtype + R"(
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 20}]
layers:
  - {name: n, kind: rmsnorm, inputs: [x], epsilon: 0.001}
  - {name: fc, kind: linear, inputs: [n], features: 8}
)";
}

void run_rmsnorm(const char* dtype) {
  models::compiler::CompileOptions o;
  o.training = false;
  test::ModelRun run("tiny", {}, rmsnorm_model(dtype), o);
  const auto& results = run.run();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].kind, LayerKind::RmsNorm);
  ASSERT_EQ(results[0].checks.size(), 1u);
  EXPECT_EQ(results[0].checks[0].compared, 2u * 8 * 20);
  EXPECT_EQ(results[0].checks[0].reference, "models/reference rmsnorm_forward");
  expect_all_checked(results);
}

// One wafer per process (a fresh SystemC kernel): one test per format.
TEST(CompilerLayers, RmsNormForwardFp16MatchesTheReferenceBitForBit) { run_rmsnorm("fp16"); }
TEST(CompilerLayers, RmsNormForwardBf16MatchesTheReferenceBitForBit) { run_rmsnorm("bf16"); }

// Softmax forward and backward between linear layers, with a residual add so that the
// softmax's input gradient adds to one the add already wrote; 20 features over the 8 rows
// (uneven slices). Bit-exact with models/reference in fp16 and bf16.
std::string softmax_model(const char* dtype) {
  return std::string("name: sm\ndtype: ") + dtype + R"(
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 12}]
layers:
  - {name: a, kind: linear, inputs: [x], features: 20}
  - {name: p, kind: softmax, inputs: [a]}
  - {name: sum, kind: add, inputs: [p, a]}
  - {name: out, kind: linear, inputs: [sum], features: 8}
)";
}

// `cycles`: the exact simulated cycles of the forward and the backward (0: not checked).
void run_softmax(const char* dtype, std::array<std::uint64_t, 2> cycles = {}) {
  test::ModelRun run("tiny", {}, softmax_model(dtype));
  const auto& results = run.run();
  int seen = 0;
  for (const auto& r : results) {
    if (r.kind != LayerKind::Softmax) continue;
    ++seen;
    const std::uint64_t want = cycles[r.phase == Phase::Forward ? 0 : 1];
    if (want) {
      EXPECT_EQ(r.cycles(), want) << r.name();
    }
    ASSERT_EQ(r.checks.size(), 1u);
    EXPECT_EQ(r.checks[0].compared, 2u * 8 * 20);
    EXPECT_EQ(r.checks[0].reference,
              r.phase == Phase::Forward ? "models/reference softmax_forward" : "models/reference softmax_backward");
  }
  EXPECT_EQ(seen, 2);
  expect_all_checked(results);
}

// The simulation is deterministic: the exact cycles of this configuration.
TEST(CompilerLayers, SoftmaxForwardAndBackwardFp16MatchTheReferenceBitForBit) { run_softmax("fp16", {691, 469}); }
TEST(CompilerLayers, SoftmaxForwardAndBackwardBf16MatchTheReferenceBitForBit) { run_softmax("bf16"); }

// A softmax of attention's output: 2 heads of 2 dimensions over the 8 rows of one group (the
// HeadParts map: rows 0, 1 and 4, 5 hold a dimension each, the others nothing), where even
// slices would put the 4 features on other rows. The softmax keeps attention's map (it read
// them with its output's map before: 63 of 64 elements wrong forward, all 64 backward).
const char* kSoftmaxOfAttention = R"(
name: att4
dtype: bf16
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 4}]
layers:
  - {name: q, kind: linear, inputs: [x], features: 4}
  - {name: k, kind: linear, inputs: [x], features: 4}
  - {name: v, kind: linear, inputs: [x], features: 4}
  - {name: att, kind: attention, inputs: [q, k, v], heads: 2}
  - {name: p, kind: softmax, inputs: [att]}
  - {name: out, kind: linear, inputs: [p], features: 4}
)";

models::compiler::CompileOptions one_group() {
  models::compiler::CompileOptions o;
  o.layout = models::compiler::LayoutChoice::Columns;
  return o;
}

const models::compiler::Tensor& tensor_named(const models::compiler::CompiledModel& cm, const std::string& name) {
  for (const auto& t : cm.tensors)
    if (t.name == name) return t;
  throw std::logic_error("no tensor " + name);
}

TEST(CompilerLayers, SoftmaxOfAttentionOutputKeepsTheHeadsMapAndMatchesTheReferenceBitForBit) {
  test::ModelRun run("tiny", {}, kSoftmaxOfAttention, one_group());
  ASSERT_EQ(run.compiled.layout.groups, 1u);
  ASSERT_EQ(run.compiled.layout.slices(), 8u);
  const auto heads = tensor_named(run.compiled, "att").map;
  EXPECT_EQ(heads.kind, models::compiler::FeatureMap::Kind::HeadParts);
  EXPECT_EQ(tensor_named(run.compiled, "p").map, heads);
  EXPECT_EQ(tensor_named(run.compiled, "d:p").map, heads);
  const auto& results = run.run();
  int seen = 0;
  for (const auto& r : results) {
    if (r.kind != LayerKind::Softmax) continue;
    ++seen;
    const bool fwd = r.phase == Phase::Forward;
    // The simulation is deterministic: the exact cycles of this configuration.
    EXPECT_EQ(r.cycles(), fwd ? 330u : 179u) << r.name();
    ASSERT_EQ(r.checks.size(), 1u);
    EXPECT_EQ(r.checks[0].compared, 2u * 8 * 4);
    EXPECT_EQ(r.checks[0].reference, fwd ? "models/reference softmax_forward" : "models/reference softmax_backward");
  }
  EXPECT_EQ(seen, 2);
  expect_all_checked(results);
}

// Every other kind that works on each row's slice of its tensors, on attention's output
// (LayerNorm, RMSNorm, GELU, add, then softmax and a cross-entropy) and on attention's query
// (an RMSNorm of a linear output: the linear writes the heads' map), forward and backward.
const char* kNormsAroundAttention = R"(
name: att4n
dtype: bf16
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 4}, {name: labels, kind: labels}]
layers:
  - {name: q0, kind: linear, inputs: [x], features: 4}
  - {name: q, kind: rmsnorm, inputs: [q0]}
  - {name: k, kind: linear, inputs: [x], features: 4}
  - {name: v, kind: linear, inputs: [x], features: 4}
  - {name: att, kind: attention, inputs: [q, k, v], heads: 2}
  - {name: ln, kind: layernorm, inputs: [att]}
  - {name: rms, kind: rmsnorm, inputs: [att]}
  - {name: g, kind: gelu, inputs: [ln]}
  - {name: sum, kind: add, inputs: [g, rms]}
  - {name: sm, kind: softmax, inputs: [sum]}
  - {name: out, kind: linear, inputs: [sm], features: 4}
  - {name: loss, kind: cross_entropy, inputs: [out, labels]}
)";

TEST(CompilerLayers, NormsAndElementwiseAroundAttentionKeepItsMapAndMatchTheReference) {
  test::ModelRun run("tiny", {}, kNormsAroundAttention, one_group());
  const auto heads = tensor_named(run.compiled, "att").map;
  EXPECT_EQ(heads.kind, models::compiler::FeatureMap::Kind::HeadParts);
  for (const char* name : {"q0", "q", "ln", "rms", "g", "sum", "sm", "d:sm", "d:q0"})
    EXPECT_EQ(tensor_named(run.compiled, name).map, heads) << name;
  EXPECT_EQ(tensor_named(run.compiled, "out").map.kind, models::compiler::FeatureMap::Kind::Even);
  const auto& results = run.run();
  std::map<std::string, std::uint64_t> cycles;
  for (const auto& r : results) cycles[r.name()] = r.cycles();
  // The simulation is deterministic: the exact cycles of this configuration.
  const std::map<std::string, std::uint64_t> want{
      {"q forward", 297},   {"q backward-data", 612},   {"ln forward", 539}, {"ln backward-data", 937},
      {"rms forward", 297}, {"rms backward-data", 612}, {"g forward", 74},   {"sum forward", 9},
      {"sm forward", 330},  {"sm backward-data", 179}};
  for (const auto& [name, c] : want) EXPECT_EQ(cycles[name], c) << name;
  expect_all_checked(results);
}

// Where no map serves every tensor of a layer, code generation refuses it at compile time
// (exit 2) naming the layer: a softmax of attention's output whose rows hold dimensions of
// two heads each (its sums would not run in feature order), and an add of attention's output
// and an even tensor (a model input; q0, its RMSNorm q and its GELU g take the heads' map).
TEST(CompilerLayers, SoftmaxOrNormThatCannotKeepAttentionsMapIsRefusedNamingTheLayer) {
  const char* unordered = R"(
name: att16
dtype: bf16
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 16}]
layers:
  - {name: q, kind: linear, inputs: [x], features: 16}
  - {name: k, kind: linear, inputs: [x], features: 8}
  - {name: v, kind: linear, inputs: [x], features: 8}
  - {name: att, kind: attention, inputs: [q, k, v], heads: 4, kv_heads: 2}
  - {name: p, kind: softmax, inputs: [att]}
  - {name: out, kind: linear, inputs: [p], features: 4}
)";
  const char* shared = R"(
name: qn
dtype: bf16
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 4}]
layers:
  - {name: q0, kind: linear, inputs: [x], features: 4}
  - {name: q, kind: rmsnorm, inputs: [q0]}
  - {name: g, kind: gelu, inputs: [q0]}
  - {name: k, kind: linear, inputs: [x], features: 4}
  - {name: v, kind: linear, inputs: [x], features: 4}
  - {name: att, kind: attention, inputs: [q, k, v], heads: 2}
  - {name: sum, kind: add, inputs: [att, x]}
)";
  const auto platform = platforms::load_platform("tiny", {});
  const models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
  auto refusal = [&](const char* yaml) -> std::string {
    const models::LoadedModel m = models::load_model_text(yaml, "model.yaml");
    try {
      (void)models::compiler::compile(m.spec, target, one_group());
    } catch (const sim::InputError& e) {
      return e.what();
    }
    return "compiled";
  };
  const std::string a = refusal(unordered);
  EXPECT_NE(a.find("layer 'p': its reductions chain down the column in feature order, but att is laid out with "
                   "attention heads split by dimension over rows"),
            std::string::npos)
      << a;
  const std::string b = refusal(shared);
  EXPECT_NE(b.find("layer 'sum': its tensors are laid out differently (att: attention heads split by dimension over "
                   "rows, x: even slices)"),
            std::string::npos)
      << b;
  // Without code (a mapping only) attention falls back to even slices and is planned.
  const models::LoadedModel m = models::load_model_text(unordered, "model.yaml");
  models::compiler::CompileOptions o = one_group();
  o.emit = false;
  const auto cm = models::compiler::compile(m.spec, target, o);
  EXPECT_EQ(tensor_named(cm, "att").map.kind, models::compiler::FeatureMap::Kind::Even);
}

// The model with `causal: false` on every attention layer unless `causal`.
std::string with_mask(std::string model, bool causal) {
  if (causal) return model;
  for (std::size_t at = model.find("kind: attention,"); at != std::string::npos;
       at = model.find("kind: attention,", at + 1))
    model.insert(at + 16, " causal: false,");
  return model;
}

// Attention (causal unless `causal` is false), multi-head (8 heads of 4) and grouped-query (16 query heads of 2 or 4
// over 8 key/value heads), forward and backward, between linear layers; q feeds mha and gqa, k and v feed mha and gqa2,
// so their gradients accumulate. Every row of `tiny` holds one key/value group.
std::string attention_model(const char* dtype, int batch, int sequence, bool causal = true) {
  return with_mask(std::string("name: att\ndtype: ") + dtype + "\nbatch: " + std::to_string(batch) +
                       "\nsequence: " + std::to_string(sequence) + R"(
inputs: [{name: x, kind: activations, features: 16}]
layers:
  - {name: q, kind: linear, inputs: [x], features: 32}
  - {name: k, kind: linear, inputs: [x], features: 32}
  - {name: v, kind: linear, inputs: [x], features: 32}
  - {name: mha, kind: attention, inputs: [q, k, v], heads: 8}
  - {name: k2, kind: linear, inputs: [x], features: 16}
  - {name: v2, kind: linear, inputs: [x], features: 16}
  - {name: gqa, kind: attention, inputs: [q, k2, v2], heads: 16, kv_heads: 8}
  - {name: q2, kind: linear, inputs: [x], features: 64}
  - {name: gqa2, kind: attention, inputs: [q2, k, v], heads: 16, kv_heads: 8}
  - {name: out, kind: linear, inputs: [mha], features: 8}
  - {name: out2, kind: linear, inputs: [gqa], features: 8}
  - {name: out3, kind: linear, inputs: [gqa2], features: 8}
)",
                   causal);
}

// `cycles`: the exact simulated cycles of mha, gqa and gqa2 forward, then backward (0: not
// checked).
void run_attention(const char* dtype, int batch, int sequence, std::array<std::uint64_t, 6> cycles = {},
                   bool causal = true) {
  test::ModelRun run("tiny", {}, attention_model(dtype, batch, sequence, causal));
  const auto& results = run.run();
  int forward = 0, backward = 0;
  for (const auto& r : results) {
    if (r.kind != LayerKind::Attention) continue;
    const bool fwd = r.phase == Phase::Forward;
    const std::size_t at = (fwd ? 0 : 3) + (r.layer == "gqa" ? 1 : r.layer == "gqa2" ? 2 : 0);
    if (cycles[at]) {
      EXPECT_EQ(r.cycles(), cycles[at]) << r.name();
    }
    (fwd ? forward : backward)++;
    ASSERT_EQ(r.checks.size(), fwd ? 1u : 3u) << r.name();
    for (const auto& c : r.checks)
      EXPECT_EQ(c.reference, fwd ? "models/reference attention_forward" : "models/reference attention_backward");
  }
  EXPECT_EQ(forward, 3);
  EXPECT_EQ(backward, 3);
  expect_all_checked(results);
}

// Two samples of 8 tokens, 2 tokens per column: a sample spans four columns.
// The simulation is deterministic: the exact cycles of this configuration.
TEST(CompilerLayers, AttentionForwardAndBackwardBf16MatchTheReferenceBitForBit) {
  run_attention("bf16", 2, 8, {1381, 1608, 2192, 2493, 3168, 4138});
}
// Three samples of 5 tokens, 3 per column: columns hold the end of one sample and the start
// of the next.
TEST(CompilerLayers, AttentionWithSamplesAcrossColumnsFp16MatchesTheReferenceBitForBit) { run_attention("fp16", 3, 5); }

// Fewer key/value heads than rows: each group's heads are split by dimension over its rows
// (HeadParts maps) and every score, dP and sum chains down the column. On tiny's 8 rows:
// mha (2 heads of 8: 4 rows per group, 2 dimensions each), gqa (4 query heads over the same
// k and v, so their gradients accumulate), mqa (2 heads over 1 key/value head: one group over
// all 8 rows, 1 dimension each) and small (heads of 2 dimensions: 2 of a group's 4 rows hold
// them, the other 2 nothing).
std::string split_attention_model(const char* dtype, int batch, int sequence, bool causal = true) {
  return with_mask(std::string("name: att2\ndtype: ") + dtype + "\nbatch: " + std::to_string(batch) +
                       "\nsequence: " + std::to_string(sequence) + R"(
inputs: [{name: x, kind: activations, features: 16}]
layers:
  - {name: q, kind: linear, inputs: [x], features: 16}
  - {name: k, kind: linear, inputs: [x], features: 16}
  - {name: v, kind: linear, inputs: [x], features: 16}
  - {name: mha, kind: attention, inputs: [q, k, v], heads: 2}
  - {name: q2, kind: linear, inputs: [x], features: 32}
  - {name: gqa, kind: attention, inputs: [q2, k, v], heads: 4, kv_heads: 2}
  - {name: q3, kind: linear, inputs: [x], features: 16}
  - {name: k3, kind: linear, inputs: [x], features: 8}
  - {name: v3, kind: linear, inputs: [x], features: 8}
  - {name: mqa, kind: attention, inputs: [q3, k3, v3], heads: 2, kv_heads: 1}
  - {name: q4, kind: linear, inputs: [x], features: 8}
  - {name: k4, kind: linear, inputs: [x], features: 4}
  - {name: v4, kind: linear, inputs: [x], features: 4}
  - {name: small, kind: attention, inputs: [q4, k4, v4], heads: 4, kv_heads: 2}
  - {name: out, kind: linear, inputs: [mha], features: 8}
  - {name: out2, kind: linear, inputs: [gqa], features: 8}
  - {name: out3, kind: linear, inputs: [mqa], features: 8}
  - {name: out4, kind: linear, inputs: [small], features: 8}
)",
                   causal);
}

// `cycles`: the exact simulated cycles of mha, gqa, mqa and small forward, then backward (0:
// not checked).
void run_split_attention(const char* dtype, int batch, int sequence, std::array<std::uint64_t, 8> cycles = {},
                         bool causal = true) {
  test::ModelRun run("tiny", {}, split_attention_model(dtype, batch, sequence, causal));
  ASSERT_EQ(run.compiled.layout.slices(), 8u);
  for (const auto& t : run.compiled.tensors) {
    if (t.name == "k" || t.name == "q3" || t.name == "k4") {
      EXPECT_EQ(t.map.kind, models::compiler::FeatureMap::Kind::HeadParts) << t.name;
    }
  }
  const auto& results = run.run();
  std::set<std::string> forward, backward;
  for (const auto& r : results) {
    if (r.kind != LayerKind::Attention) continue;
    const bool fwd = r.phase == Phase::Forward;
    (fwd ? forward : backward).insert(r.layer);
    const std::size_t at = (fwd ? 0 : 4) + (r.layer == "gqa" ? 1 : r.layer == "mqa" ? 2 : r.layer == "small" ? 3 : 0);
    if (cycles[at]) {
      EXPECT_EQ(r.cycles(), cycles[at]) << r.name();
    }
    ASSERT_EQ(r.checks.size(), fwd ? 1u : 3u) << r.name();
    for (const auto& c : r.checks)
      EXPECT_EQ(c.reference, fwd ? "models/reference attention_forward" : "models/reference attention_backward");
  }
  const std::set<std::string> all{"mha", "gqa", "mqa", "small"};
  EXPECT_EQ(forward, all);
  EXPECT_EQ(backward, all);
  expect_all_checked(results);
}

// The simulation is deterministic: the exact cycles of this configuration.
TEST(CompilerLayers, AttentionWithHeadsSplitOverRowsBf16MatchesTheReferenceBitForBit) {
  run_split_attention("bf16", 2, 8, {1846, 3381, 5251, 1879, 3516, 6618, 10318, 3766});
}
TEST(CompilerLayers, AttentionWithHeadsSplitOverRowsAndSamplesAcrossColumnsFp16MatchesTheReference) {
  run_split_attention("fp16", 3, 5);
}

// Without the causal mask (`causal: false`): every query sees its whole sample, so columns
// also gather the keys and values of later tokens (from the east) and backward records go
// both ways; bit-exact with models/reference in the same configurations as above.
TEST(CompilerLayers, AttentionWithoutCausalMaskBf16MatchesTheReferenceBitForBit) {
  run_attention("bf16", 2, 8, {}, false);
}
TEST(CompilerLayers, AttentionWithoutCausalMaskAndSamplesAcrossColumnsFp16MatchesTheReference) {
  run_attention("fp16", 3, 5, {}, false);
}
TEST(CompilerLayers, AttentionWithHeadsSplitOverRowsWithoutCausalMaskBf16MatchesTheReference) {
  run_split_attention("bf16", 2, 8, {2072, 3690, 5606, 2054, 4052, 7515, 11371, 4459}, false);
}
TEST(CompilerLayers, AttentionWithHeadsSplitOverRowsWithoutCausalMaskFp16MatchesTheReference) {
  run_split_attention("fp16", 3, 5, {}, false);
}

// Inference without the mask still gathers along the row westward: the model takes the two
// west row-chain colors (a causal inference model does not).
TEST(CompilerLayers, AttentionWithoutCausalMaskForInferenceTakesTheWestColors) {
  models::compiler::CompileOptions o;
  o.training = false;
  test::ModelRun run("tiny", {}, attention_model("fp16", 3, 5, false), o);
  EXPECT_TRUE(run.compiled.colors.with_west);
  const auto& results = run.run();
  ASSERT_EQ(results.size(), 12u);  // nine linear and three attention forward steps
  expect_all_checked(results);
  const models::LoadedModel causal = models::load_model_text(attention_model("fp16", 3, 5), "att.yaml");
  const auto platform = platforms::load_platform("tiny", {});
  o.emit = false;
  const auto cm = models::compiler::compile(causal.spec, {platform.spec.wafer, platform.spec.fabric}, o);
  EXPECT_FALSE(cm.colors.with_west);
}

// 256 tokens x 128 features -> 128 on the 8 x 8 wafer, accumulating in fp16: 32 tokens and
// 16 input features per PE, enough work per streamed weight to be compute bound.
const char* kGemm = R"(
name: gemm
dtype: fp16
batch: 1
sequence: 256
inputs: [{name: x, kind: activations, features: 128}]
layers:
  - {name: fc, kind: linear, inputs: [x], features: 128}
)";

TEST(CompilerLayers, ComputeBoundGemmReachesSixtyPercentOfDensePeak) {
  models::compiler::CompileOptions o;
  o.training = false;
  o.accumulate = models::compiler::Accumulate::Native;
  test::ModelRun run("tiny", {}, kGemm, o);
  const auto& results = run.run();
  ASSERT_EQ(results.size(), 1u);
  expect_all_checked(results);
  const auto& r = results[0];
  const auto& t = run.compiled.target;
  EXPECT_EQ(r.flops, 2u * 256 * 128 * 128);
  EXPECT_EQ(r.bound.binds, models::compiler::Binding::Compute);
  const double peak_per_cycle = static_cast<double>(t.wafer.pe_count()) * t.peak_flops_per_cycle(hw::DType::F16);
  const double fraction = static_cast<double>(r.flops) / (static_cast<double>(r.cycles()) * peak_per_cycle);
  EXPECT_GE(fraction, 0.60) << r.cycles() << " cycles";
  // The simulation is deterministic: the exact figures of this configuration.
  EXPECT_EQ(r.cycles(), 25652u);
  EXPECT_EQ(r.bound.cycles, 20992u);
}

TEST(CompilerLayers, ModelThatDoesNotFitNamesLayerPeAndShortfall) {
  const models::LoadedModel m = models::load_model_text(R"(
name: big
dtype: fp16
batch: 1
sequence: 4096
inputs: [{name: x, kind: activations, features: 64}]
layers:
  - {name: fc, kind: linear, inputs: [x], features: 64}
)",
                                                        "big.yaml");
  const auto platform = platforms::load_platform("tiny", {});
  const models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
  try {
    (void)models::compiler::compile(m.spec, target, {});
    FAIL() << "expected the SRAM error";
  } catch (const sim::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("layer 'fc' does not fit the SRAM"), std::string::npos) << msg;
    EXPECT_NE(msg.find("PE (0, "), std::string::npos) << msg;
    EXPECT_NE(msg.find("short by"), std::string::npos) << msg;
  }
  // The same through the CLI: exit code 2 (bad input).
  const auto r = test::wafersim("compile tiny-transformer --platform tiny --model-set sequence=4096", true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("does not fit the SRAM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("short by"), std::string::npos) << r.out;
}

TEST(CompilerLayers, EveryKindOfTheTinyTransformerIsMapped) {
  const models::LoadedModel m = models::load_model("tiny-transformer");
  const auto platform = platforms::load_platform("tiny", {});
  const models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
  models::compiler::CompileOptions o;
  o.emit = false;
  const auto cm = models::compiler::compile(m.spec, target, o);
  std::set<std::pair<LayerKind, Phase>> seen;
  for (const auto& p : cm.programs) {
    seen.insert({p.kind, p.phase});
    EXPECT_GT(p.bound.cycles, 0u) << p.name();
    EXPECT_GT(p.sram.max_bytes, 0u) << p.name();
    EXPECT_EQ(p.rows * p.columns, 64u) << p.name();
  }
  for (auto kp : std::vector<std::pair<LayerKind, Phase>>{{LayerKind::Embedding, Phase::Forward},
                                                          {LayerKind::Embedding, Phase::BackwardWeights},
                                                          {LayerKind::RmsNorm, Phase::Forward},
                                                          {LayerKind::RmsNorm, Phase::BackwardData},
                                                          {LayerKind::RmsNorm, Phase::BackwardWeights},
                                                          {LayerKind::Attention, Phase::Forward},
                                                          {LayerKind::Attention, Phase::BackwardData},
                                                          {LayerKind::CrossEntropy, Phase::Forward},
                                                          {LayerKind::CrossEntropy, Phase::BackwardData}})
    EXPECT_TRUE(seen.count(kp)) << models::to_string(kp.first) << " " << models::compiler::to_string(kp.second);
}

TEST(CompilerLayers, CompileGpt3XlOnWse2PrintsTheWholeMapping) {
  const auto r = test::wafersim("compile gpt3-xl --platform wse2 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "gpt3-xl");
  // Training the embedding and the norms keeps one row group (docs/compiler.md).
  EXPECT_EQ(j["layout"]["kind"], "columns");
  EXPECT_EQ(j["layout"]["groups"], 1);
  // 24 blocks of 12 layers, embedding, final norm, head, loss: forward, then backward.
  std::size_t attention = 0, forward = 0;
  for (const auto& s : j["steps"]) {
    EXPECT_GT(s["bound"]["cycles"].get<std::uint64_t>(), 0u) << s.dump();
    if (s["kind"] == "attention") {
      ++attention;
      // 16 heads over 780 rows: each head split over 48 or 49 rows (2 or 3 dimensions each).
      // The forward has PE code (a sample's 2048 keys and values fit beside what is
      // resident); the backward's records of every later query do not, so it is planned.
      EXPECT_EQ(s["code"], s["phase"] == "forward" ? "pe" : "analytical") << s.dump();
      EXPECT_LE(s["sram_max_bytes"].get<std::uint64_t>(), 49152u) << s.dump();
    }
    // 780 rows: the streamed matmul runs its chunks in loops of one task, whatever the rows.
    if (s["kind"] == "linear") {
      EXPECT_EQ(s["code"], "pe") << s.dump();
    }
    if (s["phase"] == "forward") ++forward;
  }
  EXPECT_EQ(forward, 24u * 12 + 4);
  EXPECT_EQ(attention, 48u);
  EXPECT_LE(j["colors"]["used"].get<std::uint32_t>(), 24u);
}

}  // namespace
}  // namespace wafersim::compiler_layers_test
