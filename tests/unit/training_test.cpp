// Weight-streaming training of compiled models on clusters (platforms/training): layer compute
// times from the compiled programs on one simulated wafer drive the cluster loop; a step takes
// exactly the documented time when the wafers are the bound; functional runs on 1, 2 and 4
// wafers end with the host reference's data-parallel weights bit for bit.

#include <gtest/gtest.h>

#include <systemc>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memoryx/reference_optimizer.h"
#include "models/compiler/compiler.h"
#include "models/reference/task.h"
#include "models/reference/tolerance.h"
#include "models/reference/training.h"
#include "platforms/cluster.h"
#include "platforms/training/replica_gradients.h"
#include "platforms/training/training_run.h"
#include "sim/errors.h"
#include "sim/stats/formatters.h"
#include "tests/support/temp_dir.h"

namespace wafersim::platforms::training::training_test {
namespace {
using namespace wafersim::models;  // the model specs, the compiler and the references
using platforms::Activity;
using sim::Picos;

std::size_t at(Activity a) { return static_cast<std::size_t>(a); }

// Two bias-free linear layers of 2048 parameters: two 4 KiB chunks each on tiny-cluster.
constexpr const char* kMlp = R"(name: mlp-train
dtype: bf16
batch: 4
sequence: 8
inputs: [{name: x, kind: activations, features: 32}]
layers:
  - {name: fc1, kind: linear, inputs: [x], features: 64}
  - {name: act, kind: gelu, inputs: [fc1]}
  - {name: fc2, kind: linear, inputs: [act], features: 32}
  - {name: res, kind: add, inputs: [fc2, x]}
)";

ModelSpec mlp() {
  test::TempDir dir;
  return load_model(dir.write("mlp.yaml", kMlp)).spec;
}

TEST(Training, LayerTimesComeFromTheSimulatedPrograms) {
  const auto spec = platforms::load_platform("tiny-cluster").spec;
  const ModelSpec m = mlp();
  const auto cm = compiler::compile(m, compiler::Target{spec.wafer, spec.fabric});
  const WaferTimes t = simulate_programs(spec, cm, 1, true);
  ASSERT_EQ(t.programs.size(), cm.programs.size());
  EXPECT_GT(t.checked, 0u);
  EXPECT_EQ(t.mismatches, 0u);
  for (std::size_t i = 0; i < cm.programs.size(); ++i) {
    EXPECT_EQ(t.programs[i].layer, cm.programs[i].layer);
    // A simulated layer is never faster than its analytic bound.
    EXPECT_GE(t.programs[i].cycles, cm.programs[i].bound.cycles) << cm.programs[i].name();
  }
  const ClusterModel c = cluster_model(reference::Model(m), t);
  ASSERT_EQ(c.layers.size(), 2u);
  EXPECT_EQ(c.layers[0].name, "fc1");
  EXPECT_EQ(c.layers[0].params, 2048u);
  EXPECT_EQ(c.layers[0].carries, std::vector<std::string>{"act"});
  EXPECT_EQ(c.loss_layers, std::vector<std::string>{"res"});
  Picos fwd1{0}, bwd1{0}, loss{0};
  for (const auto& p : t.programs) {
    const Picos ps = cycles_to_picos(p.cycles, t.clock_hz);
    if (p.layer == "fc1" || p.layer == "act") (p.phase == compiler::Phase::Forward ? fwd1 : bwd1) += ps;
    if (p.layer == "res") loss += ps;
  }
  EXPECT_EQ(c.layers[0].forward, fwd1);
  EXPECT_EQ(c.layers[0].backward, bwd1);
  EXPECT_EQ(c.loss, loss);
}

// Runs every event before `t`.
void run_before(Picos t) { sc_core::sc_start(sim::to_sc_time(t - sim::now())); }

// tiny-cluster (docs/memoryx.md, "One training step"): when every chunk's compute outlasts
// its link time the step is A + the wafer's compute + the last gradient's way up + layer 0's
// update, with each layer's compute from the simulated programs.
TEST(Training, CompiledStepTakesExactlyTheFormula) {
  const auto spec = platforms::load_platform("tiny-cluster").spec;
  const ModelSpec m = mlp();
  const auto cm = compiler::compile(m, compiler::Target{spec.wafer, spec.fabric});
  const ClusterModel c = cluster_model(reference::Model(m), simulate_programs(spec, cm, 1, false));
  const auto ec = c.endpoint_config();
  const Picos lat{100'000}, dram_read{163'840}, dram_write{163'840}, link{327'680}, d{1'000'000};
  Picos compute = sim::to_picos(ec.loss_time);
  for (std::uint32_t l = 0; l < 2; ++l) {
    const Picos f = sim::transfer_time(4096, ec.per_layer[l].forward);
    const Picos b = sim::transfer_time(4096, ec.per_layer[l].backward);
    ASSERT_GT(f, link) << "layer " << l << " must be compute-bound for the formula";
    ASSERT_GT(b, link) << "layer " << l;
    compute += 2 * f + 2 * b;
  }
  const Picos A = lat + dram_read + 2 * link + d;
  const Picos E = A + compute;
  const Picos G = E + link + d + link + dram_write + lat;
  const Picos T = G + lat + Picos(2'048'000) + lat;  // Adam on 2048 parameters at 1 Gparam/s

  sim::stats::Group stats("root");
  platforms::ClusterParts parts;
  parts.layers = c.memoryx_layers();
  parts.stand_ins = platforms::model_endpoints(ec);
  platforms::Cluster cluster("cluster", spec, std::move(parts), stats);
  cluster.memoryx().schedule_steps(1);
  run_before(T);
  EXPECT_FALSE(cluster.memoryx().finished()) << "the step ended before the formula's time";
  run_before(T + Picos(1));
  EXPECT_TRUE(cluster.memoryx().finished());
  sc_core::sc_start();
  const auto t = platforms::step_timeline(cluster.memoryx(), cluster.endpoints());
  const auto& s = t.steps.at(0);
  EXPECT_EQ(s.duration(), T);
  EXPECT_EQ(s.exposed[at(Activity::Stream)], A);
  EXPECT_EQ(s.exposed[at(Activity::Compute)], compute);
  EXPECT_EQ(s.busy[at(Activity::Compute)], compute);
  EXPECT_EQ(s.exposed[at(Activity::Reduce)], G - E);
}

// The whole driver: every step's time is at least each activity's exposed time (and their sum
// with the idle time), and the same seed gives the same statistics bytes.
std::string run_and_dump(std::uint32_t steps, TrainingReport* out = nullptr) {
  const auto spec = platforms::load_platform("tiny-cluster").spec;
  sim::stats::Group stats("");
  TrainingConfig cfg;
  cfg.cluster = ClusterMode::Replay;  // the replay's own properties
  cfg.steps = steps;
  auto r = run_training(spec, mlp(), cfg, stats);
  if (out) *out = r;
  return sim::stats::stats_file_json(stats);
}

TEST(Training, StepsAddUp) {
  TrainingReport r;
  run_and_dump(3, &r);
  ASSERT_EQ(r.timeline.steps.size(), 3u);
  for (const auto& s : r.timeline.steps) {
    Picos sum = s.idle;
    for (std::size_t k = 0; k < platforms::kActivities; ++k) {
      EXPECT_GE(s.duration(), s.exposed[k]);
      EXPECT_LE(s.exposed[k], s.busy[k]);
      sum += s.exposed[k];
    }
    EXPECT_EQ(sum, s.duration());
    EXPECT_EQ(s.duration(), r.timeline.steps[0].duration());
  }
  EXPECT_EQ(r.total(), r.timeline.steps.back().end);
  EXPECT_DOUBLE_EQ(r.samples_per_second(), 3.0 * 2 * 4 / r.total().seconds());
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `wafersim train` twice with the same seed: the same stats.json, byte for byte, with
// the per-step breakdown in it; the text report names every activity.
TEST(Training, CommandLineRunsAreDeterministic) {
  test::TempDir dir;
  const std::string model = dir.write("mlp.yaml", kMlp);
  std::string text;
  for (const char* out : {"a", "b"}) {
    const std::string cmd = std::string(WAFERSIM_BINARY) + " train tiny-cluster --model " + model +
                            " --steps 2 --out " + (dir.path() / out).string() + " > " + (dir.path() / out).string() +
                            ".txt 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir.path() / (std::string(out) + ".txt"));
    text = read_file(dir.path() / (std::string(out) + ".txt"));
  }
  const std::string a = read_file(dir.path() / "a" / "stats.json");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, read_file(dir.path() / "b" / "stats.json"));
  EXPECT_NE(a.find("exposed_optimizer"), std::string::npos);
  for (const char* word : {"compute", "stream", "reduce", "optimizer", "exposed", "samples/s"})
    EXPECT_NE(text.find(word), std::string::npos) << word << " missing from:\n" << text;
}

// Functional: a model (tiny-mlp: fp32, cross-entropy) on its synthetic task, K steps on N
// wafers; the final master weights equal reference::Trainer with N replicas in SwarmX's order.
void expect_reference_training(std::uint32_t wafers, memoryx::OptimizerKind kind,
                               const std::string& model_name = "tiny-mlp") {
  const auto spec = platforms::load_platform("tiny-cluster", {"cluster.systems=" + std::to_string(wafers)}).spec;
  const ModelSpec m = load_model(model_name).spec;
  TrainingConfig cfg;
  cfg.cluster = ClusterMode::Replay;  // the replay's own properties
  cfg.steps = 4;
  cfg.timing = TimingSource::Bound;  // the times do not matter here: the analytic bounds are quicker
  cfg.functional = true;
  cfg.seed = 7;
  cfg.optimizer.kind = kind;
  cfg.optimizer.learning_rate = 0.05F;
  sim::stats::Group stats("");
  const TrainingReport r = run_training(spec, m, cfg, stats);

  const reference::Model model(m);
  const reference::SyntheticTask task(m, model.format(), cfg.seed);
  memoryx::OptimizerConfig opt = cfg.optimizer;
  reference::StepPlan plan;
  plan.replicas = wafers;
  plan.arity = spec.swarmx.arity();
  opt.gradient_scale = plan.mean_scale();
  reference::Trainer trainer(model, model.initial_parameters(cfg.seed), opt);
  std::vector<double> losses;
  for (std::uint32_t s = 0; s < cfg.steps; ++s)
    losses.push_back(trainer.step(task.batch(s, m.batch * wafers), plan).loss());

  EXPECT_EQ(r.losses, losses);
  EXPECT_LT(r.losses.back(), r.losses.front()) << "the loss must fall";
  const auto ref = trainer.parameters();
  ASSERT_EQ(r.final_parameters.size(), ref.size());
  for (const auto& [name, t] : ref) {
    const auto& got = r.final_parameters.at(name);
    EXPECT_TRUE(got == t) << name << " differs from the reference after " << cfg.steps << " steps on " << wafers
                          << " wafers";
    EXPECT_FALSE(got == r.initial.at(name)) << name << " never changed";
  }
}

TEST(Training, OneWaferTrainsLikeTheReference) { expect_reference_training(1, memoryx::OptimizerKind::Adam); }
TEST(Training, TwoWafersTrainLikeTheReference) { expect_reference_training(2, memoryx::OptimizerKind::AdamW); }
TEST(Training, FourWafersTrainLikeTheReference) { expect_reference_training(4, memoryx::OptimizerKind::Momentum); }
// The tiny transformer block (embedding, RMSNorm, attention, SwiGLU, cross-entropy).
TEST(Training, TinyTransformerOnTwoWafersTrainsLikeTheReference) {
  expect_reference_training(2, memoryx::OptimizerKind::Adam, "tiny-transformer");
}
// Two switch levels (1:4): ((g0+g1)+g2)+g3 and ((g4+g5)+g6)+g7, then their sum.
TEST(Training, EightWafersOnTwoLevelsTrainLikeTheReference) {
  expect_reference_training(8, memoryx::OptimizerKind::Sgd);
}

// Functional on the compiled programs' arithmetic (docs/training.md): tiny-mlp on 2 wafers of
// tiny-cluster, 2 steps, every wafer's step run by the compiled programs on a simulated wafer.
TrainingReport programs_run(memoryx::OptimizerKind kind, std::uint32_t steps) {
  const auto spec = platforms::load_platform("tiny-cluster").spec;
  TrainingConfig cfg;
  cfg.cluster = ClusterMode::Replay;  // the replay's own properties
  cfg.steps = steps;
  cfg.functional = true;
  cfg.arithmetic = WaferArithmetic::Programs;
  cfg.seed = 7;
  cfg.optimizer.kind = kind;
  cfg.optimizer.learning_rate = 0.05F;
  sim::stats::Group stats("");
  return run_training(spec, load_model("tiny-mlp").spec, cfg, stats);
}

std::vector<float> flat_of(const ClusterModel& c, std::uint32_t l, const reference::TensorMap& m) {
  return c.flatten(l, m);
}

// Bit for bit (unlike ==, tells -0 from +0).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// MemoryX's final weights are the trajectory of the programs' gradients: each step's two
// gradients summed (g0 + g1, fp32) and applied with the mean scale, from the initial weights;
// every wafer received exactly the weights its gradients came from (else a simulation error).
TEST(Training, TwoWafersTrainOnTheProgramsGradients) {
  const TrainingReport r = programs_run(memoryx::OptimizerKind::Adam, 2);
  ASSERT_EQ(r.wafers, 2u);
  ASSERT_TRUE(r.trajectory);
  const ProgramTrajectory& t = *r.trajectory;
  ASSERT_EQ(t.gradients.size(), 2u);
  ASSERT_EQ(t.weights.size(), 3u);
  EXPECT_GT(t.checked, 0u);
  const std::uint32_t L = static_cast<std::uint32_t>(r.layers.layers.size());
  ASSERT_EQ(L, 2u);
  memoryx::OptimizerConfig opt = r.optimizer;
  EXPECT_EQ(opt.gradient_scale, 0.5F);
  std::vector<memoryx::ReferenceState> st;
  for (std::uint32_t l = 0; l < L; ++l) {
    st.push_back(memoryx::ReferenceState::with_weights(flat_of(r.layers, l, r.initial), opt.kind));
    EXPECT_TRUE(same_bits(st[l].weights, t.weights[0][l]));
  }
  for (std::uint32_t s = 0; s < 2; ++s) {
    ASSERT_EQ(t.gradients[s].size(), 2u);
    for (std::uint32_t l = 0; l < L; ++l) {
      const auto& g0 = t.gradients[s][0][l];
      const auto& g1 = t.gradients[s][1][l];
      ASSERT_EQ(g0.size(), st[l].weights.size());
      EXPECT_NE(g0, g1) << "the wafers' shards differ";
      std::vector<float> sum(g0.size());
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = g0[i] + g1[i];
      memoryx::reference_step(opt, st[l], sum);
      EXPECT_TRUE(same_bits(st[l].weights, t.weights[s + 1][l])) << "step " << s << " layer " << l;
    }
  }
  for (std::uint32_t l = 0; l < L; ++l) {
    EXPECT_TRUE(same_bits(flat_of(r.layers, l, r.final_parameters), st[l].weights)) << "layer " << l;
    EXPECT_NE(st[l].weights, t.weights[0][l]) << "layer " << l << " never changed";
  }
  ASSERT_EQ(r.losses.size(), 2u);
  EXPECT_EQ(r.losses[0], (t.losses[0][0] + t.losses[0][1]) / 2);
  // The first step's weights are the host's initial weights: its losses are the reference's.
  const ModelSpec m = load_model("tiny-mlp").spec;
  const reference::Model model(m);
  const reference::SyntheticTask task(m, model.format(), 7);
  const auto batch = task.batch(0, m.batch * 2);
  for (std::uint32_t e = 0; e < 2; ++e) {
    const auto shard = batch.batch_slice(e * m.batch, m.batch);
    EXPECT_EQ(t.losses[0][e], model.forward(model.initial_parameters(7), shard).loss_value()) << "wafer " << e;
  }
}

// Reductions on the way to layer `name`'s weight gradient in a chain of linear layers ending
// in cross-entropy (tiny-mlp): every linear's forward (K + bias terms), the cross-entropy's
// sum over its classes, the data gradient of every linear after `name` (N terms) and the
// gradient's own reduction over the R rows.
std::uint64_t path_terms(const ModelSpec& m, const std::string& name, std::uint64_t rows) {
  std::uint64_t n = rows;
  bool after = false;
  for (const auto& l : m.layers) {
    if (l.kind == LayerKind::Linear) {
      n += l.in_features + (l.bias ? 1 : 0);
      if (after) n += l.features;
      after = after || l.name == name;
    }
    if (l.kind == LayerKind::CrossEntropy) n += m.shape_of(l.inputs[0]).features;
  }
  return n;
}

// The programs' gradients against the host reference's (models/reference) on the same weights
// and shard, for every step and wafer of the run. Not bit for bit: the reference evaluates
// every reduction as one fused multiply-add chain in index order, the PEs as per-PE chains
// whose rounded partials are summed along the fabric (runtime/pe_order.h): the forward
// products over K, the data gradients over N, the weight gradients over the R = 4 rows of the
// wafer. The losses are equal bit for bit. Tolerance per element (docs/training.md): two
// orders of an n-term fp32 reduction differ by at most 2 gamma_n sum|terms| (Higham); with the
// row reduction's sum|terms| (reference::Model::row_order_tolerance) and n the reductions on
// the element's path (path_terms), i.e. row_order_tolerance x gamma_n / gamma_R: a first-order
// model in which the chained reductions' relative errors add and GELU and softmax do not
// amplify them (not a proof; the largest error measured is a tenth of it).
TEST(Training, ProgramsGradientsMatchTheReferenceWithinTheOrderTolerance) {
  const TrainingReport r = programs_run(memoryx::OptimizerKind::Sgd, 2);
  const ProgramTrajectory& t = *r.trajectory;
  const ModelSpec m = load_model("tiny-mlp").spec;
  const reference::Model model(m);
  const reference::SyntheticTask task(m, model.format(), 7);
  const std::uint64_t R = m.batch * m.sequence;
  std::size_t compared = 0, differ = 0;
  double worst = 0;                                      // largest |error| / tolerance
  std::map<std::string, std::vector<double>> first_tol;  // step 0: the wafers' tolerances summed
  for (std::uint32_t s = 0; s < 2; ++s) {
    reference::TensorMap params;
    for (std::uint32_t l = 0; l < 2; ++l) r.layers.unflatten(l, t.weights[s][l], params);
    const auto batch = task.batch(s, m.batch * 2);
    for (std::uint32_t e = 0; e < 2; ++e) {
      const auto shard = batch.batch_slice(e * m.batch, m.batch);
      const auto f = model.forward(params, shard);
      EXPECT_EQ(t.losses[s][e], f.loss_value()) << "step " << s << " wafer " << e << ": the loss is bit for bit";
      const auto g = model.backward(params, shard, f);
      const auto rows = model.row_order_tolerance(shard, f, g);
      for (std::uint32_t l = 0; l < 2; ++l) {
        const auto& layer = r.layers.layers[l];
        const double widen = reference::gamma(path_terms(m, layer.name, R), reference::Format::FP32) /
                             reference::gamma(R, reference::Format::FP32);
        for (const auto& slot : layer.parameters) {
          const auto& want = g.parameters.at(slot.name);
          const auto& bound = rows.at(slot.name);
          const auto& got = t.gradients[s][e][l];
          for (std::size_t i = 0; i < want.size(); ++i) {
            const double a = got[slot.offset + i], b = want.value(i), tol = bound[i] * widen;
            if (s == 0) {
              auto& ft = first_tol[slot.name];
              ft.resize(want.size());
              ft[i] += tol;
            }
            ++compared;
            differ += a != b;
            if (tol > 0) worst = std::max(worst, std::fabs(a - b) / tol);
            EXPECT_LE(std::fabs(a - b), tol)
                << "step " << s << " wafer " << e << " " << slot.name << "[" << i << "]: " << a << " vs " << b;
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 4u * (16 * 32 + 32 + 32 * 8 + 8));
  EXPECT_GT(differ, 0u) << "bit for bit now: tighten this test to equality";

  // reference::Trainer's first SGD step from the same initial weights: its sum of the two
  // wafers' gradients lies within their two tolerances (+ one rounding of the sum), and its new
  // weights w - lr (g / 2) within lr / 2 of that (+ the roundings of lr g / 2 and of the new
  // weight); fp32 ulps taken at twice the magnitude to stay conservative.
  auto ulp = [](double x) { return std::ldexp(1.0, std::max(std::ilogb(2 * std::fabs(x) + 1e-38), -126) - 23); };
  reference::StepPlan plan;
  plan.replicas = 2;
  plan.arity = platforms::load_platform("tiny-cluster").spec.swarmx.arity();
  reference::Trainer trainer(model, model.initial_parameters(7), r.optimizer);
  const auto ref_step = trainer.step(task.batch(0, m.batch * 2), plan);
  const auto after = trainer.parameters();
  const double lr = r.optimizer.learning_rate;
  std::size_t updated = 0, updated_differ = 0;
  for (std::uint32_t l = 0; l < 2; ++l)
    for (const auto& slot : r.layers.layers[l].parameters) {
      const auto& gsum = ref_step.sum.at(slot.name);
      const auto& want = after.at(slot.name);
      for (std::size_t i = 0; i < want.size(); ++i) {
        const double g = gsum.value(i), w = want.value(i), got = t.weights[1][l][slot.offset + i];
        const double dg = first_tol.at(slot.name)[i] + ulp(g);
        const double tol = lr * dg / 2 + ulp(lr * (std::fabs(g) + dg) / 2) + ulp(std::fabs(w) + lr * dg);
        ++updated;
        updated_differ += got != w;
        EXPECT_LE(std::fabs(got - w), tol) << slot.name << "[" << i << "] after one step: " << got << " vs " << w;
      }
    }
  EXPECT_EQ(updated, compared / 4);
  std::cout << updated_differ << " of " << updated
            << " weights after the first step differ from reference::Trainer's\n";
  std::cout << differ << " of " << compared << " gradient elements differ from the reference's; largest error " << worst
            << " of the tolerance\n";
}

// Serving a trajectory: a wafer gets its gradients only for exactly the weights they were
// computed from; one bit off in any received weight is a simulation error naming it.
TEST(Training, ServedGradientsNeedTheirExactWeights) {
  const ModelSpec m = load_model("tiny-mlp").spec;
  const reference::Model model(m);
  const reference::SyntheticTask task(m, model.format(), 7);
  WaferTimes times;
  for (const auto& l : {"fc1", "act", "fc2", "loss"})
    for (auto ph : {compiler::Phase::Forward, compiler::Phase::BackwardData}) times.programs.push_back({l, ph, 10, 0});
  times.clock_hz = 1e9;
  const ClusterModel c = cluster_model(model, times);
  auto tr = std::make_shared<ProgramTrajectory>();
  const auto init = model.initial_parameters(7);
  tr->weights.emplace_back();
  tr->gradients.emplace_back();
  tr->losses.push_back({0.5});
  tr->gradients[0].emplace_back();
  for (std::uint32_t l = 0; l < 2; ++l) {
    tr->weights[0].push_back(c.flatten(l, init));
    tr->gradients[0][0].push_back(std::vector<float>(c.layers[l].params, 0.25F * static_cast<float>(l + 1)));
  }
  for (bool perturb : {false, true}) {
    auto grads = std::make_shared<ReplicaGradients>(model, c, task, m.batch, 1);
    grads->serve(tr);
    platforms::edge::ModelEndpointConfig ec;
    ReplicaGradients::attach(grads, ec);
    for (std::uint32_t l = 0; l < 2; ++l) {
      std::vector<float> w = tr->weights[0][l];
      if (perturb && l == 1) w[3] = std::nextafter(w[3], 1.0F);
      sim::stream::ChunkInfo info;
      info.layer = l;
      ec.weights_seen(0, info, w);
    }
    sim::stream::ChunkInfo info;
    info.layer = 1;
    info.pass = sim::stream::Pass::Backward;
    std::vector<float> out(8);
    if (!perturb) {
      ec.gradient(0, info, {}, out);
      EXPECT_EQ(out, std::vector<float>(8, 0.5F));
      EXPECT_EQ(grads->step_losses(), std::vector<double>{0.5});
      continue;
    }
    try {
      ec.gradient(0, info, {}, out);
      FAIL() << "expected a SimulationError";
    } catch (const sim::SimulationError& e) {
      EXPECT_NE(std::string(e.what()).find("wafer 0, step 0: layer 'fc2' element 3 received"), std::string::npos)
          << e.what();
    }
  }
}

// `wafersim train --functional --wafer-arithmetic programs`: training.json names the
// arithmetic and the programs' checked elements; the losses equal the host arithmetic's (the
// first step's weights are the same; later ones differ in the last bits only).
TEST(Training, CommandLineRunsOnThePrograms) {
  test::TempDir dir;
  nlohmann::json j[2];
  const char* names[2] = {"host", "programs"};
  for (int k = 0; k < 2; ++k) {
    const auto out = dir.path() / names[k];
    const std::string cmd =
        std::string(WAFERSIM_BINARY) +
        " train tiny-cluster --model tiny-mlp --steps 2 --cluster-model replay --functional --wafer-arithmetic " +
        names[k] + " --out " + out.string() + " > " + out.string() + ".txt 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(out.string() + ".txt");
    j[k] = nlohmann::json::parse(read_file(out / "training.json"));
    EXPECT_EQ(j[k]["wafer_arithmetic"], names[k]);
  }
  EXPECT_FALSE(j[0].contains("wafer_runs_checked"));
  EXPECT_GT(j[1]["wafer_runs_checked"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(j[1]["losses"][0], j[0]["losses"][0]);
  EXPECT_NE(read_file(dir.path() / "programs.txt").find("the compiled programs' (4 wafer runs"), std::string::npos)
      << read_file(dir.path() / "programs.txt");
}

TEST(Training, ProgramsArithmeticNeedsSimulatedTiming) {
  const auto spec = platforms::load_platform("tiny-cluster").spec;
  TrainingConfig cfg;
  cfg.cluster = ClusterMode::Replay;  // the replay's own properties
  cfg.functional = true;
  cfg.arithmetic = WaferArithmetic::Programs;
  cfg.timing = TimingSource::Bound;
  sim::stats::Group stats("");
  EXPECT_THROW(run_training(spec, load_model("tiny-mlp").spec, cfg, stats), sim::InputError);
  cfg.timing = TimingSource::Simulated;
  cfg.functional = false;
  EXPECT_THROW(run_training(spec, load_model("tiny-mlp").spec, cfg, stats), sim::InputError);
  EXPECT_THROW(parse_wafer_arithmetic("wafer"), sim::InputError);
}

TEST(Training, AModelWithoutParametersIsAnInputError) {
  test::TempDir dir;
  const ModelSpec m = load_model(dir.write("m.yaml", R"(name: none
dtype: bf16
batch: 2
sequence: 8
inputs: [{name: x, kind: activations, features: 32}]
layers:
  - {name: act, kind: gelu, inputs: [x]}
)"))
                          .spec;
  const auto spec = platforms::load_platform("tiny-cluster").spec;
  TrainingConfig cfg;
  cfg.cluster = ClusterMode::Replay;  // the replay's own properties
  cfg.timing = TimingSource::Bound;
  sim::stats::Group stats("");
  try {
    run_training(spec, m, cfg, stats);
    FAIL() << "expected an InputError";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model 'none' has no layer with parameters"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wafersim::platforms::training::training_test
