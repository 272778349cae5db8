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

}  // namespace
}  // namespace wafersim
