// Running ahead (hw::Core::run_ahead, run_ahead_vector): a compiled model's run whose PEs'
// main threads execute their register-only instructions ahead, and whose lone vector
// operations take their steps inside a wavelet ahead, gives the stats.json of the run that
// issues and steps each in its own cycle's tick (--no-run-ahead), also when a cycle limit stops
// it, with fewer core ticks.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::test::cli_run_ahead_test {
namespace {

struct Ticks {
  std::uint64_t ahead = 0, each = 0;
};

Ticks expect_same_stats(const std::string& command, int code = 0) {
  TempDir dir;
  Ticks t;
  std::string stats[2];
  for (int each = 0; each < 2; ++each) {
    const auto out = dir.path() / (each ? "each" : "ahead");
    const auto r = wafersim(command + (each ? " --no-run-ahead" : "") + " --out " + out.string(), code != 0);
    EXPECT_EQ(r.code, code) << command << "\n" << r.out;
    stats[each] = slurp(out / "stats.json");
    const auto run = nlohmann::json::parse(slurp(out / "run.json"));
    (each ? t.each : t.ahead) = run["engine"]["core_ticks"].get<std::uint64_t>();
  }
  EXPECT_GT(stats[0].size(), 1000u) << command;
  EXPECT_EQ(stats[0], stats[1]) << command;
  return t;
}

// A 256 -> 256 product with bias streamed over 16 rows of 4 PEs, with `options` added.
std::string streamed(const TempDir& files, const std::string& options) {
  const std::string lin = files.write("lin.yaml", R"(name: lin
dtype: fp16
batch: 1
sequence: 16
inputs: [{name: x, kind: activations, features: 256}]
layers:
  - {name: fc, kind: linear, inputs: [x], features: 256, bias: true}
)");
  return "infer tiny --set wafer.width=4 --set wafer.height=16 --set fabric.edge_io_channels=16 --model " + lin +
         " --placement streaming" + options;
}

TEST(CliRunAhead, StreamedProductsGiveTheSameStatisticsInFewerTicks) {
  TempDir files;
  // The last: 16 tokens a PE summed in fp16, so each weight feeds four FMAC steps, three of
  // them taken ahead (hw::Core::run_ahead_vector).
  for (const std::string options : {"", " --timing-only", " --accumulate native --model-set sequence=64",
                                    " --accumulate native --model-set sequence=64 --timing-only"}) {
    const Ticks t = expect_same_stats(streamed(files, options));
    EXPECT_LT(t.ahead, t.each) << options;
  }
}

TEST(CliRunAhead, ModelRunsTrainingAndTheMeshGiveTheSameStatistics) {
  expect_same_stats("run tiny --model tiny-mlp");  // a training step: forward and backward
  expect_same_stats("run tiny --model tiny-mlp --placement resident --inference");
  expect_same_stats("infer tiny --model " + std::string(WAFERSIM_SOURCE_DIR) +
                    "/examples/models/tiny-llama.yaml --placement mesh --prefill 6 --mesh-region 4x4");
}

// Stopped in the product: at 1,500 and 2,500 cycles the main threads have instructions of later
// cycles they could run ahead to, and without the limit as their horizon the statistics differ.
TEST(CliRunAhead, ACycleLimitStopsBothAtTheSameState) {
  TempDir files;
  expect_same_stats(streamed(files, " --timing-only --max-cycles 1500"), 4);
  expect_same_stats(streamed(files, " --timing-only --max-cycles 2500"), 4);
  expect_same_stats(streamed(files, " --accumulate native --model-set sequence=64 --max-cycles 9001"), 4);
}

}  // namespace
}  // namespace wafersim::test::cli_run_ahead_test
