// `wafersim run --model M --timing-only`: compiled models without data values take exactly the
// cycles of the functional run, step by step; `--plan-missing-code` runs the steps that have
// PE code and plans the others analytically.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace run_timing_only_test {
namespace {
using wafersim::test::wafersim;

struct RunOutput {
  nlohmann::json out;    // the --json output
  nlohmann::json stats;  // stats.json
};

RunOutput run_model(const std::string& args) {
  wafersim::test::TempDir d;
  const auto dir = d.path() / "run";
  auto r = wafersim(args + " --json --out " + dir.string(), true);
  EXPECT_EQ(r.code, 0) << r.out;
  RunOutput run;
  run.out = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  run.stats = nlohmann::json::parse(wafersim::test::slurp(dir / "stats.json"));
  return run;
}

// Every step: the same start, cycles, stalls and edge wavelets, exactly; the whole stats
// tree equal; no checks in the timing-only run and no more SRAM allocated (on these small
// models the host's inputs touch the same one page per PE either way).
void expect_same_timing(const std::string& args) {
  const RunOutput functional = run_model(args);
  const RunOutput timing = run_model(args + " --timing-only");
  EXPECT_FALSE(functional.out["timing_only"].get<bool>());
  EXPECT_TRUE(timing.out["timing_only"].get<bool>());
  EXPECT_GT(functional.out["checked"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(timing.out["checked"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(functional.out["mismatches"].get<std::uint64_t>(), 0u);
  const auto& fs = functional.out["steps"];
  const auto& ts = timing.out["steps"];
  ASSERT_EQ(fs.size(), ts.size());
  ASSERT_GT(fs.size(), 0u);
  for (std::size_t i = 0; i < fs.size(); ++i) {
    const std::string name = fs[i]["layer"].get<std::string>() + " " + fs[i]["phase"].get<std::string>();
    EXPECT_EQ(ts[i]["layer"], fs[i]["layer"]);
    EXPECT_EQ(ts[i]["phase"], fs[i]["phase"]);
    EXPECT_TRUE(ts[i]["simulated"].get<bool>()) << name;
    EXPECT_GT(fs[i]["cycles"].get<std::uint64_t>(), 0u) << name;
    EXPECT_EQ(ts[i]["start_cycle"], fs[i]["start_cycle"]) << name;
    EXPECT_EQ(ts[i]["cycles"], fs[i]["cycles"]) << name;
    EXPECT_EQ(ts[i]["stalls"], fs[i]["stalls"]) << name;
    EXPECT_EQ(ts[i]["wavelets_in"], fs[i]["wavelets_in"]) << name;
    EXPECT_EQ(ts[i]["wavelets_out"], fs[i]["wavelets_out"]) << name;
    EXPECT_TRUE(ts[i]["checks"].empty()) << name;
    EXPECT_FALSE(fs[i]["checks"].empty()) << name;
  }
  EXPECT_EQ(timing.out["cycles"], functional.out["cycles"]);
  EXPECT_EQ(timing.stats, functional.stats);
  EXPECT_LE(timing.out["sram_allocated_bytes"].get<std::uint64_t>(),
            functional.out["sram_allocated_bytes"].get<std::uint64_t>());
}

TEST(RunTimingOnly, TinyMlpTrainingStepTakesTheFunctionalCycles) { expect_same_timing("run tiny --model tiny-mlp"); }

// Embedding, RMSNorm, causal grouped-query attention, SwiGLU, residual adds and
// cross-entropy, forward and backward (45 steps).
TEST(RunTimingOnly, TinyTransformerTrainingStepTakesTheFunctionalCycles) {
  expect_same_timing(
      "run tiny --model tiny-transformer --model-set transformer.heads=16 --model-set transformer.kv_heads=8");
}

// 72 used rows: the linear programs (forward, weight gradient) dispatch their chunks through a
// table in SRAM, which the timing-only run stores too (it steers branches), so the cycles are
// the functional run's. 40 outputs over 72 rows: chunks of one and of no output interleave.
TEST(RunTimingOnly, LinearsOverSeventyTwoRowsTakeTheFunctionalCycles) {
  wafersim::test::TempDir dir;
  const auto path = dir.path() / "tall.yaml";
  std::ofstream(path) << "name: tall\n"
                         "dtype: fp16\n"
                         "batch: 3\n"
                         "sequence: 2\n"
                         "inputs: [{name: x, kind: activations, features: 72}]\n"
                         "layers:\n"
                         "  - {name: fc1, kind: linear, inputs: [x], features: 40, bias: true}\n";
  expect_same_timing("run tiny --set wafer.width=3 --set wafer.height=72 --set fabric.edge_io_channels=8 --model " +
                     path.string());
}

// An embedding table of 100000 rows, too large for a PE's slice of it: the embedding has no PE
// code (the host's gather is planned instead); the linear layers, GELU and the loss do.
struct WideModel {
  wafersim::test::TempDir dir;
  std::string args;
  WideModel() {
    const auto path = dir.path() / "wide.yaml";
    std::ofstream(path) << "name: wide-vocab\n"
                           "dtype: fp32\n"
                           "batch: 4\n"
                           "sequence: 1\n"
                           "inputs:\n"
                           "  - {name: ids, kind: tokens}\n"
                           "  - {name: labels, kind: labels}\n"
                           "layers:\n"
                           "  - {name: embed, kind: embedding, inputs: [ids], vocabulary: 100000, features: 16}\n"
                           "  - {name: fc1, kind: linear, inputs: [embed], features: 16, bias: true}\n"
                           "  - {name: act, kind: gelu, inputs: [fc1]}\n"
                           "  - {name: fc2, kind: linear, inputs: [act], features: 8, bias: true}\n"
                           "  - {name: loss, kind: cross_entropy, inputs: [fc2, labels]}\n";
    args = "infer tiny --model " + path.string() + " --placement streaming";
  }
};

TEST(RunTimingOnly, StepsWithoutCodeAreAnErrorUnlessPlannedAnalytically) {
  const WideModel wide;
  wafersim::test::TempDir d;
  const auto out = " --out " + (d.path() / "r").string();
  auto r = wafersim(wide.args + " --timing-only" + out, true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("layer 'embed': the weight-streaming placement has no PE code for embedding layers"),
            std::string::npos)
      << r.out;
  // Skipping steps leaves values unwritten: only without checks.
  r = wafersim(wide.args + " --plan-missing-code" + out, true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--timing-only or --no-check"), std::string::npos) << r.out;
  r = wafersim("run tiny --timing-only" + out, true);
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST(RunTimingOnly, PlanMissingCodeRunsTheStepsThatHaveCode) {
  const WideModel wide;
  const RunOutput run = run_model(wide.args + " --timing-only --plan-missing-code");
  const auto& steps = run.out["steps"];
  std::size_t planned = 0, simulated = 0;
  std::uint64_t sum = 0;
  for (const auto& s : steps) {
    const bool sim = s["simulated"].get<bool>();
    EXPECT_EQ(sim, s["kind"] != "embedding") << s["layer"];
    if (sim) {
      ++simulated;
      EXPECT_GT(s["cycles"].get<std::uint64_t>(), 0u) << s["layer"];
      EXPECT_LE(s["bound_cycles"].get<std::uint64_t>(), s["cycles"].get<std::uint64_t>()) << s["layer"];
    } else {
      ++planned;
      EXPECT_EQ(s["cycles"].get<std::uint64_t>(), 0u) << s["layer"];
      EXPECT_GT(s["bound_cycles"].get<std::uint64_t>(), 0u) << s["layer"];
    }
    sum += s["cycles"].get<std::uint64_t>();
  }
  EXPECT_EQ(planned, 1u);
  EXPECT_EQ(simulated, 4u);
  EXPECT_GE(run.out["cycles"].get<std::uint64_t>(), sum);
}

}  // namespace
}  // namespace run_timing_only_test
