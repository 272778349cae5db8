// The three simulating workflows: `run`, `train` and `infer`; the older spellings (`run
// --train`, `run --inference`) give the same run with a one-line notice.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::cli_workflows_test {
namespace {

using test::slurp;
using test::wafersim;

constexpr const char* kNotice = "wafersim: note: ";

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Workflows, TrainIsTheOlderRunTrainWithTheSameStatistics) {
  const test::TempDir dir;
  const auto now =
      wafersim("train tiny-cluster --model tiny-mlp --steps 2 --out " + (dir.path() / "new").string(), true);
  ASSERT_EQ(now.code, 0) << now.out;
  EXPECT_EQ(now.out.find(kNotice), std::string::npos) << now.out;
  EXPECT_NE(now.out.find("wafersim train: tiny-mlp on tiny-cluster"), std::string::npos) << now.out;
  const auto old =
      wafersim("run tiny-cluster --model tiny-mlp --train --steps 2 --out " + (dir.path() / "old").string(), true);
  ASSERT_EQ(old.code, 0) << old.out;
  EXPECT_EQ(count(old.out, kNotice), 1u) << old.out;
  EXPECT_NE(old.out.find("'wafersim run --train' is now 'wafersim train'"), std::string::npos) << old.out;
  EXPECT_EQ(slurp(dir.path() / "new" / "stats.json"), slurp(dir.path() / "old" / "stats.json"));
  EXPECT_EQ(slurp(dir.path() / "new" / "training.json"), slurp(dir.path() / "old" / "training.json"));
}

TEST(Workflows, InferIsTheOlderRunInferenceWithTheSameStatistics) {
  const test::TempDir dir;
  const std::string args = " --model tiny-transformer --decode-tokens 2 --json --out ";
  const auto now = wafersim("infer tiny" + args + (dir.path() / "new").string());
  ASSERT_EQ(now.code, 0) << now.out;
  const auto old = wafersim("run tiny --placement resident --inference" + args + (dir.path() / "old").string(), true);
  ASSERT_EQ(old.code, 0) << old.out;
  EXPECT_EQ(count(old.out, kNotice), 1u) << old.out;
  EXPECT_NE(old.out.find("'wafersim run --inference' is now 'wafersim infer'"), std::string::npos) << old.out;
  EXPECT_EQ(slurp(dir.path() / "new" / "stats.json"), slurp(dir.path() / "old" / "stats.json"));
  EXPECT_EQ(nlohmann::json::parse(now.out)["inference"]["decode_tokens"], 2);
}

TEST(Workflows, InferStreamsWeightsWhenAsked) {
  const test::TempDir dir;
  const auto r =
      wafersim("infer tiny --model tiny-mlp --placement streaming --json --out " + (dir.path() / "s").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["steps"].size(), 4u);  // fc1, act, fc2, loss: forward only
  for (const auto& step : j["steps"]) EXPECT_EQ(step["phase"], "forward");
  EXPECT_FALSE(j.contains("inference"));
  const auto bad = wafersim(
      "infer tiny --model tiny-mlp --placement streaming --decode-tokens 2 --out " + (dir.path() / "b").string(), true);
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("need the resident placement"), std::string::npos) << bad.out;
}

TEST(Workflows, EachOptionBelongsToItsWorkflow) {
  // train has no --placement or --inference; run has no visible training or inference options.
  EXPECT_EQ(wafersim("train tiny-cluster --model tiny-mlp --inference", true).code, 2);
  EXPECT_EQ(wafersim("train tiny-cluster --model tiny-mlp --placement resident", true).code, 2);
  const auto help = wafersim("run --help");
  ASSERT_EQ(help.code, 0);
  for (const char* hidden : {"--steps", "--decode-tokens", "--pipeline", "--train", "--optimizer"})
    EXPECT_EQ(help.out.find(hidden), std::string::npos) << hidden;
  EXPECT_NE(help.out.find("wafersim train"), std::string::npos);  // the footer points there
  const auto resident = wafersim("run tiny --model tiny-mlp --placement resident", true);
  EXPECT_EQ(resident.code, 2) << resident.out;
  EXPECT_NE(resident.out.find("use 'wafersim infer'"), std::string::npos) << resident.out;
}

TEST(Workflows, EveryWorkflowsHelpHasExamples) {
  for (const char* cmd : {"run", "train", "infer"}) {
    const auto r = wafersim(std::string(cmd) + " --help");
    ASSERT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("Examples:\n  wafersim " + std::string(cmd) + " "), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace wafersim::cli_workflows_test
