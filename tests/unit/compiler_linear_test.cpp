// Linear layers in the weight-streaming placement, forward and backward, on a simulated
// wafer: every result equal bit for bit to the host's computation in the PE's order, and the
// analytical bound never above the simulated cycles.

#include <gtest/gtest.h>

#include "tests/support/model_rig.h"

namespace wafersim {
namespace {

const char* kTwoLinear = R"(
name: lin2
dtype: fp16
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 16}]
layers:
  - {name: fc1, kind: linear, inputs: [x], features: 24, bias: true}
  - {name: fc2, kind: linear, inputs: [fc1], features: 12}
)";

using test::expect_all_checked;

TEST(CompilerLinear, ForwardAndBackwardOnTinyAreBitExact) {
  test::ModelRun run("tiny", {}, kTwoLinear);
  const auto& results = run.run();
  ASSERT_EQ(results.size(), 2u + 3u);  // fc1, fc2 forward; fc2 data + weights; fc1 weights
  expect_all_checked(results);
}

// Regression: a bf16 32 -> 64 -> 32 MLP with 64 tokens (8 per PE) and fp32 accumulation had
// 481 wrong elements in fc2 forward. Its fp32 FMACs ran asynchronously, each step spanning
// two cycles of SRAM ports, so a later FMAC (or the chunk's send of the partial sums, an
// fmov, which does not wait for the datapath) could take its step before an earlier one that
// wrote the same partial sums, and read them stale. fp32 FMACs are now synchronous, and the
// send adds -0 (an exact identity) on the datapath (docs/compiler.md, "Known limitations").
const char* kMlp = R"(
name: mlp
dtype: bf16
batch: 8
sequence: 8
inputs: [{name: x, kind: activations, features: 32}]
layers:
  - {name: fc1, kind: linear, inputs: [x], features: 64}
  - {name: act, kind: gelu, inputs: [fc1]}
  - {name: fc2, kind: linear, inputs: [act], features: 32}
)";

TEST(CompilerLinear, Bf16MlpWithEightTokensPerPeAndFp32AccumulationIsBitExact) {
  test::ModelRun run("tiny", {}, kMlp);
  ASSERT_EQ(run.compiled.layout.tokens_per_pe, 8u);
  const auto& results = run.run();
  ASSERT_EQ(results.size(), 3u + 4u);  // fc1, act, fc2 forward; fc2 data + weights, act data; fc1 weights
  expect_all_checked(results);
}

}  // namespace
}  // namespace wafersim
