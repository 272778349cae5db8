// Row groups in the weight-streaming layout (docs/compiler.md, "Weight streaming: layout"):
// the choice between one group and row groups, and models run with either, checked bit for
// bit, with exact cycles (the simulation is deterministic) and the bound never above them.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>

#include "models/compiler/compiler.h"
#include "platforms/platform_spec.h"
#include "tests/support/model_rig.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::compiler_groups_test {
namespace {

namespace cc = models::compiler;
using test::expect_all_checked;

// Hidden 4 on tiny's 8 rows (one per band), 64 tokens: two groups of 4 rows hold 32 tokens
// each, 4 per PE instead of 8.
const char* kMlp4 = R"(
name: mlp4
dtype: fp16
batch: 64
sequence: 1
inputs:
  - {name: x, kind: activations, features: 4}
  - {name: labels, kind: labels}
layers:
  - {name: fc1, kind: linear, inputs: [x], features: 4, bias: true}
  - {name: act, kind: gelu, inputs: [fc1]}
  - {name: fc2, kind: linear, inputs: [act], features: 4, bias: true}
  - {name: loss, kind: cross_entropy, inputs: [fc2, labels]}
)";

// Attention needs whole samples per group: 4 samples of 4 tokens, 2 per group.
std::string attention_model(int batch) {
  return "name: att4\ndtype: bf16\nbatch: " + std::to_string(batch) + R"(
sequence: 4
inputs: [{name: x, kind: activations, features: 4}]
layers:
  - {name: q, kind: linear, inputs: [x], features: 4}
  - {name: k, kind: linear, inputs: [x], features: 4}
  - {name: v, kind: linear, inputs: [x], features: 4}
  - {name: att, kind: attention, inputs: [q, k, v], heads: 2}
  - {name: out, kind: linear, inputs: [att], features: 4}
)";
}

cc::Target tiny_target() {
  const auto p = platforms::load_platform("tiny");
  return {p.spec.wafer, p.spec.fabric};
}

cc::CompiledModel map(const std::string& yaml, cc::LayoutChoice choice, bool training = true) {
  cc::CompileOptions o;
  o.emit = false;
  o.training = training;
  o.layout = choice;
  return cc::compile(models::load_model_text(yaml, "model.yaml").spec, tiny_target(), o);
}

TEST(RowGroups, SmallHiddenAndManyTokensChooseTwoGroupsOnTiny) {
  const auto cm = map(kMlp4, cc::LayoutChoice::Auto);
  const auto& l = cm.layout;
  EXPECT_EQ(l.groups, 2u);
  EXPECT_EQ(l.columns, 8u);
  EXPECT_EQ(l.tokens_per_pe, 4u);
  EXPECT_EQ(l.slices(), 4u);
  EXPECT_EQ(l.group_rows, (std::vector<std::vector<std::uint32_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(l.group_bands[1].front().channel, 4u);
  EXPECT_EQ(cm.layout_why.rfind("groups: ", 0), 0u) << cm.layout_why;
  EXPECT_NE(cm.layout_reason.find("2 row groups of 32 tokens"), std::string::npos) << cm.layout_reason;
  // Whole-wafer figures count both groups: fc1's weights and bias (4 x 4 + 4) into each.
  EXPECT_EQ(cm.programs[0].work.wavelets_in, 2u * 20);
  EXPECT_EQ(cm.programs[0].rows, 8u);

  const auto one = map(kMlp4, cc::LayoutChoice::Columns);
  EXPECT_EQ(one.layout.groups, 1u);
  EXPECT_EQ(one.layout.tokens_per_pe, 8u);
  EXPECT_EQ(one.layout_why, "columns (forced)");
  EXPECT_EQ(one.programs[0].work.wavelets_in, 20u);
}

TEST(RowGroups, TheRuleKeepsOneGroupWhenGroupsDoNotHelpOrDoNotFit) {
  // Hidden 32 needs all 8 rows: no grouping fits, and forcing one is an error.
  const char* wide = R"(
name: wide
dtype: fp16
batch: 64
sequence: 1
inputs: [{name: x, kind: activations, features: 32}]
layers: [{name: fc, kind: linear, inputs: [x], features: 32}]
)";
  const auto cm = map(wide, cc::LayoutChoice::Auto);
  EXPECT_EQ(cm.layout.groups, 1u);
  EXPECT_NE(cm.layout_why.find("do not hold the hidden dimension twice"), std::string::npos) << cm.layout_why;
  try {
    map(wide, cc::LayoutChoice::Groups);
    FAIL() << "forced groups that do not fit";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no row grouping fits (2 groups: 4 rows per group < 32 features"),
              std::string::npos)
        << e.what();
  }
  // 8 tokens already take one per PE: more groups would not lower it.
  const auto few =
      map(std::string(kMlp4).replace(std::string(kMlp4).find("batch: 64"), 9, "batch: 8"), cc::LayoutChoice::Auto);
  EXPECT_EQ(few.layout.groups, 1u);
  EXPECT_NE(few.layout_why.find("would not lower the 1 tokens per PE"), std::string::npos) << few.layout_why;
  // 64 rows in 8 bands of 9, 8 and 7 rows: two groups would differ in shape relative to
  // their channel rows (so group 0's programs and bound would not fit group 1).
  const auto p64 = platforms::load_platform("tiny", {"wafer.height=64"});
  const cc::Target t64{p64.spec.wafer, p64.spec.fabric};
  EXPECT_FALSE(cc::StreamingLayout::plan(t64, 64, 16, 15, 2).uniform);
  EXPECT_TRUE(cc::StreamingLayout::plan(t64, 64, 16, 15, 1).uniform);
  const auto shaped = cc::choose_groups(t64, 64, 64, false, 16, 15);
  EXPECT_EQ(shaped.groups, 1u);
  EXPECT_NE(shaped.why.find("2 groups: its bands differ in shape"), std::string::npos) << shaped.why;
  // Attention: a group holds whole samples (3 samples do not divide into 2 groups).
  EXPECT_EQ(map(attention_model(4), cc::LayoutChoice::Auto).layout.groups, 2u);
  const auto odd = map(attention_model(3), cc::LayoutChoice::Auto);
  EXPECT_EQ(odd.layout.groups, 1u);
  EXPECT_NE(odd.layout_why.find("batch 3 does not divide"), std::string::npos) << odd.layout_why;
}

// A small transformer-like model with every kind that trains parameters: the embedding
// (learned positions: a group holds whole samples), LayerNorm and RMSNorm, whose parameter
// gradients are one chain per group over its tokens, added by the host in group order.
const char* kBlock4 = R"(
name: block4
dtype: bf16
batch: 8
sequence: 4
inputs:
  - {name: ids, kind: tokens}
  - {name: labels, kind: labels}
layers:
  - {name: embed, kind: embedding, inputs: [ids], vocabulary: 4, features: 4, learned_positions: true}
  - {name: ln, kind: layernorm, inputs: [embed]}
  - {name: q, kind: linear, inputs: [ln], features: 4}
  - {name: k, kind: linear, inputs: [ln], features: 4}
  - {name: v, kind: linear, inputs: [ln], features: 4}
  - {name: att, kind: attention, inputs: [q, k, v], heads: 2}
  - {name: o, kind: linear, inputs: [att], features: 4}
  - {name: res, kind: add, inputs: [o, embed]}
  - {name: rn, kind: rmsnorm, inputs: [res]}
  - {name: up, kind: linear, inputs: [rn], features: 4}
  - {name: act, kind: silu, inputs: [up]}
  - {name: head, kind: linear, inputs: [act], features: 4}
  - {name: loss, kind: cross_entropy, inputs: [head, labels]}
)";

// The exact cycles of att forward and of the embed, ln and rn parameter gradients.
void run_block4(cc::LayoutChoice choice, std::uint32_t groups, const std::array<std::uint64_t, 4>& cycles) {
  cc::CompileOptions o;
  o.layout = choice;
  test::ModelRun run("tiny", {}, kBlock4, o);
  ASSERT_EQ(run.compiled.layout.groups, groups);
  ASSERT_EQ(run.compiled.layout.tokens_per_pe, 4u / groups);
  const auto& results = run.run();
  std::size_t seen = 0;
  for (const auto& r : results) {
    const bool w = r.phase == cc::Phase::BackwardWeights;
    const int at = r.layer == "att" && r.phase == cc::Phase::Forward ? 0
                   : w && r.layer == "embed"                         ? 1
                   : w && r.layer == "ln"                            ? 2
                   : w && r.layer == "rn"                            ? 3
                                                                     : -1;
    if (at < 0) continue;
    EXPECT_EQ(r.cycles(), cycles[static_cast<std::size_t>(at)]) << r.name();
    ++seen;
  }
  EXPECT_EQ(seen, 4u);
  EXPECT_EQ(results.size(), 34u);
  expect_all_checked(results);
}

TEST(RowGroups, EmbeddingNormsAndAttentionTrainInTwoGroupsBitExact) {
  run_block4(cc::LayoutChoice::Auto, 2, {561, 473, 793, 519});
}
TEST(RowGroups, EmbeddingNormsAndAttentionTrainInOneGroupForced) {
  run_block4(cc::LayoutChoice::Columns, 1, {811, 800, 1342, 886});
}

TEST(RowGroups, PresetsOnWse2KeepOneGroup) {
  const auto p = platforms::load_platform("wse2");
  const cc::Target t{p.spec.wafer, p.spec.fabric};
  for (const auto& name : models::model_preset_names()) {
    const auto m = models::load_model(name).spec;
    std::uint64_t h = 1;
    for (const auto& in : m.inputs) h = std::max(h, in.features);
    for (const auto& l : m.layers) h = std::max(h, l.output.features);
    for (const std::uint32_t fixed : {cc::ColorPlan::kFixed, cc::ColorPlan::kFixed + cc::ColorPlan::kWest}) {
      const auto c = cc::choose_groups(t, m.batch * m.sequence, m.batch, true, h, p.spec.fabric.colors - fixed);
      EXPECT_EQ(c.groups, 1u) << name << ": " << c.why;
    }
  }
}

// The exact cycles of mlp4's steps (fc1, act, fc2, loss forward; loss, fc2 data, fc2
// weights, act, fc1 weights) with two groups and with one.
constexpr std::array<std::uint64_t, 9> kGrouped{112, 106, 112, 474, 173, 86, 245, 145, 245};
constexpr std::array<std::uint64_t, 9> kOneGroup{189, 177, 189, 878, 289, 151, 298, 222, 298};

void run_mlp4(cc::LayoutChoice choice, std::uint32_t groups, const std::array<std::uint64_t, 9>& cycles) {
  cc::CompileOptions o;
  o.layout = choice;
  test::ModelRun run("tiny", {}, kMlp4, o);
  ASSERT_EQ(run.compiled.layout.groups, groups);
  const auto& results = run.run();
  ASSERT_EQ(results.size(), cycles.size());
  for (std::size_t i = 0; i < cycles.size(); ++i) EXPECT_EQ(results[i].cycles(), cycles[i]) << results[i].name();
  expect_all_checked(results);
  // The weight gradients: each group's partial sums out of its own channels, added by the host.
  EXPECT_EQ(results[6].wavelets_out, groups * 20u);
}

TEST(RowGroups, MlpWithTwoGroupsIsBitExactAndFasterThanOne) {
  run_mlp4(cc::LayoutChoice::Auto, 2, kGrouped);
  const auto sum = [](const auto& a) { return std::accumulate(a.begin(), a.end(), std::uint64_t{0}); };
  EXPECT_EQ(sum(kGrouped), 1698u);
  EXPECT_EQ(sum(kOneGroup), 2691u);
  for (std::size_t i = 0; i < kGrouped.size(); ++i) EXPECT_LT(kGrouped[i], kOneGroup[i]) << i;
}

TEST(RowGroups, MlpWithOneGroupForcedIsBitExact) { run_mlp4(cc::LayoutChoice::Columns, 1, kOneGroup); }

// Attention forward and backward (checked against models/reference) in two groups of two
// samples each, between linear layers whose weight gradients sum over the groups.
TEST(RowGroups, AttentionInTwoGroupsMatchesTheReferenceBitForBit) {
  test::ModelRun run("tiny", {}, attention_model(4));
  ASSERT_EQ(run.compiled.layout.groups, 2u);
  const auto& results = run.run();
  std::uint64_t att = 0;
  for (const auto& r : results)
    if (r.kind == models::LayerKind::Attention) {
      EXPECT_EQ(r.cycles(), r.phase == cc::Phase::Forward ? 437u : 765u) << r.name();
      ++att;
    }
  EXPECT_EQ(att, 2u);
  expect_all_checked(results);
}

TEST(RowGroups, CompilePrintsTheChosenLayoutAndWhy) {
  const test::TempDir dir;
  const std::string path = dir.write("mlp4.yaml", kMlp4);
  auto r = test::wafersim("compile " + path + " --platform tiny --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["layout"]["kind"], "groups");
  EXPECT_EQ(j["layout"]["groups"], 2);
  EXPECT_EQ(j["layout"]["choice"], "auto");
  EXPECT_EQ(j["layout"]["why"].get<std::string>().rfind("groups: tokens : hidden = 64 : 4", 0), 0u);
  r = test::wafersim("compile " + path + " --platform tiny --layout columns");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("hidden over 8 rows (1 of each of 8 bands); columns (forced)"), std::string::npos) << r.out;
  r = test::wafersim("compile tiny-mlp --platform tiny --layout groups", true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("layout 'groups': no row grouping fits"), std::string::npos) << r.out;
  r = test::wafersim("compile tiny-mlp --platform tiny --placement resident --layout groups", true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--layout applies to the weight-streaming placement"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace wafersim::compiler_groups_test
