// Linear layers in the weight-streaming placement, forward and backward, on a simulated
// wafer: every result equal bit for bit to the host's computation in the PE's order, and the
// analytical bound never above the simulated cycles.

#include <gtest/gtest.h>

#include "models/compiler/chunk_loop.h"
#include "tests/support/model_rig.h"

namespace wafersim::compiler_linear_test {
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
// 481 wrong elements in fc2 forward. Its fp32 FMACs ran asynchronously and unordered, each
// step spanning two cycles of SRAM ports, so a later FMAC (or the chunk's send of the partial
// sums) could take its step before an earlier one that wrote the same partial sums, and read
// them stale. Every vector instruction on the partials now runs on ordered microthread 0, and
// the send adds -0 (an exact identity) on the datapath (docs/compiler.md, "Known limitations").
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

// One row of 4 PEs, 16 tokens (4 per PE), 64 -> 64 fp16 with bias, fp32 partial sums: each
// FMAC takes one weight wavelet over the PE's 4 tokens (a repeating fabric input) for a run of
// outputs, on ordered microthread 0, so a weight costs its step's two port-word writes of fp32
// partials on the one write port: exact cycles (the simulation is deterministic), within 6% of
// the SRAM bound (13102 cycles with three issues per weight, 46264 with synchronous FMACs).
const char* kRow = R"(
name: row
dtype: fp16
batch: 1
sequence: 16
inputs: [{name: x, kind: activations, features: 64}]
layers:
  - {name: y, kind: linear, inputs: [x], features: 64, bias: true}
)";

TEST(CompilerLinear, Fp32ProductOnOneRowRunsAtItsWritePortBound) {
  models::compiler::CompileOptions o;
  o.training = false;
  test::ModelRun run("tiny", {"wafer.width=4", "wafer.height=1", "fabric.edge_io_channels=1"}, kRow, o);
  const auto& results = run.run();
  ASSERT_EQ(results.size(), 1u);
  expect_all_checked(results);
  EXPECT_EQ(results[0].bound.binds, models::compiler::Binding::SramPorts);
  EXPECT_EQ(results[0].bound.cycles, 8384u);
  EXPECT_EQ(results[0].cycles(), 8830u);
  EXPECT_LE(results[0].cycles() * 100, results[0].bound.cycles * 106);
}

// The row with native fp16 partial sums and 256 inputs: a step of 4 tokens reads and writes
// one port word each, so the product takes one cycle per weight wavelet arriving at a PE (256 x
// 64 weights and the bias streamed past every PE of the row) and a fixed cost (the first
// weight's way along the row, the epilogue) of 381 cycles: 2.3% over the wavelets, 1.9% over
// the bound. With fp32 partials (above) a weight takes two cycles.
TEST(CompilerLinear, NativePartialsTakeOneCyclePerArrivingWeightOnOneRow) {
  models::compiler::CompileOptions o;
  o.training = false;
  o.accumulate = models::compiler::Accumulate::Native;
  std::string wide = kRow;
  wide.replace(wide.find("features: 64}"), 12, "features: 256");
  test::ModelRun run("tiny", {"wafer.width=4", "wafer.height=1", "fabric.edge_io_channels=1"}, wide, o);
  const auto& results = run.run();
  ASSERT_EQ(results.size(), 1u);
  expect_all_checked(results);
  const std::uint64_t wavelets = 256 * 64 + 64;
  EXPECT_EQ(results[0].cycles(), 16829u);
  EXPECT_EQ(results[0].bound.cycles, 16512u);
  EXPECT_GE(results[0].cycles(), wavelets);
  EXPECT_LE(results[0].cycles() * 1000, wavelets * 1025);
}

// More used rows than the core has task ids (64): a 3 x 72 grid with one edge channel per 9
// rows, so 8 bands of 9 used rows; 6 tokens over 3 columns (2 per PE: first, middle and last
// column programs of the weight gradient). fc1's 80 outputs give rows 0..7 two features and
// the others one; fc2's 40 leave every other row or so none (chunks with nothing to send, so
// a buffer's reuse waits for an earlier send). Each row's program is one task whose chunks are
// dispatched through the chunk table (docs/compiler.md, "Chunk loops").
const char* kTall = R"(
name: tall
dtype: fp16
batch: 3
sequence: 2
inputs: [{name: x, kind: activations, features: 72}]
layers:
  - {name: fc1, kind: linear, inputs: [x], features: 80, bias: true}
  - {name: fc2, kind: linear, inputs: [fc1], features: 40}
)";

TEST(CompilerLinear, ForwardAndBackwardOverSeventyTwoRowsAreBitExact) {
  test::ModelRun run("tiny", {"wafer.width=3", "wafer.height=72", "fabric.edge_io_channels=8"}, kTall);
  ASSERT_EQ(run.compiled.layout.slices(), 72u);
  ASSERT_EQ(run.compiled.layout.columns, 3u);
  for (const auto& p : run.compiled.programs) {
    EXPECT_FALSE(p.analytical) << p.name();
    for (const auto& pl : p.code) EXPECT_EQ(pl.program->tasks.size(), 1u) << p.name();
  }
  const auto& results = run.run();
  // fc1, fc2 forward; fc2 data and weights, fc1 weights.
  ASSERT_EQ(results.size(), 2u + 3u);
  expect_all_checked(results);
}

// A partial-sum buffer (chunk j uses buffer j % 2) is written again only once the asynchronous
// send that read it has finished: known when a later send on the same color issued (colors are
// held), else waited for.
TEST(CompilerLinear, BufferReuseWaitsOnlyWhenNoLaterSendOnTheColorIssued) {
  using models::compiler::buffer_waits;
  // Rows above (north sends, class 0), this row (no send), rows below (south sends, class 1):
  // the first south chunk reuses the buffer of the last north one, whose send nothing followed.
  EXPECT_EQ(buffer_waits({0, 0, -1, 1, 1}, {true, true, true, true, true}), (std::vector<int>{-1, -1, -1, 0, -1}));
  // Row 0: no north chunk, nothing to wait for.
  EXPECT_EQ(buffer_waits({-1, 1, 1, 1}, {true, true, true, true}), (std::vector<int>{-1, -1, -1, -1}));
  // An empty chunk (no write, no send) between two sends on the same buffer's parity...
  EXPECT_EQ(buffer_waits({0, -1, 0, -1, 0}, {true, false, true, false, true}), (std::vector<int>{-1, -1, 0, -1, 0}));
  // ... and after the wait every earlier send on that color is known finished.
  EXPECT_EQ(buffer_waits({0, 0, -1, 0, 0}, {true, true, false, true, true}), (std::vector<int>{-1, -1, -1, 0, -1}));
}

}  // namespace
}  // namespace wafersim::compiler_linear_test
