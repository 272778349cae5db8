// The `wafersim` executable end to end: exit codes, JSON output, run folders.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace cli_test {
namespace {
using wafersim::test::slurp;
using wafersim::test::wafersim;

TEST(Cli, HelpExplainsItselfAndExitsZero) {
  auto r = wafersim("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* word : {"run", "info", "validate", "schema", "memoryx-plan", "Exit codes"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  auto run = wafersim("run --help");
  EXPECT_EQ(run.code, 0);
  EXPECT_NE(run.out.find("--set"), std::string::npos);
  EXPECT_NE(run.out.find("--max-wall"), std::string::npos);
}

TEST(Cli, UnknownCommandIsBadInput) { EXPECT_EQ(wafersim("frobnicate").code, 2); }

TEST(Cli, InfoJsonForWse2) {
  auto r = wafersim("info wse2 --json");
  ASSERT_EQ(r.code, 0);
  auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"pe_count", "sram_bytes", "peak_flops", "sram_bandwidth_bytes_per_s", "fabric_bisection_bytes_per_s",
        "io_bandwidth_bits_per_s", "memoryx_capacity_bytes", "max_params", "swarmx_nodes", "swarmx_depth"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["pe_count"], 757 * 996);
  EXPECT_TRUE(j["peak_flops"].contains("fp16"));
  EXPECT_TRUE(j["peak_flops"].contains("bf16"));
  EXPECT_TRUE(j["peak_flops"].contains("fp32"));
}

TEST(Cli, MisspelledKeyInAPresetGetsLineAndSuggestion) {
  wafersim::test::TempDir dir;
  std::string text = slurp(std::string(WAFERSIM_SOURCE_DIR) + "/platforms/wse2.yaml");
  auto pos = text.find("      size: 48 KiB");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 12, "      sise: ");
  auto f = dir.write("wse2.yaml", text);
  auto line = std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n') + 1;
  auto r = wafersim("validate " + f, true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(
      r.out.find(f + ":" + std::to_string(line) + ":7: error: wafer.pe.sram.sise: unknown key; did you mean 'size'?"),
      std::string::npos)
      << r.out;
}

TEST(Cli, ValidateAcceptsEveryPreset) {
  auto r = wafersim(std::string("validate ") + WAFERSIM_SOURCE_DIR + "/platforms/*.yaml");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(Cli, RunWritesAFolderThatReproducesTheRun) {
  wafersim::test::TempDir dir;
  auto first = dir.path() / "first";
  auto r = wafersim("run tiny --cycles 500 --set fabric.queue_depth=4 --json --out " + first.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cycles"], 500);
  for (const char* f : {"config.yaml", "stats.json", "stats.txt", "run.json"})
    EXPECT_TRUE(std::filesystem::exists(first / f)) << f;
  auto second = dir.path() / "second";
  ASSERT_EQ(wafersim("run " + (first / "config.yaml").string() + " --cycles 500 --out " + second.string()).code, 0);
  EXPECT_EQ(slurp(first / "stats.json"), slurp(second / "stats.json"));
  EXPECT_NE(slurp(first / "config.yaml").find("queue_depth: 4"), std::string::npos);
}

TEST(Cli, BadPlatformIsExitCodeTwo) {
  auto r = wafersim("run nowhere.yaml", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("cannot open 'nowhere.yaml'"), std::string::npos) << r.out;
}

TEST(Cli, MaxCyclesIsExitCodeFour) {
  wafersim::test::TempDir dir;
  auto r = wafersim("run tiny --cycles 1000 --max-cycles 10 --out " + dir.path().string(), true);
  EXPECT_EQ(r.code, 4) << r.out;
}

// A limit reached while the inputs stream in (before the first layer's step starts) is the
// limit, not a deadlock (exit 3).
TEST(Cli, MaxCyclesDuringTheInputLoadIsExitCodeFour) {
  wafersim::test::TempDir dir;
  auto r = wafersim(
      "infer tiny --model tiny-mlp --placement streaming --timing-only --max-cycles 50 --out " + dir.path().string(),
      true);
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_NE(r.out.find("--max-cycles 50 reached during the input load"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("deadlock"), std::string::npos) << r.out;
  // The load stops at the limit, and run.json and stats.json say where.
  std::ifstream in(dir.path() / "run.json");
  EXPECT_EQ(nlohmann::json::parse(in)["cycles"].get<std::uint64_t>(), 50u);
  std::ifstream stats(dir.path() / "stats.json");
  EXPECT_EQ(nlohmann::json::parse(stats)["stats"]["cluster"]["wafer0"]["cycles"].get<double>(), 50.0);
}

// A model whose weights do not fit resident is refused with the numbers, and the message names
// weight streaming among the ways out; with it the same model runs.
TEST(Cli, ResidentWeightsThatDoNotFitPointToWeightStreaming) {
  wafersim::test::TempDir dir;
  const std::string model = dir.write("big.yaml",
                                      "name: big\ndtype: fp16\nbatch: 1\nsequence: 8\n"
                                      "inputs: [{name: x, kind: activations, features: 1024}]\n"
                                      "layers:\n  - {name: a, kind: linear, inputs: [x], features: 1024}\n");
  const auto resident =
      wafersim("infer tiny --model " + model + " --timing-only --out " + (dir.path() / "r").string(), true);
  EXPECT_EQ(resident.code, 2) << resident.out;
  EXPECT_NE(resident.out.find("layer 'a' does not fit the SRAM: PE (0, 0) needs 262144 B for 'resident weights'"),
            std::string::npos)
      << resident.out;
  EXPECT_NE(resident.out.find("a wider wafer, weight streaming (--placement streaming: one layer's weights at a time, "
                              "streamed in), or a platform with more SRAM per PE"),
            std::string::npos)
      << resident.out;
  const auto streaming = wafersim("infer tiny --model " + model + " --placement streaming --timing-only --out " +
                                  (dir.path() / "s").string());
  EXPECT_EQ(streaming.code, 0) << streaming.out;
}

// A run stopped by --max-wall reports in run.json the wall time and the cycles it ran.
TEST(Cli, MaxWallRunReportsItsTimeAndCycles) {
  wafersim::test::TempDir dir;
  auto r = wafersim("infer tiny --model tiny-mlp --placement streaming --timing-only --max-wall 0.000001 --out " +
                        dir.path().string(),
                    true);
  EXPECT_EQ(r.code, 4) << r.out;
  std::ifstream in(dir.path() / "run.json");
  const auto run = nlohmann::json::parse(in);
  EXPECT_EQ(run["status"], "limit");
  EXPECT_GT(run["wall_seconds"].get<double>(), 0.0);
  EXPECT_GT(run["cycles"].get<std::uint64_t>(), 0u);
}

// The mesh placement, the pipeline, the cluster's training and the replay's wafer run take
// their steps to their end through sim::run_until_quiet: --max-cycles is the limit (exit 4),
// not a deadlock, and --max-wall stops them between slices (a slice of a real run takes more
// than a microsecond).
TEST(Cli, MeshPipelineAndClusterRunsKeepTheLimits) {
  wafersim::test::TempDir dir;
  const std::string out = " --force --out " + dir.path().string();
  const std::string mesh = "infer tiny --model " + std::string(WAFERSIM_SOURCE_DIR) +
                           "/examples/models/tiny-llama.yaml" + " --placement mesh --prefill 15";
  const std::string pipeline = "infer tiny --set wafer.width=32 --set wafer.height=32 --model " +
                               std::string(WAFERSIM_SOURCE_DIR) + "/examples/models/decoder-block.yaml" +
                               " --pipeline --decode-tokens 2";
  struct Case {
    std::string args, message;
  };
  for (const Case& c :
       {Case{mesh + " --max-cycles 100", "--max-cycles 100 reached with work still pending (step 'prefill.embed')"},
        Case{mesh + " --max-wall 0.000001", "(step 'prefill.embed')"},
        Case{pipeline + " --max-cycles 100", "--max-cycles 100 reached with work still pending (phase 1 of 3)"},
        Case{pipeline + " --max-wall 0.000001", "(phase 1 of 3)"},
        Case{"train tiny-cluster --model tiny-mlp --steps 2 --max-wall 0.000001", "(2 training steps)"},
        Case{"train tiny-cluster --model tiny-mlp --cluster-model replay --max-cycles 50",
             "--max-cycles 50 reached during the input load (the wafer run of 'tiny-mlp')"},
        Case{"train tiny-cluster --model tiny-mlp --cluster-model replay --max-cycles 300",
             "--max-cycles 300 reached with work still pending (the wafer run of 'tiny-mlp', program 1 of "},
        Case{"train tiny-cluster --model tiny-mlp --cluster-model replay --max-wall 0.000001",
             "(the wafer run of 'tiny-mlp', program 1 of "}}) {
    auto r = wafersim(c.args + out, true);
    EXPECT_EQ(r.code, 4) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(r.out.find("deadlock"), std::string::npos) << r.out;
    if (c.args.find("--max-wall") != std::string::npos) {
      EXPECT_NE(r.out.find("--max-wall 1e-06 s reached at "), std::string::npos) << r.out;
    }
  }
}

// CLI11 would wrap "-5" into 2^64 - 5 and turn an overflowing number into 0; both are refused.
TEST(Cli, NegativeAndOverflowingNumbersAreBadInput) {
  for (const char* args : {"run tiny --cycles -5", "run tiny --cycles 99999999999999999999", "run tiny --seed -1",
                           "run tiny --max-cycles -1", "run tiny --max-wall -1", "sweep x.yaml --jobs -2",
                           "traffic tiny --pattern uniform --rate 0.1 --measure 1x"}) {
    auto r = wafersim(std::string(args) + " --out /dev/null/x", true);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find("SystemC"), std::string::npos) << args;
  }
  auto r = wafersim("run tiny --cycles -5", true);
  EXPECT_NE(r.out.find("--cycles: expected a whole number in 0 .. 18446744073709551615, found '-5'"), std::string::npos)
      << r.out;
}

// Beyond 2^53 ps the engine's time arithmetic is no longer exact: the last cycle runs, one more
// is refused with the limit named (tiny's 1.1 GHz: 9907919180215 cycles; the idle platform
// fast-forwards, so this takes milliseconds).
TEST(Cli, CyclesBeyondTheSimulableRangeAreBadInput) {
  wafersim::test::TempDir d;
  auto ok = wafersim("run tiny --cycles 9907919180215 --json --out " + (d.path() / "a").string());
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["cycles"], 9907919180215u);
  auto over = wafersim("run tiny --cycles 9907919180216 --out " + (d.path() / "b").string(), true);
  EXPECT_EQ(over.code, 2);
  EXPECT_NE(over.out.find("9907919180216 cycles is beyond the simulable time range: at this clock at most "
                          "9907919180215 cycles"),
            std::string::npos)
      << over.out;
  // A --max-cycles beyond the range is no limit at all, not an error.
  EXPECT_EQ(wafersim("run tiny --cycles 100 --max-cycles 18446744073709551 --out " + (d.path() / "c").string()).code,
            0);
}

TEST(Cli, MemoryxPlanPlacesLayersDramFirst) {
  auto r = wafersim("memoryx-plan tiny-cluster --params 240e6 --layers 8 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["layers"].size(), 8u);
  EXPECT_EQ(j["layers"][0]["tier"], "dram");
  EXPECT_EQ(j["layers"][1]["tier"], "flash");
  EXPECT_EQ(j["staging"]["bytes"], 240025600u);  // 2 slots of 120 MB rounded up to 16 KiB flash pages
  EXPECT_EQ(j["flash"]["used"], 7u * 600014848u);
}

TEST(Cli, MemoryxPlanForAModelThatDoesNotFitIsExitCodeTwo) {
  auto r = wafersim("memoryx-plan tiny-cluster --params 270e6 --layers 9", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("model does not fit: layer 'layer8' (#8, 30000000 parameters x 20 B) needs 600014848 B"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(wafersim("memoryx-plan tiny --params 1000 --optimizer lamb").code, 2);
  EXPECT_EQ(wafersim("memoryx-plan tiny --params 0.5").code, 2);
}

}  // namespace
}  // namespace cli_test
