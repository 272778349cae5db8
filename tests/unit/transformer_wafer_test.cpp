// A whole transformer on the simulated wafer: the tiny-transformer preset's block (embedding,
// RMSNorm, grouped-query causal attention, SwiGLU MLP, residual adds, cross-entropy) forward
// and backward, every layer's result compared bit for bit with models/reference, on tiny
// (8 x 8) and on a 16 x 16 grid; the analytical bound is never above a step's cycles.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace transformer_wafer_test {
namespace {
using wafersim::test::wafersim;

nlohmann::json run_json(const std::string& args) {
  wafersim::test::TempDir d;
  auto r = wafersim("run " + args + " --json --out " + (d.path() / "run").string(), true);
  EXPECT_EQ(r.code, 0) << r.out;
  return nlohmann::json::parse(r.out.substr(r.out.find('{')));
}

void expect_trained_block(const nlohmann::json& j) {
  EXPECT_EQ(j["mismatches"], 0);
  EXPECT_GT(j["checked"].get<std::uint64_t>(), 10000u);
  std::set<std::string> kinds, phases;
  std::uint64_t sum = 0;
  for (const auto& s : j["steps"]) {
    kinds.insert(s["kind"].get<std::string>());
    phases.insert(s["phase"].get<std::string>());
    EXPECT_LE(s["bound_cycles"].get<std::uint64_t>(), s["cycles"].get<std::uint64_t>()) << s["layer"];
    for (const auto& c : s["checks"]) EXPECT_TRUE(c["passed"].get<bool>()) << s["layer"] << " " << c["what"];
    sum += s["cycles"].get<std::uint64_t>();
  }
  EXPECT_EQ(kinds,
            (std::set<std::string>{"add", "attention", "cross_entropy", "embedding", "linear", "rmsnorm", "swiglu"}));
  EXPECT_EQ(phases, (std::set<std::string>{"forward", "backward-data", "backward-weights"}));
  EXPECT_GE(j["cycles"].get<std::uint64_t>(), sum);
}

// The preset as it is: 4 query heads over 2 key/value heads on 8 rows, so each group's heads
// are split by dimension over 4 rows (1 dimension of each head per row).
TEST(TransformerOnWafer, TinyTransformerTrainsOneStepOnTiny) {
  const auto j = run_json("tiny --model tiny-transformer");
  expect_trained_block(j);
  EXPECT_EQ(j["steps"].size(), 45u);
  // The same inputs give the same cycles (exact model).
  const auto again = run_json("tiny --model tiny-transformer");
  EXPECT_EQ(j["cycles"], again["cycles"]);
}

// Learned positions (as GPT-3): the embedding adds each token's position row.
TEST(TransformerOnWafer, TinyTransformerWithLearnedPositionsTrainsOneStepOnTiny) {
  expect_trained_block(run_json("tiny --model tiny-transformer --model-set transformer.positions=learned"));
}

// Without the causal mask (transformer.causal: false): every token attends to its whole sample.
TEST(TransformerOnWafer, TinyTransformerWithoutCausalMaskTrainsOneStepOnTiny) {
  expect_trained_block(run_json("tiny --model tiny-transformer --model-set transformer.causal=false"));
}

// Whole key/value groups per row: 16 query heads over 8 key/value heads.
TEST(TransformerOnWafer, TinyTransformerWithAGroupPerRowTrainsOneStepOnTiny) {
  const auto j = run_json(
      "tiny --model tiny-transformer --model-set transformer.heads=16 "
      "--model-set transformer.kv_heads=8");
  expect_trained_block(j);
}

TEST(TransformerOnWafer, TransformerBlockTrainsOneStepOn16x16) {
  const auto j = run_json(
      "tiny --set wafer.width=16 --set wafer.height=16 --model tiny-transformer "
      "--model-set transformer.d_model=32 --model-set transformer.heads=16 "
      "--model-set transformer.kv_heads=16 --model-set transformer.d_ff=64");
  expect_trained_block(j);
}

// A traced compiled run: every step is a phase on the timeline at the cycles the run
// reports, tracing leaves the statistics alone, and the report is written.
TEST(TransformerOnWafer, TracedCompiledRunHasOnePhasePerStep) {
  wafersim::test::TempDir d;
  const auto plain = d.path() / "plain", traced = d.path() / "traced";
  auto a = wafersim("run tiny --model tiny-mlp --json --out " + plain.string());
  auto b = wafersim("run tiny --model tiny-mlp --json --trace windows,timeline --out " + traced.string());
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(wafersim::test::slurp(plain / "stats.json"), wafersim::test::slurp(traced / "stats.json"));
  const auto run = nlohmann::json::parse(a.out);
  const auto phases = nlohmann::json::parse(wafersim::test::slurp(traced / "trace" / "phases.json"))["phases"];
  ASSERT_EQ(phases.size(), run["steps"].size());
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const auto& s = run["steps"][i];
    EXPECT_EQ(phases[i]["name"], s["layer"].get<std::string>() + " " + s["phase"].get<std::string>());
    EXPECT_EQ(phases[i]["start"], s["start_cycle"]);
    EXPECT_EQ(phases[i]["end"].get<std::uint64_t>() - phases[i]["start"].get<std::uint64_t>(), s["cycles"]);
  }
  auto r = wafersim("report " + traced.string() + " -o " + (d.path() / "r.html").string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_GT(wafersim::test::slurp(d.path() / "r.html").size(), 10000u);
}

}  // namespace
}  // namespace transformer_wafer_test
