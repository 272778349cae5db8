// Model YAML: presets, parameter counts against the published sizes, graph validation.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "models/model_spec.h"
#include "tests/support/temp_dir.h"

namespace wafersim::models::model_spec_test {
namespace {
using sim::config::ConfigError;

TEST(Models, PresetsLoad) {
  std::vector<std::string> expected{"gpt-j-6b", "gpt3-xl", "llama3-70b", "llama3-8b", "tiny-mlp", "tiny-transformer"};
  EXPECT_EQ(model_preset_names(), expected);
  for (const auto& n : model_preset_names()) EXPECT_NO_THROW(load_model(n)) << n;
}

TEST(Models, ParameterCountsMatchPublishedSizes) {
  auto within = [](std::uint64_t p, double published, double tol) {
    return p >= published * (1 - tol) && p <= published * (1 + tol);
  };
  auto gpt3 = load_model("gpt3-xl").spec;
  // 24 x (12 d^2 + 13 d) + 50257 d + 2048 d (positions), head tied: 1.3157e9.
  EXPECT_EQ(gpt3.parameters(),
            24ULL * (12ULL * 2048 * 2048 + 13ULL * 2048) + 50257ULL * 2048 + 2048ULL * 2048 + 2 * 2048);
  EXPECT_TRUE(within(gpt3.parameters(), 1.3e9, 0.03));
  EXPECT_TRUE(within(load_model("gpt-j-6b").spec.parameters(), 6.05e9, 0.03));
  EXPECT_TRUE(within(load_model("llama3-8b").spec.parameters(), 8.03e9, 0.01));
  EXPECT_TRUE(within(load_model("llama3-70b").spec.parameters(), 70.6e9, 0.01));
}

TEST(Models, TransformerExpandsIntoAGraph) {
  auto m = load_model("tiny-transformer").spec;
  ASSERT_NE(m.find("h0.attn"), nullptr);
  EXPECT_EQ(m.find("h0.attn")->kv_heads, 2u);
  EXPECT_EQ(m.find("h0.k")->features, 8u);  // 2 kv heads x 4
  EXPECT_EQ(m.find("h0.act")->kind, LayerKind::Swiglu);
  EXPECT_EQ(m.find("head")->output.features, 32u);
  EXPECT_EQ(m.shape_of("h0.res2"), (Shape{2, 8, 16}));
  EXPECT_EQ(m.layers.back().kind, LayerKind::CrossEntropy);
}

TEST(Models, GraphFlops) {
  auto m = load_model("tiny-mlp").spec;
  EXPECT_EQ(m.find("fc1")->forward_flops(), 2u * 4 * 16 * 32 + 4 * 32);
  EXPECT_EQ(m.parameters(), 16u * 32 + 32 + 32 * 8 + 8);
}

std::string one_error(const std::string& text) {
  try {
    load_model_text(text, "m.yaml");
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.diagnostics().size(), 1u) << e.what();
    return e.diagnostics().front().str();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(Models, GraphErrorsNameTheLayer) {
  const std::string head = "name: m\ninputs:\n  - {name: x, features: 4}\n  - {name: y, kind: labels}\nlayers:\n";
  EXPECT_EQ(one_error(head + "  - {name: a, kind: lienar, inputs: [x], features: 2}\n"),
            "m.yaml:6:21: error: layers[0].kind: unknown layer kind 'lienar'; did you mean 'linear'?");
  EXPECT_EQ(one_error(head + "  - {name: a, kind: linear, inputs: [z], features: 2}\n"),
            "m.yaml:6:37: error: layers[0].inputs: unknown input 'z' (inputs must be model inputs or earlier layers); "
            "did you mean 'x'?");
  EXPECT_EQ(one_error(head + "  - {name: a, kind: add, inputs: [x]}\n"),
            "m.yaml:6:34: error: layers[0].inputs: a add layer takes 2 input(s), found 1");
  EXPECT_EQ(one_error(head + "  - {name: a, kind: gelu, inputs: [x], heads: 2}\n"),
            "m.yaml:6:47: error: layers[0].heads: 'heads' does not apply to a gelu layer");
  EXPECT_EQ(one_error(head + "  - {name: a, kind: linear, inputs: [x], features: 2}\n"
                             "  - {name: b, kind: add, inputs: [a, x]}\n"),
            "m.yaml:7:34: error: layers[1].inputs: inputs 'a' and 'x' differ in shape (2 vs 4 features)");
}

TEST(Models, TransformerErrors) {
  EXPECT_EQ(one_error("transformer:\n  d_model: 10\n  heads: 4\n"),
            "m.yaml:3:10: error: transformer.heads: d_model 10 does not split into 4 heads");
}

TEST(Models, ResolvedYamlReproducesTheModel) {
  test::TempDir dir;
  for (const auto& n : model_preset_names()) {
    auto a = load_model(n);
    auto b = load_model(dir.write(n + ".yaml", a.resolved_yaml));
    EXPECT_EQ(a.spec.parameters(), b.spec.parameters()) << n;
    EXPECT_EQ(a.spec.layers.size(), b.spec.layers.size()) << n;
    EXPECT_EQ(a.spec.forward_flops(), b.spec.forward_flops()) << n;
  }
}

}  // namespace
}  // namespace wafersim::models::model_spec_test

namespace wafersim::models::model_spec_test {
namespace {

TEST(Models, DocsTableIsCurrent) {
  std::ifstream in(std::string(WAFERSIM_SOURCE_DIR) + "/docs/model-config.md");
  ASSERT_TRUE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find(sim::config::markdown_table(model_schema())), std::string::npos)
      << "docs/model-config.md is stale: regenerate it with 'wafersim schema model --markdown'";
}

}  // namespace
}  // namespace wafersim::models::model_spec_test
