// Unstructured weight sparsity in weight-streaming training: densities and mask files from the
// model YAML (and --model-set) with file:line:col errors; only kept weights stream, with their
// index (exact byte counts); sparse compute scales with density; pruned weights stay exactly
// zero through training and the kept ones equal the masked host reference bit for bit.

#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/compiler/compiler.h"
#include "models/model_spec.h"
#include "models/reference/task.h"
#include "models/reference/training.h"
#include "models/sparsity.h"
#include "platforms/platform_spec.h"
#include "platforms/training/training_run.h"
#include "sim/config/diagnostics.h"
#include "sim/errors.h"
#include "tests/support/temp_dir.h"

namespace wafersim::models::sparsity_test {
namespace {

// tiny-mlp: fc1 16 x 32 (+ 32 bias), fc2 32 x 8 (+ 8 bias).
constexpr const char* kMlp = R"(name: sparse-mlp
dtype: fp32
batch: 4
sequence: 1
inputs:
  - {name: x, kind: activations, features: 16}
  - {name: labels, kind: labels}
layers:
  - {name: fc1, kind: linear, inputs: [x], features: 32, bias: true}
  - {name: act, kind: gelu, inputs: [fc1]}
  - {name: fc2, kind: linear, inputs: [act], features: 8, bias: true}
  - {name: loss, kind: cross_entropy, inputs: [fc2, labels]}
)";

std::string mask_text(std::uint64_t rows, std::uint64_t cols) {
  std::string t = "# a checkerboard\n";
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t c = 0; c < cols; ++c) t += (r + c) % 2 ? '0' : '1';
    t += '\n';
  }
  return t;
}

std::string load_error(const std::string& yaml, const std::vector<std::string>& set = {},
                       const std::string& mask = "") {
  test::TempDir dir;
  if (!mask.empty()) dir.write("fc2.mask", mask);
  try {
    load_model(dir.write("m.yaml", yaml), set);
  } catch (const sim::config::ConfigError& e) {
    std::string what = e.what();
    const std::string root = dir.path().string() + "/";
    for (auto at = what.find(root); at != std::string::npos; at = what.find(root)) what.erase(at, root.size());
    return what;
  }
  return "no error";
}

TEST(Sparsity, RandomMasksKeepExactlyTheRoundedDensity) {
  EXPECT_EQ(kept_weights(0.25, 512), 128u);
  EXPECT_EQ(kept_weights(0.1, 256), 26u);  // 25.6 rounds up
  EXPECT_EQ(kept_weights(0.001, 64), 1u);  // never nothing
  const WeightMask a = random_mask(3, "fc1", 512, 128);
  EXPECT_EQ(std::count(a.begin(), a.end(), 1), 128);
  EXPECT_EQ(a, random_mask(3, "fc1", 512, 128));
  EXPECT_NE(a, random_mask(4, "fc1", 512, 128));
  EXPECT_NE(a, random_mask(3, "fc2", 512, 128));
}

TEST(Sparsity, DensityAndMaskFileFromTheModelYaml) {
  test::TempDir dir;
  dir.write("masks/fc2.mask", mask_text(32, 8));
  const std::string yaml = std::string(kMlp) + R"(sparsity:
  density: 0.5
  seed: 9
  layers:
    - {name: fc2, mask: masks/fc2.mask}
)";
  const ModelSpec m = load_model(dir.write("m.yaml", yaml)).spec;
  ASSERT_EQ(m.sparsity.layers.size(), 2u);
  EXPECT_EQ(m.sparsity.seed, 9u);
  const LayerSparsity* fc1 = m.sparsity.find("fc1");
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->kept, 256u);
  EXPECT_EQ(fc1->elements(), 512u);
  const LayerSparsity* fc2 = m.sparsity.find("fc2");
  ASSERT_NE(fc2, nullptr);
  EXPECT_EQ(fc2->kept, 128u);
  const WeightMask w = fc2->mask(m.sparsity.seed);
  EXPECT_EQ(w[0], 1);
  EXPECT_EQ(w[1], 0);
  EXPECT_EQ(w[8], 0);  // row 1 starts with '0'
}

TEST(Sparsity, ModelSetOverridesTheDensity) {
  const ModelSpec m = load_model("tiny-mlp", {"sparsity.density=0.25"}).spec;
  ASSERT_EQ(m.sparsity.layers.size(), 2u);
  EXPECT_EQ(m.sparsity.find("fc1")->kept, 128u);
  EXPECT_EQ(m.sparsity.find("fc2")->kept, 64u);
  EXPECT_FALSE(load_model("tiny-mlp").spec.sparsity.any());
  EXPECT_FALSE(load_model("tiny-mlp", {"sparsity.density=1"}).spec.sparsity.any());
}

TEST(Sparsity, BadDensitiesAndLayersNameTheKey) {
  EXPECT_NE(load_error(kMlp, {"sparsity.density=0"})
                .find("<command line>:1:18: error: sparsity.density: a density of 0 keeps no weight"),
            std::string::npos)
      << load_error(kMlp, {"sparsity.density=0"});
  EXPECT_NE(load_error(kMlp, {"sparsity.density=1.5"}).find("sparsity.density"), std::string::npos);
  const std::string base = std::string(kMlp) + "sparsity:\n  layers:\n";
  std::string e = load_error(base + "    - {name: fc3, density: 0.5}\n");
  EXPECT_NE(e.find("m.yaml:15:14: error: sparsity.layers[0].name: no layer 'fc3' in the model; did you mean 'fc1'?"),
            std::string::npos)
      << e;
  e = load_error(base + "    - {name: act, density: 0.5}\n");
  EXPECT_NE(
      e.find("sparsity.layers[0].name: sparsity applies to the weights of linear and gemv layers; 'act' is a gelu"),
      std::string::npos)
      << e;
  e = load_error(base + "    - {name: fc2, density: 0.5, mask: fc2.mask}\n", {}, mask_text(32, 8));
  EXPECT_NE(e.find("sparsity.layers[0].mask: give either a density or a mask file, not both"), std::string::npos) << e;
  e = load_error(base + "    - {name: fc2, density: 0.5}\n    - {name: fc2, density: 0.25}\n");
  EXPECT_NE(e.find("sparsity.layers[1].name: layer 'fc2' is listed twice"), std::string::npos) << e;
}

TEST(Sparsity, BadMaskFilesNameFileLineAndColumn) {
  const std::string yaml = std::string(kMlp) + "sparsity:\n  layers:\n    - {name: fc2, mask: fc2.mask}\n";
  std::string good = mask_text(32, 8);  // line 1 is a comment; row r on line r + 2
  std::string bad = good;
  bad[bad.find('\n') + 1 + 9 * 2 + 4] = 'x';  // row 3, column 5
  std::string e = load_error(yaml, {}, bad);
  EXPECT_NE(e.find("fc2.mask:4:5: error: sparsity.layers[0].mask: expected '0' (pruned) or '1' (kept), found 'x'"),
            std::string::npos)
      << e;
  bad = good;
  bad.erase(bad.find('\n') + 1 + 7, 1);  // row 1 one short
  e = load_error(yaml, {}, bad);
  EXPECT_NE(e.find("fc2.mask:2:8: error: sparsity.layers[0].mask: row 1 has 7 entries, expected 8 (the columns of "
                   "32 x 8 weights)"),
            std::string::npos)
      << e;
  e = load_error(yaml, {}, good + "10101010\n");
  EXPECT_NE(e.find("fc2.mask:34:1: error: sparsity.layers[0].mask: more than 32 rows"), std::string::npos) << e;
  e = load_error(yaml, {}, mask_text(31, 8));
  EXPECT_NE(e.find("fc2.mask:33:1: error: sparsity.layers[0].mask: the file ends after 31 rows, expected 32"),
            std::string::npos)
      << e;
  std::string zeros;
  for (int r = 0; r < 32; ++r) zeros += "0000 0000\n";
  e = load_error(yaml, {}, zeros);
  EXPECT_NE(e.find("fc2.mask:1:1: error: sparsity.layers[0].mask: the mask keeps no weight"), std::string::npos) << e;
  e = load_error(yaml);
  EXPECT_NE(e.find("fc2.mask: error: sparsity.layers[0].mask: cannot read the mask file"), std::string::npos) << e;
}

}  // namespace
}  // namespace wafersim::models::sparsity_test

namespace wafersim::platforms::training::sparsity_test {
namespace {
using namespace wafersim::models;  // the model specs, the compiler and the references

TrainingReport train(const std::vector<std::string>& model_set, std::uint32_t wafers, std::uint32_t steps,
                     bool functional, const memoryx::OptimizerConfig& opt = {}) {
  const auto spec = platforms::load_platform("tiny-cluster", {"cluster.systems=" + std::to_string(wafers)}).spec;
  const ModelSpec m = load_model("tiny-mlp", model_set).spec;
  TrainingConfig cfg;
  cfg.cluster = ClusterMode::Replay;  // the replay's own properties
  cfg.steps = steps;
  cfg.timing = TimingSource::Bound;
  cfg.functional = functional;
  cfg.seed = 7;
  cfg.optimizer = opt;
  sim::stats::Group stats("");
  return run_training(spec, m, cfg, stats);
}

// fc1: 512 weights + 32 bias, fc2: 256 weights + 8 bias; density 0.25 keeps 128 and 64 weights.
TEST(SparseTraining, OnlyKeptWeightsStreamWithTheirIndex) {
  const TrainingReport r = train({"sparsity.density=0.25"}, 2, 3, false);
  ASSERT_EQ(r.layers.layers.size(), 2u);
  EXPECT_EQ(r.layers.layers[0].kept, 128u + 32u);
  EXPECT_EQ(r.layers.layers[1].kept, 64u + 8u);
  const std::uint64_t per_step = 2 * (160 + 72) * 8;  // forward and backward, 4 B value + 4 B index
  EXPECT_EQ(r.stream_bytes_per_step(), per_step);
  const auto& n = r.cluster->memoryx().counters();
  EXPECT_EQ(n.bytes_out, 3 * per_step);
  EXPECT_EQ(n.bytes_in, 3 * 160 * 8 + 3 * 72 * 8);  // one reduced gradient per layer and step, same entries
  EXPECT_EQ(n.params_updated, 3u * (160 + 72));     // the optimizer updates kept parameters only
}

// `wafersim train tiny-cluster --model tiny-mlp --timing bound --json` (one SystemC
// simulation per process, so each run is its own process).
nlohmann::json cli_train(const std::string& model_set) {
  test::TempDir dir;
  const std::string out = (dir.path() / "out.json").string();
  const std::string cmd =
      std::string(WAFERSIM_BINARY) +
      " train tiny-cluster --model tiny-mlp --cluster-model replay --timing bound --steps 2 --json --out " +
      (dir.path() / "run").string() + (model_set.empty() ? "" : " --model-set " + model_set) + " > " + out + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  return nlohmann::json::parse(in);
}

TEST(SparseTraining, ComputeScalesWithDensityAndStepTimeFollows) {
  const auto spec = platforms::load_platform("tiny-cluster").spec;
  compiler::CompileOptions options;
  options.emit = false;
  const auto cm = compiler::compile(load_model("tiny-mlp").spec, compiler::Target{spec.wafer, spec.fabric}, options);
  const WaferTimes bound = bound_programs(spec, cm);
  const nlohmann::json dense = cli_train("");
  std::uint64_t last = 0;
  for (const char* d : {"0.9", "0.5", "0.25", "0.1"}) {
    const nlohmann::json r = cli_train(std::string("sparsity.density=") + d);
    const std::uint64_t kept1 = r["layers"][0]["kept"].get<std::uint64_t>() - 32;  // fc1 weights kept of 512
    const std::uint64_t kept2 = r["layers"][1]["kept"].get<std::uint64_t>() - 8;   // fc2 weights kept of 256
    EXPECT_EQ(kept1, kept_weights(std::stod(d), 512)) << d;
    // Each program of a sparse layer takes ceil(cycles x kept / weights); the GELU fc1 carries stays dense.
    std::uint64_t fc1 = 0, fc2 = 0;
    for (const auto& p : bound.programs) {
      if (p.layer == "fc1") fc1 += cycles_to_picos((p.cycles * kept1 + 511) / 512, bound.clock_hz).count();
      if (p.layer == "act") fc1 += cycles_to_picos(p.cycles, bound.clock_hz).count();
      if (p.layer == "fc2") fc2 += cycles_to_picos((p.cycles * kept2 + 255) / 256, bound.clock_hz).count();
    }
    EXPECT_EQ(r["layers"][0]["forward_ps"].get<std::uint64_t>() + r["layers"][0]["backward_ps"].get<std::uint64_t>(),
              fc1)
        << d;
    EXPECT_EQ(r["layers"][1]["forward_ps"].get<std::uint64_t>() + r["layers"][1]["backward_ps"].get<std::uint64_t>(),
              fc2)
        << d;
    EXPECT_EQ(r["stream_bytes_per_step"].get<std::uint64_t>(), 2 * (kept1 + 32 + kept2 + 8) * 8) << d;
    // Sparse streams and compute both shrink with the density: the step never gets slower.
    const auto t = r["steps"][1]["time_ps"].get<std::uint64_t>();
    if (last) {
      EXPECT_LE(t, last) << d;
    }
    last = t;
  }
  EXPECT_LT(last, dense["steps"][1]["time_ps"].get<std::uint64_t>());
  // Above density 0.5 the index costs more than the pruned values save: 0.9 streams more than dense.
  EXPECT_GT(cli_train("sparsity.density=0.9")["stream_bytes_per_step"].get<std::uint64_t>(),
            dense["stream_bytes_per_step"].get<std::uint64_t>());
}

// Functional: 2 wafers, K steps; the pruned weights (and moments) are exactly zero, the rest
// equal reference::Trainer with the same masks bit for bit, and the loss falls.
void expect_masked_training(memoryx::OptimizerKind kind, float weight_decay) {
  memoryx::OptimizerConfig opt;
  opt.kind = kind;
  opt.learning_rate = 0.05F;
  opt.weight_decay = weight_decay;
  const std::vector<std::string> set{"sparsity.density=0.3", "sparsity.seed=5"};
  const TrainingReport r = train(set, 2, 5, true, opt);

  const ModelSpec m = load_model("tiny-mlp", set).spec;
  const reference::Model model(m);
  const reference::SyntheticTask task(m, model.format(), 7);
  reference::StepPlan plan;
  plan.replicas = 2;
  opt.gradient_scale = plan.mean_scale();
  reference::Trainer trainer(model, model.initial_parameters(7), opt);
  std::map<std::string, std::vector<std::uint8_t>> masks;
  for (const auto& l : m.sparsity.layers) masks[l.layer + ".weight"] = l.mask(m.sparsity.seed);
  trainer.set_masks(masks);
  std::vector<double> losses;
  for (std::uint32_t s = 0; s < 5; ++s) losses.push_back(trainer.step(task.batch(s, m.batch * 2), plan).loss());
  EXPECT_EQ(r.losses, losses);
  EXPECT_LT(r.losses.back(), r.losses.front());

  const auto ref = trainer.parameters();
  for (const auto& [name, mask] : masks) {
    const auto got = r.final_parameters.at(name).to_floats();
    const auto init = r.initial.at(name).to_floats();
    std::uint64_t zeros = 0, moved = 0;
    for (std::size_t i = 0; i < mask.size(); ++i) {
      if (!mask[i]) {
        EXPECT_EQ(got[i], 0.0F) << name << "[" << i << "] is pruned";
        EXPECT_EQ(init[i], 0.0F) << name << "[" << i << "] is pruned";
        ++zeros;
      } else {
        moved += got[i] != init[i];
      }
    }
    EXPECT_EQ(zeros, mask.size() - static_cast<std::uint64_t>(std::count(mask.begin(), mask.end(), 1)));
    EXPECT_GT(moved, 0u) << name;
    EXPECT_TRUE(got == ref.at(name).to_floats()) << name << " differs from the masked reference";
  }
  for (const auto& [name, t] : ref) EXPECT_TRUE(r.final_parameters.at(name) == t) << name;
  for (std::uint32_t l = 0; l < 2; ++l) {
    const auto& mask = *r.layers.layers[l].mask;
    const auto& mx = r.cluster->memoryx();
    for (std::size_t i = 0; i < mask.size(); ++i) {
      if (mask[i]) continue;
      if (!mx.moment1(l).empty()) {
        EXPECT_EQ(mx.moment1(l)[i], 0.0F);
      }
      if (!mx.moment2(l).empty()) {
        EXPECT_EQ(mx.moment2(l)[i], 0.0F);
      }
    }
  }
}

TEST(SparseTraining, MasksStayZeroWithMomentumAndWeightDecay) {
  expect_masked_training(memoryx::OptimizerKind::Momentum, 0.01F);
}
TEST(SparseTraining, MasksStayZeroWithAdamAndWeightDecay) {
  expect_masked_training(memoryx::OptimizerKind::Adam, 0.01F);
}
TEST(SparseTraining, MasksStayZeroWithAdamW) { expect_masked_training(memoryx::OptimizerKind::AdamW, 0.05F); }

}  // namespace
}  // namespace wafersim::platforms::training::sparsity_test
