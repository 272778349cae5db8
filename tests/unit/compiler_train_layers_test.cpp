// Compiled training layers on a simulated `tiny` wafer, checked bit for bit against
// models/reference: RMSNorm backward (data and gamma gradients), LayerNorm forward and
// backward, embedding forward and table gradient, cross-entropy forward and backward, the
// tiny-mlp preset end to end; and the regressions of one tensor read twice by an elementwise
// layer and of a linear with 256 tokens per PE.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "hw/numerics/softfloat.h"
#include "models/compiler/compiler.h"
#include "tests/support/model_rig.h"

namespace wafersim::compiler_train_layers_test {
namespace {

using models::LayerKind;
using models::compiler::Phase;

using test::expect_all_checked;

const platforms::runtime::StepResult& step(const std::deque<platforms::runtime::StepResult>& results,
                                           const std::string& layer, Phase phase) {
  auto it =
      std::find_if(results.begin(), results.end(), [&](const auto& r) { return r.layer == layer && r.phase == phase; });
  if (it == results.end()) throw std::runtime_error("no step " + layer);
  return *it;
}

// RMSNorm of 20 features over the 8 rows (uneven slices); its input also feeds a residual
// add, so its data gradient adds into the gradient the add wrote.
std::string rmsnorm_training(const char* dtype) {
  return std::string("name: rms\ndtype: ") + dtype + R"(
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 16}]
layers:
  - {name: a, kind: linear, inputs: [x], features: 20}
  - {name: n, kind: rmsnorm, inputs: [a], epsilon: 0.001}
  - {name: r, kind: add, inputs: [n, a]}
  - {name: fc, kind: linear, inputs: [r], features: 8}
)";
}

void run_rmsnorm_backward(const char* dtype) {
  test::ModelRun run("tiny", {}, rmsnorm_training(dtype));
  const auto& results = run.run();
  const auto& data = step(results, "n", Phase::BackwardData);
  ASSERT_EQ(data.checks.size(), 1u);
  EXPECT_EQ(data.checks[0].what, "d:a");
  EXPECT_EQ(data.checks[0].reference, "models/reference rmsnorm_backward");
  EXPECT_EQ(data.checks[0].compared, 2u * 8 * 20);
  const auto& gamma = step(results, "n", Phase::BackwardWeights);
  ASSERT_EQ(gamma.checks.size(), 1u);
  EXPECT_EQ(gamma.checks[0].what, "n.weight.grad");
  EXPECT_EQ(gamma.checks[0].compared, 20u);
  EXPECT_EQ(gamma.wavelets_out, 20u);
  expect_all_checked(results);
}

TEST(CompilerTrainLayers, RmsNormBackwardFp16MatchesTheReferenceBitForBit) { run_rmsnorm_backward("fp16"); }
TEST(CompilerTrainLayers, RmsNormBackwardBf16MatchesTheReferenceBitForBit) { run_rmsnorm_backward("bf16"); }

// swiglu [fc1, fc1]: both input gradients are one tensor, the second adds into the first.
// Regression: the program wrote dup (accumulating into a gradient not yet written) before
// dgate (which then overwrote it). Checked by the executor (PE order) and here independently
// against dy (silu(a) + a silu'(a)) in double.
const char* kSwigluSame = R"(
name: sw
dtype: fp16
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 16}]
layers:
  - {name: fc1, kind: linear, inputs: [x], features: 16}
  - {name: w, kind: swiglu, inputs: [fc1, fc1]}
  - {name: out, kind: linear, inputs: [w], features: 8}
)";

TEST(CompilerTrainLayers, SwigluOfOneTensorTwiceGetsBothGradients) {
  test::ModelRun run("tiny", {}, kSwigluSame);
  auto& exec = *run.exec;
  sc_core::sc_start(exec.load_inputs());
  const auto& cm = run.compiled;
  const auto a = static_cast<std::uint32_t>(cm.tensor("fc1"));
  const auto dy = static_cast<std::uint32_t>(cm.tensor("d:w"));
  const auto da = static_cast<std::uint32_t>(cm.tensor("d:fc1"));
  bool checked = false;
  for (std::size_t i = 0; i < exec.steps(); ++i) {
    const bool target = cm.programs[i].layer == "w" && cm.programs[i].phase == Phase::BackwardData;
    std::vector<std::uint32_t> av, dyv;
    if (target) {
      av = exec.read(a);
      dyv = exec.read(dy);
    }
    exec.start(i);
    sc_core::sc_start();
    const auto& r = exec.finish(i);
    for (const auto& c : r.checks) EXPECT_TRUE(c.passed()) << r.name() << " " << c.what << ": " << c.first_mismatch;
    if (!target) continue;
    ASSERT_EQ(r.checks.size(), 1u);  // one gradient tensor, compared once
    EXPECT_EQ(r.checks[0].what, "d:fc1");
    const std::vector<std::uint32_t> got = exec.read(da);
    ASSERT_EQ(got.size(), 2u * 8 * 16);
    for (std::size_t k = 0; k < got.size(); ++k) {
      namespace nm = hw::numerics;
      const double x = nm::to_double(hw::DType::F16, av[k]), g = nm::to_double(hw::DType::F16, dyv[k]);
      const double s = 1 / (1 + std::exp(-x));
      const double up = x * s, gate = x * s * (1 + x * (1 - s));  // d/dup and d/dgate of x s(x) x
      const double scale = std::fabs(g) * (std::fabs(up) + std::fabs(gate));
      EXPECT_NEAR(nm::to_double(hw::DType::F16, got[k]), g * (up + gate), 0.02 * scale + 1e-3) << k;
    }
    checked = true;
  }
  EXPECT_TRUE(checked);
}

// Cross-entropy over 20 logits on the 8 rows (uneven slices): the wafer's per-token max, sum
// of exponentials and label logit, the loss the host forms from them (it takes the log), and
// the logits' gradient, all bit for bit with models/reference.
std::string cross_entropy_model(const char* dtype) {
  return std::string("name: ce\ndtype: ") + dtype + R"(
batch: 2
sequence: 8
inputs:
  - {name: x, kind: activations, features: 16}
  - {name: labels, kind: labels}
layers:
  - {name: logits, kind: linear, inputs: [x], features: 20}
  - {name: loss, kind: cross_entropy, inputs: [logits, labels]}
)";
}

void run_cross_entropy(const char* dtype) {
  test::ModelRun run("tiny", {}, cross_entropy_model(dtype));
  const auto& results = run.run();
  const auto& fwd = step(results, "loss", Phase::Forward);
  ASSERT_EQ(fwd.checks.size(), 2u);
  EXPECT_EQ(fwd.checks[0].compared, 2u * 8 * 3);
  EXPECT_EQ(fwd.checks[1].reference, "models/reference cross_entropy_forward");
  ASSERT_TRUE(fwd.checks[1].value.has_value());
  // Random logits of about unit size over 20 classes: the mean loss is near log 20.
  EXPECT_GT(*fwd.checks[1].value, 1.5);
  EXPECT_LT(*fwd.checks[1].value, 5.0);
  const auto& bwd = step(results, "loss", Phase::BackwardData);
  ASSERT_EQ(bwd.checks.size(), 1u);
  EXPECT_EQ(bwd.checks[0].what, "d:logits");
  EXPECT_EQ(bwd.checks[0].compared, 2u * 8 * 20);
  expect_all_checked(results);
}

TEST(CompilerTrainLayers, CrossEntropyFp16MatchesTheReferenceBitForBit) { run_cross_entropy("fp16"); }
TEST(CompilerTrainLayers, CrossEntropyBf16MatchesTheReferenceBitForBit) { run_cross_entropy("bf16"); }
TEST(CompilerTrainLayers, CrossEntropyFp32MatchesTheReferenceBitForBit) { run_cross_entropy("fp32"); }

// The tiny-mlp preset (linear, GELU, linear, cross-entropy) forward and backward end to end.
TEST(CompilerTrainLayers, TinyMlpPresetTrainsOneStepEndToEnd) {
  test::ModelRun run("tiny", {}, "tiny-mlp");
  const auto& results = run.run();
  // forward 4; backward: loss, fc2 data + weights, act, fc1 weights (x is an input).
  ASSERT_EQ(results.size(), 9u);
  for (const auto& r : results) EXPECT_FALSE(r.checks.empty()) << r.name();
  expect_all_checked(results);
  const auto& fwd = step(results, "loss", Phase::Forward);
  ASSERT_EQ(fwd.checks.size(), 2u);
  ASSERT_TRUE(fwd.checks[1].value.has_value());
  EXPECT_GT(*fwd.checks[1].value, 0.5);
}

// Two edge channels: bands of several rows, so the gamma gradient of the rows above and below
// each band's anchor is relayed to it in the last column before it leaves east.
TEST(CompilerTrainLayers, RmsNormGammaGradientLeavesThroughTheAnchorsOfMultiRowBands) {
  test::ModelRun run("tiny", {"fabric.edge_io_channels=2"}, rmsnorm_training("bf16"));
  ASSERT_EQ(run.compiled.layout.bands.size(), 2u);
  bool above = false, below = false;  // rows relayed south and north to an anchor
  for (const auto& b : run.compiled.layout.bands) {
    above = above || b.anchor > b.slices.front();
    below = below || b.anchor < b.slices.back();
  }
  EXPECT_TRUE(above && below);
  const auto& results = run.run();
  const auto& gamma = step(results, "n", Phase::BackwardWeights);
  ASSERT_EQ(gamma.checks.size(), 1u);
  EXPECT_EQ(gamma.checks[0].compared, 20u);
  expect_all_checked(results);
}

// Regression: a linear forward with 256 tokens per PE and 64 features on tiny stopped with a
// fabric deadlock report. It was no deadlock: no wavelet moved for over 1000 cycles (tiny's
// watchdog then) while the PEs holding queued wavelets were busy in long vector instructions;
// it runs with 2000. tiny's watchdog is now 10000 cycles, the platform default.
const char* kLongColumns = R"(
name: long
dtype: fp16
batch: 8
sequence: 256
inputs: [{name: x, kind: activations, features: 64}]
layers:
  - {name: fc, kind: linear, inputs: [x], features: 64}
)";

TEST(CompilerTrainLayers, LinearWith256TokensPerPeAnd64FeaturesRuns) {
  models::compiler::CompileOptions o;
  o.training = false;
  test::ModelRun run("tiny", {}, kLongColumns, o);
  ASSERT_EQ(run.compiled.layout.tokens_per_pe, 256u);
  const auto& results = run.run();
  ASSERT_EQ(results.size(), 1u);
  expect_all_checked(results);
}

// Embedding (vocabulary 24, 20 features: uneven slices) forward and table gradient, with
// repeated token ids so the scatter-add sums several rows: bit for bit with models/reference.
std::string embedding_model(const char* dtype) {
  return std::string("name: emb\ndtype: ") + dtype + R"(
batch: 2
sequence: 8
inputs: [{name: ids, kind: tokens}]
layers:
  - {name: embed, kind: embedding, inputs: [ids], vocabulary: 24, features: 20}
  - {name: fc, kind: linear, inputs: [embed], features: 8}
)";
}

void run_embedding(const char* dtype) {
  test::ModelRun run("tiny", {}, embedding_model(dtype));
  const auto& results = run.run();
  const auto& fwd = step(results, "embed", Phase::Forward);
  ASSERT_EQ(fwd.checks.size(), 1u);
  EXPECT_EQ(fwd.checks[0].compared, 2u * 8 * 20);
  EXPECT_EQ(fwd.wavelets_in, 24u * 20);  // the table, once
  const auto& grad = step(results, "embed", Phase::BackwardWeights);
  ASSERT_EQ(grad.checks.size(), 1u);
  EXPECT_EQ(grad.checks[0].what, "embed.weight.grad");
  EXPECT_EQ(grad.checks[0].compared, 24u * 20);
  EXPECT_EQ(grad.wavelets_out, 24u * 20);
  // 16 tokens drawn from 24 ids: some id repeats (else the scatter-add order is not tested).
  const auto& ids = run.exec->data().preload.front().second;
  std::set<std::uint32_t> distinct(ids.begin(), ids.end());
  EXPECT_LT(distinct.size(), ids.size());
  expect_all_checked(results);
}

TEST(CompilerTrainLayers, EmbeddingBf16MatchesTheReferenceBitForBit) { run_embedding("bf16"); }
TEST(CompilerTrainLayers, EmbeddingFp32MatchesTheReferenceBitForBit) { run_embedding("fp32"); }

// Learned positions: 3 samples of 5 tokens over 5 columns (3 tokens per PE, so columns hold
// the end of one sample and the start of the next): each token's output adds its position's
// row; the position gradient sums each position over the samples, in sample order.
void run_learned_positions(const char* dtype) {
  const std::string model = std::string("name: emb\ndtype: ") + dtype + R"(
batch: 3
sequence: 5
inputs: [{name: ids, kind: tokens}]
layers:
  - {name: embed, kind: embedding, inputs: [ids], vocabulary: 24, features: 20, learned_positions: true}
  - {name: fc, kind: linear, inputs: [embed], features: 8}
)";
  test::ModelRun run("tiny", {}, model);
  ASSERT_EQ(run.compiled.layout.tokens_per_pe, 3u);
  const auto& results = run.run();
  const auto& fwd = step(results, "embed", Phase::Forward);
  ASSERT_EQ(fwd.checks.size(), 1u);
  EXPECT_EQ(fwd.checks[0].compared, 3u * 5 * 20);
  EXPECT_EQ(fwd.wavelets_in, (24u + 5) * 20);  // the table and the position table, once
  const auto& grad = step(results, "embed", Phase::BackwardWeights);
  ASSERT_EQ(grad.checks.size(), 2u);
  EXPECT_EQ(grad.checks[0].what, "embed.weight.grad");
  EXPECT_EQ(grad.checks[1].what, "embed.positions.grad");
  EXPECT_EQ(grad.checks[1].compared, 5u * 20);
  EXPECT_EQ(grad.wavelets_out, (24u + 5) * 20);
  expect_all_checked(results);
}

TEST(CompilerTrainLayers, EmbeddingWithLearnedPositionsBf16MatchesTheReferenceBitForBit) {
  run_learned_positions("bf16");
}
TEST(CompilerTrainLayers, EmbeddingWithLearnedPositionsFp32MatchesTheReferenceBitForBit) {
  run_learned_positions("fp32");
}

// LayerNorm (20 features, uneven slices) forward and backward, its data gradient adding into
// the residual's: bit for bit with models/reference.
std::string layernorm_training(const char* dtype) {
  return std::string("name: ln\ndtype: ") + dtype + R"(
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 16}]
layers:
  - {name: a, kind: linear, inputs: [x], features: 20}
  - {name: n, kind: layernorm, inputs: [a], epsilon: 0.001}
  - {name: r, kind: add, inputs: [n, a]}
  - {name: fc, kind: linear, inputs: [r], features: 8}
)";
}

void run_layernorm(const char* dtype, std::vector<std::string> set = {}) {
  test::ModelRun run("tiny", std::move(set), layernorm_training(dtype));
  const auto& results = run.run();
  const auto& fwd = step(results, "n", Phase::Forward);
  ASSERT_EQ(fwd.checks.size(), 1u);
  EXPECT_EQ(fwd.checks[0].reference, "models/reference layernorm_forward");
  EXPECT_EQ(fwd.checks[0].compared, 2u * 8 * 20);
  const auto& data = step(results, "n", Phase::BackwardData);
  ASSERT_EQ(data.checks.size(), 1u);
  EXPECT_EQ(data.checks[0].what, "d:a");
  const auto& params = step(results, "n", Phase::BackwardWeights);
  ASSERT_EQ(params.checks.size(), 2u);
  EXPECT_EQ(params.checks[0].what, "n.weight.grad");
  EXPECT_EQ(params.checks[1].what, "n.bias.grad");
  EXPECT_EQ(params.wavelets_out, 40u);
  expect_all_checked(results);
}

TEST(CompilerTrainLayers, LayerNormFp16MatchesTheReferenceBitForBit) { run_layernorm("fp16"); }
TEST(CompilerTrainLayers, LayerNormBf16MatchesTheReferenceBitForBit) { run_layernorm("bf16"); }
TEST(CompilerTrainLayers, LayerNormInMultiRowBandsMatchesTheReference) {
  run_layernorm("fp32", {"fabric.edge_io_channels=2"});
}

}  // namespace
}  // namespace wafersim::compiler_train_layers_test
