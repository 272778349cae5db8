// The whole-model reference: gradients of every parameter against finite differences (fp64),
// training on the synthetic tasks, the data-parallel step against one replica, the SwarmX
// summation order, determinism and input errors.

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "memoryx/reference_optimizer.h"
#include "models/model_spec.h"
#include "models/reference/compare.h"
#include "models/reference/model.h"
#include "models/reference/random.h"
#include "models/reference/task.h"
#include "models/reference/training.h"
#include "sim/errors.h"

namespace wafersim::models::reference::reference_model_test {
namespace {

ModelSpec preset(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return load_model(name, overrides).spec;
}

// A graph with every elementwise kind, softmax, a tensor read by several layers and by one
// layer twice, and an activations input that receives a gradient.
constexpr const char* kGraph = R"(
name: graph
dtype: bf16
batch: 3
sequence: 2
inputs:
  - {name: x, kind: activations, features: 6}
  - {name: labels, kind: labels}
layers:
  - {name: a, kind: linear, inputs: [x], features: 8, bias: true}
  - {name: s, kind: silu, inputs: [a]}
  - {name: r, kind: relu, inputs: [a]}
  - {name: m, kind: mul, inputs: [s, r]}
  - {name: sq, kind: mul, inputs: [a, a]}
  - {name: p, kind: softmax, inputs: [m]}
  - {name: t, kind: add, inputs: [p, sq]}
  - {name: g, kind: gelu, inputs: [t]}
  - {name: n, kind: layernorm, inputs: [g]}
  - {name: logits, kind: linear, inputs: [n], features: 5}
  - {name: loss, kind: cross_entropy, inputs: [logits, labels]}
)";

constexpr const char* kGemv = R"(
name: gemv
dtype: fp16
batch: 1
sequence: 1
inputs:
  - {name: x, kind: activations, features: 5}
  - {name: labels, kind: labels}
layers:
  - {name: v, kind: gemv, inputs: [x], features: 7, bias: true}
  - {name: act, kind: swiglu, inputs: [v, v]}
  - {name: out, kind: gemv, inputs: [act], features: 4}
  - {name: loss, kind: cross_entropy, inputs: [out, labels]}
)";

// Central differences of the fp64 loss against the fp64 backward on a few elements of every
// parameter and activation input.
void expect_model_gradients(const ModelSpec& spec, std::uint64_t seed) {
  SCOPED_TRACE(spec.name);
  const Model m(spec, Format::FP64);
  TensorMap p = m.initial_parameters(seed);
  // Move every parameter off its constant initial value so gamma, beta and biases are generic.
  for (auto& [name, t] : p)
    for (std::size_t i = 0; i < t.size(); ++i) t.set_value(i, t.value(i) + 0.1 * std::sin(static_cast<double>(i) + 1));
  const SyntheticTask task(spec, Format::FP64, seed);
  Inputs in = task.batch(0, spec.batch);
  const Gradients g = m.backward(p, in, m.forward(p, in));
  const double h = 1e-6;
  auto check = [&](const std::string& what, Tensor& t, const Tensor& analytic) {
    ASSERT_EQ(t.shape(), analytic.shape()) << what;
    std::set<std::size_t> picks{0, t.size() / 3, t.size() / 2, 2 * t.size() / 3, t.size() - 1};
    for (std::size_t i : picks) {
      const double v = t.value(i);
      t.set_value(i, v + h);
      const double up = m.forward(p, in).loss_value();
      t.set_value(i, v - h);
      const double down = m.forward(p, in).loss_value();
      t.set_value(i, v);
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(analytic.value(i), numeric, 1e-8 + 1e-6 * std::fabs(numeric)) << what << " " << t.index_name(i);
    }
  };
  for (const ParameterInfo& info : m.parameters()) check(info.name, p.at(info.name), g.parameters.at(info.name));
  for (auto& [name, t] : in.activations) check(name, t, g.activations.at(name));
}

TEST(ReferenceModel, EveryGradientMatchesFiniteDifferences) {
  expect_model_gradients(preset("tiny-mlp"), 1);
  expect_model_gradients(preset("tiny-transformer"), 2);
  expect_model_gradients(preset("tiny-transformer", {"transformer.norm=layernorm", "transformer.activation=gelu",
                                                     "transformer.positions=learned", "transformer.bias=true",
                                                     "transformer.tied_embeddings=true", "transformer.kv_heads=4"}),
                         3);
  expect_model_gradients(preset("tiny-transformer", {"transformer.parallel_residual=true",
                                                     "transformer.activation=silu", "transformer.layers=2"}),
                         4);
  expect_model_gradients(preset("tiny-transformer", {"transformer.activation=relu", "transformer.kv_heads=1"}), 5);
  expect_model_gradients(load_model_text(kGraph, "graph.yaml").spec, 6);
  expect_model_gradients(load_model_text(kGemv, "gemv.yaml").spec, 7);
}

TEST(ReferenceModel, ParametersAndInitialisation) {
  const Model m(preset("tiny-transformer", {"transformer.tied_embeddings=true", "transformer.positions=learned"}));
  EXPECT_EQ(m.format(), Format::BF16);
  EXPECT_EQ(m.master_format(), Format::FP32);
  std::uint64_t count = 0;
  for (const ParameterInfo& p : m.parameters()) count += p.shape.elements();
  EXPECT_EQ(count, m.spec().parameters());
  const TensorMap p = m.initial_parameters(5);
  EXPECT_EQ(p.count("head.weight"), 0u);  // tied to embed.weight
  EXPECT_EQ(p.at("h0.ln1.gamma"), Tensor::filled(Format::FP32, vector_shape(16), 1.0));
  const Tensor& q = p.at("h0.q.weight");
  EXPECT_EQ(q, Tensor::uniform(Format::FP32, matrix_shape(16, 16), -0.25, 0.25, derive_seed(5, "h0.q.weight")));
  EXPECT_NE(p.at("h0.k.weight"), Tensor::uniform(Format::FP32, matrix_shape(16, 8), -0.25, 0.25, 5));
}

TEST(ReferenceModel, ForwardRoundsMastersOnceAndRunsInTheStorageFormat) {
  const ModelSpec spec = preset("tiny-transformer");
  const Model m(spec);
  const TensorMap p = m.initial_parameters(1);
  const Inputs in = SyntheticTask(spec, m.format(), 1).batch(0, 2);
  const Forward f = m.forward(p, in);
  EXPECT_EQ(f.values.at("h0.q").format(), Format::BF16);
  EXPECT_EQ(f.values.at("h0.q").shape(), (Shape{2, 8, 16}));
  EXPECT_EQ(f.loss.format(), Format::FP32);
  EXPECT_EQ(f.loss, f.values.at("loss"));
  // The first layer after the embedding, by hand from the rounded master weights.
  const Tensor table = p.at("embed.weight").converted(Format::BF16);
  const Tensor e = f.values.at("embed");
  const auto& tok = in.ids.at("tokens");
  for (std::uint64_t j = 0; j < 16; ++j) EXPECT_EQ(e.bits(e.at(5, j)), table.bits(table.at(tok.ids[5], j)));
  // The bf16 forward approximates the exact one.
  const Model exact(spec, Format::FP64);
  const TensorMap p64 = exact.initial_parameters(1);
  const double loss64 = exact.forward(p64, SyntheticTask(spec, Format::FP64, 1).batch(0, 2)).loss_value();
  EXPECT_NEAR(f.loss_value(), loss64, 0.01 * loss64);
}

// Mean loss of steps [first, first + count).
double mean(const std::vector<double>& v, std::size_t first, std::size_t count) {
  double s = 0;
  for (std::size_t i = first; i < first + count; ++i) s += v[i];
  return s / static_cast<double>(count);
}

std::vector<double> train(const ModelSpec& spec, std::uint64_t batch, int steps, float lr) {
  memoryx::OptimizerConfig c;
  c.kind = memoryx::OptimizerKind::Adam;
  c.learning_rate = lr;
  const Model model(spec);
  Trainer t(model, model.initial_parameters(1), c);
  const SyntheticTask task(spec, model.format(), 1);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) losses.push_back(t.step(task.batch(static_cast<std::uint64_t>(s), batch), {}).loss());
  return losses;
}

TEST(ReferenceTraining, TinyMlpLossFallsOnTheTeacherTask) {
  // Measured: 2.07 at step 0, mean of the first five 1.97, of the last five 0.87.
  const std::vector<double> l = train(preset("tiny-mlp"), 32, 20, 3e-2F);
  EXPECT_LT(mean(l, 15, 5), 0.6 * mean(l, 0, 5)) << l.front() << " -> " << l.back();
}

TEST(ReferenceTraining, TinyTransformerLossFallsOnTheBigramTask) {
  // Measured: 3.84 at step 0 (ln 32 = 3.47 for uniform predictions), mean of the first five
  // 3.35, of the last five 2.27; the task's floor is about ln 4 = 1.39.
  const std::vector<double> l = train(preset("tiny-transformer"), 8, 20, 3e-2F);
  EXPECT_LT(mean(l, 15, 5), 0.8 * mean(l, 0, 5)) << l.front() << " -> " << l.back();
}

TEST(ReferenceTraining, EveryOptimizerStepsTheSummedGradientWithTheMemoryXReference) {
  const ModelSpec spec = preset("tiny-mlp");
  const Model model(spec);
  const TensorMap init = model.initial_parameters(2);
  const Inputs batch = SyntheticTask(spec, model.format(), 2).batch(0, 8);
  const StepPlan plan{2, 4, 1};
  for (auto kind : {memoryx::OptimizerKind::Sgd, memoryx::OptimizerKind::Momentum, memoryx::OptimizerKind::Adam,
                    memoryx::OptimizerKind::AdamW}) {
    SCOPED_TRACE(memoryx::to_string(kind));
    memoryx::OptimizerConfig c;
    c.kind = kind;
    c.learning_rate = 0.05F;
    c.weight_decay = 0.01F;
    c.gradient_scale = plan.mean_scale();
    Trainer t(model, init, c);
    const StepGradients g = t.step(batch, plan);
    const TensorMap after = t.parameters();
    for (const ParameterInfo& info : model.parameters()) {
      memoryx::ReferenceState s = memoryx::ReferenceState::with_weights(init.at(info.name).to_floats(), kind);
      memoryx::reference_step(c, s, g.sum.at(info.name).to_floats());
      EXPECT_EQ(after.at(info.name), Tensor::of_floats(info.shape, s.weights)) << info.name;
      EXPECT_NE(after.at(info.name), init.at(info.name)) << info.name;
    }
    if (kind == memoryx::OptimizerKind::Sgd) {
      // w - lr (g / 2 + wd w), each operation in fp32.
      const float w = init.at("fc1.weight").to_floats()[5], gs = g.sum.at("fc1.weight").to_floats()[5];
      const float step = gs * 0.5F + 0.01F * w;
      EXPECT_EQ(after.at("fc1.weight").to_floats()[5], w - 0.05F * step);
    }
  }
}

TEST(ReferenceTraining, SwarmXSumOrderFollowsTheTree) {
  // Values whose sum depends on the order: 1 + 2^-24 + 2^-24 ... in fp32.
  const double e = std::ldexp(1.0, -24);
  auto one = [](double v) { return Tensor::of_values(Format::FP32, vector_shape(1), {v}); };
  // 4 replicas under 2 x 1:2 (arity 2): (g0 + g1) + (g2 + g3) = (1 + 2^-24 -> 1) + 2^-23 = 1 + 2^-23.
  EXPECT_EQ(swarmx_sum({one(1), one(e), one(e), one(e)}, 2).value(0), 1 + 2 * e * 1);
  // Under 1:4 (arity 4): ((g0 + g1) + g2) + g3 = 1.
  EXPECT_EQ(swarmx_sum({one(1), one(e), one(e), one(e)}, 4).value(0), 1.0);
  // The nesting of docs/swarmx.md, 8 replicas under 1:4, against memoryx::reference_sum.
  std::vector<Tensor> g;
  std::vector<std::vector<float>> f;
  for (int i = 0; i < 8; ++i) {
    g.push_back(Tensor::uniform(Format::FP32, vector_shape(64), -1, 1, static_cast<std::uint64_t>(i)));
    f.push_back(g.back().to_floats());
  }
  const std::vector<float> left = memoryx::reference_sum({&f[0], &f[1], &f[2], &f[3]});
  const std::vector<float> right = memoryx::reference_sum({&f[4], &f[5], &f[6], &f[7]});
  EXPECT_EQ(swarmx_sum(g, 4), Tensor::of_floats(vector_shape(64), memoryx::reference_sum({&left, &right})));
  // 5 replicas: (g0..g3) + g4; one replica: itself.
  const std::vector<float> four = memoryx::reference_sum({&f[0], &f[1], &f[2], &f[3]});
  EXPECT_EQ(swarmx_sum({g[0], g[1], g[2], g[3], g[4]}, 4),
            Tensor::of_floats(vector_shape(64), memoryx::reference_sum({&four, &f[4]})));
  EXPECT_EQ(swarmx_sum({g[3]}, 4), g[3]);
}

memoryx::OptimizerConfig adam(const StepPlan& plan) {
  memoryx::OptimizerConfig c;
  c.kind = memoryx::OptimizerKind::Adam;
  c.learning_rate = 1e-2F;
  c.gradient_scale = plan.mean_scale();
  return c;
}

// Parameters after `steps` steps of the plan.
TensorMap run_plan(const ModelSpec& spec, const StepPlan& plan, std::uint64_t batch, int steps) {
  const Model model(spec);
  Trainer t(model, model.initial_parameters(3), adam(plan));
  const SyntheticTask task(spec, model.format(), 3);
  for (int s = 0; s < steps; ++s) t.step(task.batch(static_cast<std::uint64_t>(s), batch), plan);
  return t.parameters();
}

TEST(ReferenceDataParallel, ReplicasEqualOneReplicaAccumulatingTheSameMicrobatchesBitForBit) {
  // N replicas under one 1:4 switch sum ((g0 + g1) + g2) + g3: the order in which one replica
  // accumulates N microbatches. Same order, same bits.
  for (const char* name : {"tiny-mlp", "tiny-transformer"}) {
    const ModelSpec spec = preset(name);
    for (std::uint32_t n : {2u, 4u}) {
      SCOPED_TRACE(testing::Message() << name << ", " << n << " replicas");
      const TensorMap dp = run_plan(spec, StepPlan{n, 4, 1}, 8, 3);
      const TensorMap one = run_plan(spec, StepPlan{1, 4, n}, 8, 3);
      for (const auto& [p, t] : dp)
        EXPECT_TRUE(compare_exact(one.at(p), t).ok()) << p << ": " << compare_exact(one.at(p), t).describe();
    }
  }
}

TEST(ReferenceDataParallel, AnotherOrderStaysWithinTheRowOrderTolerance) {
  for (const char* name : {"tiny-mlp", "tiny-transformer"}) {
    const ModelSpec spec = preset(name);
    const Model model(spec);
    const TensorMap p = model.initial_parameters(4);
    const Inputs batch = SyntheticTask(spec, model.format(), 4).batch(0, 8);
    // One replica, one chain over all rows, and its tolerance for another row order.
    const Forward f = model.forward(p, batch);
    const Gradients single = model.backward(p, batch, f);
    const auto allowed = model.row_order_tolerance(batch, f, single);
    for (const StepPlan plan : {StepPlan{2, 4, 1}, StepPlan{4, 4, 1}, StepPlan{4, 2, 1}, StepPlan{1, 4, 4}}) {
      SCOPED_TRACE(testing::Message() << name << ", " << plan.replicas << " replicas, arity " << plan.arity << ", "
                                      << plan.microbatches << " microbatches");
      const StepGradients dp = data_parallel_gradients(model, p, batch, plan);
      std::size_t differing = 0;
      for (const ParameterInfo& info : model.parameters()) {
        // The mean gradient: the sum scaled by 1 / (replicas x microbatches), exact (a power of two).
        Tensor mean_grad = dp.sum.at(info.name);
        const Arith A(Format::FP32);
        const Bits scale = A.of(plan.mean_scale());
        for (std::size_t i = 0; i < mean_grad.size(); ++i) mean_grad.set_bits(i, A.mul(mean_grad.bits(i), scale));
        const Comparison c = compare_within(single.parameters.at(info.name), mean_grad, allowed.at(info.name));
        EXPECT_TRUE(c.ok()) << info.name << ": " << c.describe();
        differing += c.differing;
      }
      EXPECT_GT(differing, 0u) << "a different order should change some bits";
    }
  }
}

TEST(ReferenceDataParallel, TreeOrderDiffersFromSequentialAccumulationUnder2x1to2) {
  // Four replicas under 2 x 1:2 sum (g0 + g1) + (g2 + g3); one replica with four microbatches
  // sums ((g0 + g1) + g2) + g3: not the same order, so not the same bits.
  const ModelSpec spec = preset("tiny-mlp");
  const Model model(spec);
  const TensorMap p = model.initial_parameters(4);
  const Inputs batch = SyntheticTask(spec, model.format(), 4).batch(0, 8);
  const StepGradients tree = data_parallel_gradients(model, p, batch, StepPlan{4, 2, 1});
  const StepGradients seq = data_parallel_gradients(model, p, batch, StepPlan{1, 4, 4});
  std::size_t differing = 0;
  for (const auto& [name, t] : tree.sum) differing += compare_exact(seq.sum.at(name), t).differing;
  EXPECT_GT(differing, 0u);
  EXPECT_EQ(tree.losses, seq.losses);  // the forward passes are the same
}

TEST(ReferenceTraining, SameSeedSameBits) {
  const ModelSpec spec = preset("tiny-transformer");
  const TensorMap a = run_plan(spec, StepPlan{2, 4, 1}, 4, 3);
  const TensorMap b = run_plan(spec, StepPlan{2, 4, 1}, 4, 3);
  for (const auto& [name, t] : a) EXPECT_EQ(t, b.at(name)) << name;
  const Model model(spec);
  EXPECT_NE(model.initial_parameters(1).at("h0.q.weight"), model.initial_parameters(2).at("h0.q.weight"));
  const SyntheticTask t1(spec, Format::BF16, 1), t2(spec, Format::BF16, 2);
  EXPECT_EQ(t1.batch(3, 4).ids.at("tokens").ids, t1.batch(3, 4).ids.at("tokens").ids);
  EXPECT_NE(t1.batch(3, 4).ids.at("tokens").ids, t1.batch(4, 4).ids.at("tokens").ids);
  EXPECT_NE(t1.batch(3, 4).ids.at("tokens").ids, t2.batch(3, 4).ids.at("tokens").ids);
}

TEST(ReferenceTask, BigramLabelsAreTheNextTokensAndTeacherLabelsTheArgmax) {
  const ModelSpec spec = preset("tiny-transformer");
  const SyntheticTask task(spec, Format::BF16, 9);
  EXPECT_EQ(task.kind(), SyntheticTask::Kind::Bigram);
  const Inputs in = task.batch(0, 3);
  const auto& tok = in.ids.at("tokens").ids;
  const auto& lab = in.ids.at("labels").ids;
  ASSERT_EQ(tok.size(), 24u);
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t i = 0; i + 1 < 8; ++i) EXPECT_EQ(lab[b * 8 + i], tok[b * 8 + i + 1]);
  // Each token is followed by at most 4 distinct successors over many samples.
  std::map<std::uint32_t, std::set<std::uint32_t>> next;
  const Inputs many = task.batch(1, 64);
  for (std::size_t r = 0; r < many.ids.at("tokens").ids.size(); ++r)
    next[many.ids.at("tokens").ids[r]].insert(many.ids.at("labels").ids[r]);
  for (const auto& [t, s] : next) EXPECT_LE(s.size(), SyntheticTask::kSuccessors) << t;
  EXPECT_GT(next.size(), 8u);

  const SyntheticTask teacher(preset("tiny-mlp"), Format::FP32, 9);
  EXPECT_EQ(teacher.kind(), SyntheticTask::Kind::Teacher);
  EXPECT_EQ(teacher.classes(), 8u);
  const Inputs ti = teacher.batch(0, 64);
  std::set<std::uint32_t> classes(ti.ids.at("labels").ids.begin(), ti.ids.at("labels").ids.end());
  EXPECT_GT(classes.size(), 3u);  // not a constant label
  EXPECT_EQ(ti.activations.at("x").shape(), (Shape{64, 1, 16}));
}

TEST(ReferenceErrors, MissingInputsParametersAndUnevenBatches) {
  const ModelSpec spec = preset("tiny-mlp");
  const Model m(spec);
  const TensorMap p = m.initial_parameters(1);
  Inputs in = SyntheticTask(spec, Format::FP32, 1).batch(0, 6);
  EXPECT_NO_THROW((void)m.forward(p, in));
  Inputs no_labels = in;
  no_labels.ids.clear();
  try {
    (void)m.forward(p, no_labels);
    FAIL() << "expected an InputError";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model 'tiny-mlp' needs labels 'labels'"), std::string::npos) << e.what();
  }
  Inputs wrong_format = in;
  wrong_format.activations.at("x") = in.activations.at("x").converted(Format::BF16);
  EXPECT_THROW((void)m.forward(p, wrong_format), sim::InputError);
  TensorMap missing = p;
  missing.erase("fc2.bias");
  EXPECT_THROW((void)m.forward(missing, in), sim::InputError);
  Inputs bad_label = in;
  bad_label.ids.at("labels").ids[3] = 8;
  EXPECT_THROW((void)m.forward(p, bad_label), sim::InputError);
  EXPECT_THROW((void)data_parallel_gradients(m, p, in, StepPlan{4, 4, 1}), sim::InputError);
  EXPECT_THROW(Trainer(Model(spec, Format::FP64), m.initial_parameters(1), memoryx::OptimizerConfig{}),
               std::invalid_argument);
  EXPECT_THROW(SyntheticTask(load_model_text(R"(
name: no-labels
inputs: [{name: x, kind: activations, features: 4}]
layers: [{name: y, kind: linear, inputs: [x], features: 2}]
)",
                                             "m.yaml")
                                 .spec,
                             Format::FP32, 1),
               sim::InputError);
}

}  // namespace
}  // namespace wafersim::models::reference::reference_model_test
