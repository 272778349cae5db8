// The mesh placement (docs/compiler.md, "Mesh placement"): the K-tree of a line, and a whole
// decode token of a small Llama-style decoder on `tiny`, simulated and compared bit for bit
// with the host's computation in the PEs' order (models/mesh/mesh_expect.h, over
// models/reference's arithmetic): every layer's residual stream, the new KV cache entries on
// their columns and the logits.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "models/mesh/layout.h"
#include "models/mesh/line_tree.h"
#include "models/mesh/mesh_decode.h"
#include "models/mesh/mesh_expect.h"
#include "models/reference/attention.h"
#include "models/reference/elementwise.h"
#include "models/reference/linear.h"
#include "models/reference/norms.h"
#include "platforms/inference/mesh_run.h"
#include "platforms/platform_spec.h"

namespace wafersim::test::mesh_test {
namespace {
namespace reference = models::reference;
using models::Shape;

using models::mesh::LineRole;
using models::mesh::LineTree;

TEST(LineTree, RolesOfALineOfNineInGroupsOfTwo) {
  // M = 4; before: indices 3 (distance 1, root of group 0), 2 (its chain start), 1 (root of
  // group 1), 0 (chain start, outermost); after: 5, 6 (group 0), 7, 8 (group 1).
  const LineTree t{9, 2};
  EXPECT_TRUE(t.role(4).root());
  EXPECT_TRUE(t.role(4).has_before && t.role(4).has_after);
  const LineRole r3 = t.role(3), r2 = t.role(2), r1 = t.role(1), r0 = t.role(0);
  EXPECT_TRUE(r3.group_root && !r3.chain_start && !r3.outermost && r3.group == 0);
  EXPECT_TRUE(!r2.group_root && r2.chain_start && r2.group == 0);
  EXPECT_TRUE(r1.group_root && !r1.chain_start && r1.outermost && r1.group == 1);
  EXPECT_TRUE(!r0.group_root && r0.chain_start && r0.outermost);
  EXPECT_EQ(t.role(8).side, LineRole::Side::After);
  EXPECT_EQ(t.role(8).distance, 4u);
  EXPECT_EQ(t.chain_stages(), 1u + 2u);
  EXPECT_EQ(t.reduce_hops(), 4u);
}

TEST(LineTree, ReducesInTheTreesOrder) {
  // A non-commutative combine shows the order: op(a, b) = 3a + 5b (mod 2^64).
  const LineTree t{5, 2};  // M = 2; before: 1 (root), 0; after: 3 (root), 4
  const std::vector<std::uint64_t> p{1, 2, 3, 4, 5};
  auto op = [](std::uint64_t a, std::uint64_t b) { return 3 * a + 5 * b; };
  const std::uint64_t before = op(p[0], p[1]), after = op(p[4], p[3]);
  EXPECT_EQ(models::mesh::tree_reduce(t, p, op), op(after, op(before, p[2])));
  // Groups of one: a chain of roots, each adding its own after what comes from outside.
  const LineTree u{4, 1};  // M = 2; before: 1, 0; after: 3
  const std::vector<std::uint64_t> q{7, 11, 13, 17};
  EXPECT_EQ(models::mesh::tree_reduce(u, q, op), op(q[3], op(op(q[0], q[1]), q[2])));
}

TEST(LineTree, TheBestGroupIsAboutTheRootOfTheSide) {
  EXPECT_EQ(models::mesh::best_group(1, 4), 1u);
  const std::uint32_t k = models::mesh::best_group(997, 4);  // sides of 498
  EXPECT_GE(k, 16u);
  EXPECT_LE(k, 30u);
}

// A small Llama-style decoder: d 16, 4 heads over 2 key/value heads of 4 dimensions, SwiGLU
// 24, vocabulary 40, two layers, a cache of 16 positions.
models::ModelSpec tiny_llama() {
  return models::load_model_text(
             "name: tiny-llama\ndtype: bf16\nbatch: 1\nsequence: 16\ntransformer:\n  d_model: 16\n  heads: 4\n"
             "  kv_heads: 2\n  d_ff: 24\n  layers: 2\n  vocabulary: 40\n  activation: swiglu\n  norm: rmsnorm\n"
             "  positions: rotary\n  bias: false\n",
             "tiny-llama.yaml")
      .spec;
}

struct Rig {
  platforms::LoadedPlatform platform;
  models::compiler::Target target;
  std::shared_ptr<models::mesh::MeshLayout> layout;
  std::unique_ptr<models::mesh::MeshDecode> decode;
  std::unique_ptr<sim::stats::Group> stats;
  std::unique_ptr<platforms::inference::MeshSimulation> sim;
  Rig(const models::mesh::Region& region, std::uint64_t position, std::uint64_t token, bool timing_only = false)
      : platform(platforms::load_platform("tiny")), target{platform.spec.wafer, platform.spec.fabric} {
    const auto shape = models::mesh::decoder_shape(tiny_llama());
    layout = std::make_shared<models::mesh::MeshLayout>(shape, region, 2, true, true, 4, 8);
    decode = std::make_unique<models::mesh::MeshDecode>(target, layout, position, token, 2);
    stats = std::make_unique<sim::stats::Group>("");
    platforms::BuildOptions build;
    build.timing_only = timing_only;
    sim = std::make_unique<platforms::inference::MeshSimulation>(platform.spec, build, *stats, *decode);
  }
};

void expect_decode_matches(const models::mesh::Region& region, std::uint64_t position, std::uint64_t token) {
  Rig rig(region, position, token);
  const auto& l = *rig.layout;
  const auto weights = models::mesh::random_weights(l.shape(), 2, 7);
  const auto cache = models::mesh::random_cache(l.shape(), 2, position, 11);
  const auto run = rig.sim->run(
      [&](std::uint32_t r, std::uint32_t c) { return models::mesh::pe_image(l, weights, cache, position, {}, r, c); });
  const auto want = models::mesh::expect_decode(l, weights, cache, token, position, 2);
  auto& w = rig.sim->wafer();
  const auto& a = l.addrs();
  // The residual stream after the last layer on every PE (its column's features).
  int mismatches = 0;
  for (std::uint32_t r = 0; r < region.rows; ++r)
    for (std::uint32_t c = 0; c < region.columns; ++c) {
      const auto f = l.col_features(c);
      const auto got = platforms::inference::read_pe(w, region, r, c, a.x, static_cast<std::uint32_t>(f.size()), 2);
      for (std::uint64_t k = 0; k < f.size(); ++k)
        if (got[k] != want.layers.back().x[f.lo + k] && mismatches++ < 5)
          ADD_FAILURE() << fmt::format("x[{}] on PE ({}, {}): got {:#x}, expected {:#x}", f.lo + k, r, c, got[k],
                                       want.layers.back().x[f.lo + k]);
      // The logits of its row.
      const auto v = l.row_vocab(r);
      const auto lg = platforms::inference::read_pe(w, region, r, c, a.logits, static_cast<std::uint32_t>(v.size()), 2);
      for (std::uint64_t k = 0; k < v.size(); ++k)
        if (lg[k] != want.logits[v.lo + k] && mismatches++ < 5)
          ADD_FAILURE() << fmt::format("logit {} on PE ({}, {}): got {:#x}, expected {:#x}", v.lo + k, r, c, lg[k],
                                       want.logits[v.lo + k]);
    }
  // The token's keys and values in both layers' caches, on column position mod C.
  const std::uint32_t c = static_cast<std::uint32_t>(position % region.columns);
  const std::uint32_t slot = static_cast<std::uint32_t>(position / region.columns);
  for (std::uint32_t layer = 0; layer < 2; ++layer)
    for (std::uint32_t r = 0; r < region.rows; ++r) {
      const auto dims = l.row_dims(r);
      const std::uint64_t base = l.kv_group(r) * l.shape().head_dim + dims.lo;
      for (std::uint64_t d = 0; d < dims.size(); ++d) {
        const auto k =
            platforms::inference::read_pe(w, region, r, c, a.layers[layer].kc + (d * l.slots_max + slot) * 2, 1, 2);
        EXPECT_EQ(k[0], want.cache.k[layer].bits(want.cache.k[layer].at(position, base + d)))
            << "layer " << layer << " row " << r;
      }
    }
  EXPECT_EQ(mismatches, 0);
  // The expectation is no trivial one: the logits differ from one another.
  std::set<reference::Bits> distinct(want.logits.begin(), want.logits.end());
  EXPECT_GT(distinct.size(), want.logits.size() / 2);
  if (getenv("MESH_TEST_VERBOSE"))
    for (const auto& s : run.steps)
      fmt::print("{:10} {:6} cycles, bound {} (latency {})\n", s.name, s.cycles(), s.bound.roofline(), s.bound.latency);
  // Every step takes at least its bound.
  for (const auto& s : run.steps) EXPECT_GE(s.cycles(), s.bound.with_latency()) << s.name;
  EXPECT_EQ(run.steps.size(), 1u + 2 * 7 + 2);
}

// The host's computation in the PEs' order against models/reference's own layer functions
// (their order: one chain over all inputs), stage by stage on the same inputs: reordering the
// fp32 sums moves a bf16 result by at most one step (here: every element of both layers but
// SwiGLU's, by at most two).
TEST(MeshExpect, EachStageIsWithinOneBf16StepOfModelsReference) {
  using reference::Format;
  using reference::Tensor;
  const auto shape = models::mesh::decoder_shape(tiny_llama());
  const models::mesh::MeshLayout l(shape, {0, 0, 7, 5}, 2, true, true, 4, 8);
  const std::uint64_t t = 12, token = 3;
  const auto w = models::mesh::random_weights(shape, 2, 7);
  const auto cache = models::mesh::random_cache(shape, 2, t, 11);
  const auto got = models::mesh::expect_decode(l, w, cache, token, t, 2);
  auto row = [&](const std::vector<reference::Bits>& v) {
    Tensor x(Format::BF16, Shape{1, 1, v.size()});
    for (std::size_t i = 0; i < v.size(); ++i) x.set_bits(i, v[i]);
    return x;
  };
  int compared = 0;
  auto expect_close = [&](const Tensor& ref, const std::vector<reference::Bits>& mine, std::size_t from,
                          const std::string& what, long steps = 1) {
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const auto a = reference::ordinal(Format::BF16, ref.bits(i)),
                 b = reference::ordinal(Format::BF16, mine[from + i]);
      EXPECT_LE(std::llabs(a - b), steps) << what << " element " << i;
      ++compared;
    }
  };
  const std::uint64_t q = shape.heads * shape.head_dim, kv = shape.kv_heads * shape.head_dim;
  std::vector<reference::Bits> x(shape.d);
  for (std::uint64_t j = 0; j < shape.d; ++j) x[j] = w.emb.bits(w.emb.at(token, j));
  for (std::uint32_t i = 0; i < 2; ++i) {
    const auto& L = w.layers[i];
    const auto& r = got.layers[i];
    expect_close(reference::rmsnorm_forward(row(x), L.g1, shape.epsilon), r.xn1, 0, "xn1");
    expect_close(reference::linear_forward(row(r.xn1), L.wq, nullptr), r.qkv, 0, "q");
    expect_close(reference::linear_forward(row(r.xn1), L.wk, nullptr), r.qkv, q, "k");
    expect_close(reference::linear_forward(row(r.xn1), L.wv, nullptr), r.qkv, q + kv, "v");
    // Attention over positions [0, t]: queries before t are zeros; the last row is the token's.
    Tensor qs(Format::BF16, Shape{1, t + 1, q}), ks(Format::BF16, Shape{1, t + 1, kv}),
        vs(Format::BF16, Shape{1, t + 1, kv});
    for (std::uint64_t j = 0; j < q; ++j) qs.set_bits(qs.at(t, j), r.qkv[j]);
    for (std::uint64_t p = 0; p <= t; ++p)
      for (std::uint64_t j = 0; j < kv; ++j) {
        ks.set_bits(ks.at(p, j), got.cache.k[i].bits(got.cache.k[i].at(p, j)));
        vs.set_bits(vs.at(p, j), got.cache.v[i].bits(got.cache.v[i].at(p, j)));
      }
    const Tensor att = reference::attention_forward(qs, ks, vs, {4, 2, true});
    Tensor last(Format::BF16, Shape{1, 1, q});
    for (std::uint64_t j = 0; j < q; ++j) last.set_bits(j, att.bits(att.at(t, j)));
    expect_close(last, r.att, 0, "attention");
    const Tensor h = reference::linear_forward(row(r.att), L.wo, nullptr);
    expect_close(reference::add_forward(row(x), h), r.x1, 0, "x1");
    expect_close(reference::rmsnorm_forward(row(r.x1), L.g2, shape.epsilon), r.xn2, 0, "xn2");
    const Tensor z = reference::swiglu_forward(reference::linear_forward(row(r.xn2), L.wg, nullptr),
                                               reference::linear_forward(row(r.xn2), L.wu, nullptr));
    // SwiGLU takes six bf16 operations: a step of difference in gate or up may become two.
    expect_close(z, r.z, 0, "z", 2);
    expect_close(reference::add_forward(row(r.x1), reference::linear_forward(row(r.z), L.wd, nullptr)), r.x, 0, "x");
    x = r.x;
  }
  expect_close(reference::linear_forward(reference::rmsnorm_forward(row(x), w.gf, shape.epsilon), w.head, nullptr),
               got.logits, 0, "logits");
  EXPECT_EQ(compared, 2 * (16 + 16 + 8 + 8 + 16 + 16 + 16 + 24 + 16) + 40);
}

TEST(MeshDecode, TinyLlamaTokenOnTheWholeWaferMatchesTheHostBitForBit) { expect_decode_matches({0, 0, 8, 8}, 10, 7); }

TEST(MeshDecode, OddRegionAwayFromTheCornerMatchesTheHostBitForBit) {
  // 7 rows x 5 columns: uneven splits, segments of 4 and 3 rows (rows with 1 and 2
  // dimensions), positions on two slots of some columns and one of others.
  expect_decode_matches({1, 1, 7, 5}, 12, 3);
}

TEST(MeshDecode, TheFirstPositionMatchesTheHostBitForBit) {
  // One cached position, on column 0 only: every other column's partials are empty.
  expect_decode_matches({1, 1, 7, 5}, 0, 39);
}

TEST(MeshDecode, TimingOnlyTakesTheFunctionalRunsCycles) {
  // Both wafers are built before the simulation starts, then run one after the other.
  const models::mesh::Region region{0, 0, 8, 8};
  Rig functional(region, 10, 7, false), timing(region, 10, 7, true);
  std::vector<std::uint64_t> cycles[2];
  for (const auto& s : functional.sim->run().steps) cycles[0].push_back(s.cycles());
  for (const auto& s : timing.sim->run().steps) cycles[1].push_back(s.cycles());
  EXPECT_EQ(cycles[0], cycles[1]);
}

}  // namespace
}  // namespace wafersim::test::mesh_test
