// Activation recomputation in weight-streaming training (docs/compiler.md, "Activation
// recomputation"): each transformer block's forward runs again just before its backward, so
// only what crosses the blocks' boundaries stays resident. On tiny, every step checked bit
// for bit, every recomputed step as long as its forward, the others unchanged; on cs3-cluster
// the planner's fit for Llama-3 8B and GPT-3 XL.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "models/compiler/compiler.h"
#include "platforms/platform_spec.h"
#include "sim/errors.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::compiler_recompute_test {
namespace {

namespace cc = models::compiler;
using test::wafersim;

nlohmann::json run_json(const std::string& args) {
  test::TempDir d;
  auto r = wafersim("run " + args + " --json --out " + (d.path() / "run").string(), true);
  EXPECT_EQ(r.code, 0) << r.out;
  return nlohmann::json::parse(r.out.substr(r.out.find('{')));
}

struct StepRow {
  std::string layer, phase;
  bool recompute = false;
  std::uint64_t cycles = 0;
};

std::vector<StepRow> rows(const nlohmann::json& j) {
  std::vector<StepRow> out;
  for (const auto& s : j["steps"])
    out.push_back({s["layer"], s["phase"], s["recompute"].get<bool>(), s["cycles"].get<std::uint64_t>()});
  return out;
}

// Two blocks of the tiny transformer: 12 layers each are recomputed, right before the block's
// first backward step, bit-exact, each in exactly its forward's cycles; no other step changes.
TEST(Recompute, TwoBlocksRecomputeBeforeTheirBackwardBitExactInTheirForwardsCycles) {
  const std::string model = "tiny --model tiny-transformer --model-set transformer.layers=2";
  const auto kept = run_json(model + " --recompute none");
  const auto again = run_json(model + " --recompute blocks");
  EXPECT_EQ(kept["mismatches"], 0);
  EXPECT_EQ(again["mismatches"], 0);
  EXPECT_GT(again["checked"].get<std::uint64_t>(), kept["checked"].get<std::uint64_t>());
  const auto a = rows(kept), b = rows(again);
  ASSERT_EQ(b.size(), a.size() + 24);
  std::map<std::string, std::uint64_t> forward;
  for (const auto& s : a)
    if (s.phase == "forward") forward[s.layer] = s.cycles;
  std::vector<StepRow> others;
  std::uint64_t added = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto& s = b[i];
    if (!s.recompute) {
      others.push_back(s);
      continue;
    }
    EXPECT_EQ(s.phase, "forward");
    EXPECT_EQ(s.cycles, forward.at(s.layer)) << s.layer;
    added += s.cycles;
    // A block's recomputation ends right before the block's first backward step.
    const std::string block = s.layer.substr(0, s.layer.find('.'));
    if (i + 1 < b.size() && !b[i + 1].recompute) {
      EXPECT_EQ(b[i + 1].layer.substr(0, b[i + 1].layer.find('.')), block);
      EXPECT_NE(b[i + 1].phase, "forward");
    }
  }
  ASSERT_EQ(others.size(), a.size());
  std::uint64_t sum_a = 0, sum_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(others[i].layer, a[i].layer);
    EXPECT_EQ(others[i].phase, a[i].phase);
    EXPECT_EQ(others[i].cycles, a[i].cycles) << a[i].layer << " " << a[i].phase;
    sum_a += a[i].cycles;
  }
  for (const auto& s : b) sum_b += s.cycles;
  EXPECT_EQ(sum_b, sum_a + added);
  // The blocks' order: h1 is recomputed first (its backward comes first).
  std::vector<std::string> first_of_block;
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b[i].recompute && (i == 0 || !b[i - 1].recompute)) first_of_block.push_back(b[i].layer);
  EXPECT_EQ(first_of_block, (std::vector<std::string>{"h1.ln1", "h0.ln1"}));
}

// `compile --json` names the choice and its figures, and marks every recomputed step.
TEST(Recompute, CompileJsonMarksTheRecomputedSteps) {
  const auto r = wafersim("compile tiny --model tiny-transformer --recompute blocks --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["recompute"]["choice"], "blocks");
  EXPECT_EQ(j["recompute"]["recomputed"], true);
  EXPECT_EQ(j["recompute"]["why"],
            "activations for the backward pass: 184 B per PE at the peak with each block's recomputed before its "
            "backward, 200 B if all were kept");
  std::size_t recomputed = 0;
  for (const auto& s : j["steps"]) recomputed += s["recompute"].get<bool>();
  EXPECT_EQ(recomputed, 12u);
  EXPECT_EQ(j["steps"].size(), 57u);
  const auto bad = wafersim("compile tiny --model tiny-transformer --recompute layers");
  EXPECT_EQ(bad.code, 2);
}

cc::Target target(const std::string& platform) {
  const auto p = platforms::load_platform(platform);
  return cc::Target{p.spec.wafer, p.spec.fabric};
}

cc::CompiledModel plan(const std::string& model, const std::string& platform, cc::Recompute r,
                       const std::vector<std::string>& set = {}) {
  cc::CompileOptions o;
  o.emit = false;
  o.recompute = r;
  return cc::compile(models::load_model(model, set).spec, target(platform), o);
}

std::string error_of(const std::string& model, const std::string& platform, cc::Recompute r,
                     const std::vector<std::string>& set = {}) {
  try {
    plan(model, platform, r, set);
  } catch (const sim::InputError& e) {
    return e.what();
  }
  return "";
}

// The first figure of a recompute_why: the activations' peak per PE.
std::uint64_t activations(const std::string& why) {
  const std::string key = "backward pass: ";
  return std::stoull(why.substr(why.find(key) + key.size()));
}

// Tiny fits without: auto keeps every activation; blocks recomputes anyway and keeps less.
TEST(Recompute, AutoKeepsActivationsThatFit) {
  const auto a = plan("tiny-transformer", "tiny", cc::Recompute::Auto);
  const auto b = plan("tiny-transformer", "tiny", cc::Recompute::Blocks);
  EXPECT_FALSE(a.recomputed);
  EXPECT_TRUE(b.recomputed);
  EXPECT_EQ(b.programs.size(), a.programs.size() + 12);
  EXPECT_NE(a.recompute_why.find("all kept"), std::string::npos) << a.recompute_why;
  EXPECT_LT(activations(b.recompute_why), activations(a.recompute_why)) << b.recompute_why;
  EXPECT_NE(b.recompute_why.find(fmt::format("{} B if all were kept", activations(a.recompute_why))), std::string::npos)
      << b.recompute_why;
}

// Llama-3 8B (batch 1 x 8192) keeps 111,296 B of activations per PE on cs3-cluster's wafers
// for its backward pass, more than the 48 KiB: auto recomputes each block and fits; GPT-3 XL
// (batch 1 x 2048) keeps everything.
TEST(Recompute, PlannerFitsLlama3AndGpt3XlOnCs3Cluster) {
  const auto llama = plan("llama3-8b", "cs3-cluster", cc::Recompute::Auto);
  EXPECT_TRUE(llama.recomputed);
  EXPECT_LE(llama.sram_peak, llama.target.sram_bytes());
  EXPECT_NE(llama.recompute_why.find("17088 B per PE at the peak"), std::string::npos) << llama.recompute_why;
  EXPECT_NE(llama.recompute_why.find("111296 B if all were kept"), std::string::npos) << llama.recompute_why;
  std::size_t recomputed = 0;
  for (const auto& p : llama.programs) recomputed += p.recompute;
  EXPECT_EQ(recomputed, 32u * 12u);
  const auto gpt = plan("gpt3-xl", "cs3-cluster", cc::Recompute::Auto);
  EXPECT_FALSE(gpt.recomputed);
  EXPECT_LE(gpt.sram_peak, gpt.target.sram_bytes());
}

// Without recomputation Llama-3 8B does not fit (the error names the layer and the kept
// activations); with batch 4 per system not even with it, and the error says both figures.
TEST(Recompute, DoesNotFitNamesTheLayerAndTheActivations) {
  const std::string none = error_of("llama3-8b", "cs3-cluster", cc::Recompute::None);
  EXPECT_NE(none.find("layer 'h15.gate' does not fit the SRAM"), std::string::npos) << none;
  EXPECT_NE(none.find("B per PE at the peak, all kept)"), std::string::npos) << none;
  const std::string big = error_of("llama3-8b", "cs3-cluster", cc::Recompute::Auto, {"batch=4"});
  EXPECT_NE(big.find("does not fit the SRAM"), std::string::npos) << big;
  EXPECT_NE(big.find("recomputed before its backward"), std::string::npos) << big;
}

}  // namespace
}  // namespace wafersim::compiler_recompute_test
