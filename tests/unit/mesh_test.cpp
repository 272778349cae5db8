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

#include "models/mesh/collective.h"
#include "models/mesh/kernels.h"
#include "models/mesh/layout.h"
#include "models/mesh/line_tree.h"
#include "models/mesh/mesh_decode.h"
#include "models/mesh/mesh_expect.h"
#include "models/mesh/mesh_plan.h"
#include "models/reference/attention.h"
#include "models/reference/elementwise.h"
#include "models/reference/linear.h"
#include "models/reference/norms.h"
#include "platforms/inference/mesh_run.h"
#include "platforms/inference/mesh_token.h"
#include "platforms/platform_spec.h"
#include "sim/errors.h"
#include "tests/support/tiny_llama.h"

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

// The gather to a segment's root: every PE's stream (its share, then its phase-1 and phase-2
// relays) is the run of units its parent takes at that point, and the shares, in the order M,
// before outward, after outward, tile [0, units) as evenly as they go.
void expect_gather_consistent(const models::mesh::LineFamily& f, std::uint32_t units) {
  using models::mesh::gather_plan;
  using Side = LineRole::Side;
  for (std::uint32_t s = 0; s < f.starts.size(); ++s) {
    const LineTree& t = f.trees[s];
    const std::uint32_t start = f.starts[s], m = start + t.root();
    auto at = [&](Side side, std::uint32_t d) { return side == Side::Before ? m - d : m + d; };
    const auto root = gather_plan(f, m, units);
    EXPECT_EQ(root.lo, 0u);
    EXPECT_EQ(root.before[0], root.hi);
    EXPECT_EQ(root.after[0], root.before[1]);
    EXPECT_EQ(root.after[1], units);
    std::uint32_t next = root.hi;  // where the next share in the gather's order starts
    for (Side side : {Side::Before, Side::After}) {
      const std::uint32_t n = t.side_length(side);
      for (std::uint32_t d = 1; d <= n; ++d) {
        const auto p = gather_plan(f, at(side, d), units);
        const LineRole r = f.role(at(side, d));
        EXPECT_EQ(p.lo, next) << "segment " << s << " distance " << d;
        EXPECT_LE(p.hi - p.lo, (units + t.length - 1) / t.length);
        EXPECT_GE(p.hi - p.lo, units / t.length);
        next = p.hi;
        // What it sends: its share and its relays, one run ending where its subtree's does.
        const std::uint32_t end = p.hi + p.chain + p.roots;
        const std::uint32_t far = std::min((r.group + 1) * t.group, n);
        const std::uint32_t subtree_end = gather_plan(f, at(side, r.group_root ? n : far), units).hi;
        EXPECT_EQ(end, subtree_end) << "segment " << s << " distance " << d;
        if (!r.group_root) {  // its phase-1 parent relays it right after its own share
          const auto parent = gather_plan(f, at(side, d - 1), units);
          EXPECT_EQ(parent.hi, p.lo);
        } else if (d > 1) {  // the next root inward relays it after its group's chain
          const auto parent = gather_plan(f, at(side, d - t.group), units);
          EXPECT_EQ(parent.hi + parent.chain, p.lo);
          EXPECT_EQ(parent.roots, end - p.lo);
        } else {
          EXPECT_EQ(side == Side::Before ? root.before[0] : root.after[0], p.lo);
          EXPECT_EQ(side == Side::Before ? root.before[1] : root.after[1], end);
        }
      }
    }
    EXPECT_EQ(next, units);
  }
}

TEST(LineTree, GathersEveryShareToTheRootInOneRunASide) {
  using models::mesh::LineFamily;
  const models::mesh::LineColors colors;
  // Segments of 1, 2, 9 and 30 PEs (groups of 1 to about sqrt(side)); more and fewer units
  // than PEs.
  for (std::uint32_t stage : {1u, 6u})
    for (std::uint32_t units : {1u, 7u, 40u, 256u}) {
      const auto f = LineFamily::segmented(models::mesh::Axis::Column, 42, {0, 1, 3, 12}, stage, colors);
      expect_gather_consistent(f, units);
    }
  const auto g = LineFamily::segmented(models::mesh::Axis::Column, 9, {0}, 1, colors);
  const auto m = models::mesh::gather_plan(g, 4, 18);  // M of 9: shares of 2
  EXPECT_EQ(m.lo, 0u);
  EXPECT_EQ(m.hi, 2u);
  EXPECT_EQ(m.before[1], 10u);                             // the four before M
  const auto outer = models::mesh::gather_plan(g, 0, 18);  // the farthest before: rank 4
  EXPECT_EQ(outer.lo, 8u);
  EXPECT_EQ(outer.chain + outer.roots, 0u);
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
    layout = std::make_shared<models::mesh::MeshLayout>(shape, region, 2, true, true, 4, 8, target.sram_bytes());
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
  const models::mesh::MeshLayout l(shape, {0, 0, 7, 5}, 2, true, true, 4, 8, 48 * 1024);
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

namespace wafersim::test::mesh_test {
namespace {

models::mesh::MeshTarget tiny_target(const std::string& platform) {
  const auto loaded = platforms::load_platform(platform);
  return platforms::inference::mesh_target(loaded.spec);
}

// A decoder too large for one tiny wafer: d 128, 8 heads over 2 key/value heads, SwiGLU 384,
// eight layers, vocabulary 256.
models::ModelSpec wide_llama(int layers) {
  return models::load_model_text(
             fmt::format("name: wide-llama\ndtype: bf16\nbatch: 1\nsequence: 64\ntransformer:\n  d_model: 128\n"
                         "  heads: 8\n  kv_heads: 2\n  d_ff: 384\n  layers: {}\n  vocabulary: 256\n"
                         "  activation: swiglu\n  norm: rmsnorm\n  positions: rotary\n  bias: false\n",
                         layers),
             "wide-llama.yaml")
      .spec;
}

// A GEMV root's epilogue lies between the reduction and the broadcast, on the latency bound:
// one more cycle per exponential and per reciprocal adds one cycle per gate/up pair to gate_up's
// latency (SwiGLU takes one of each per pair) and nothing to the products that only round.
TEST(MeshBound, SwigluOnAGemvRootIsOnItsLatency) {
  const auto shape = models::mesh::decoder_shape(tiny_llama());
  const models::mesh::MeshLayout l(shape, {0, 0, 7, 5}, 2, true, true, 4, 8, 48 * 1024);
  auto t = tiny_target("tiny").wafer;
  auto latency = [&](models::mesh::Gemv g) { return models::mesh::gemv_step(l, t, g, 0, false).bound.latency; };
  const std::uint64_t gate_up = latency(models::mesh::Gemv::GateUp), qkv = latency(models::mesh::Gemv::Qkv);
  t.wafer.pe.latency.exp = t.wafer.pe.latency.exp + sim::Cycle(1);
  EXPECT_EQ(latency(models::mesh::Gemv::GateUp), gate_up + l.nf_max);
  t.wafer.pe.latency.recip = t.wafer.pe.latency.recip + sim::Cycle(1);
  EXPECT_EQ(latency(models::mesh::Gemv::GateUp), gate_up + 2 * l.nf_max);
  EXPECT_EQ(latency(models::mesh::Gemv::Qkv), qkv);
}

TEST(MeshPlan, TinyLlamaTakesTheRegionWithTheShortestCollectivesThatFits) {
  // Every region of 2 or more rows (one per key/value head) holds the tiny decoder: the
  // shortest collectives (7 x columns + 2 x rows + rows per head, a layer) are those of 2 x 1.
  const auto p = models::mesh::plan_mesh(tiny_llama(), tiny_target("tiny"));
  ASSERT_EQ(p.wafers.size(), 1u);
  const auto& w = p.wafers[0];
  EXPECT_EQ(w.region.rows, 2u);
  EXPECT_EQ(w.region.columns, 1u);
  EXPECT_EQ(w.first_layer, 0u);
  EXPECT_EQ(w.layers, 2u);
  EXPECT_TRUE(w.embedding);
  EXPECT_TRUE(w.head);
  EXPECT_EQ(w.addrs.end, 6816u);
  EXPECT_EQ(w.addrs.weights + w.addrs.caches + w.addrs.activations, w.addrs.end);
  EXPECT_EQ(p.link_bytes, 0u);
}

TEST(MeshPlan, AnExplicitRegionIsTakenOrRefused) {
  auto t = tiny_target("tiny");
  t.rows = 7;
  t.columns = 5;
  const auto p = models::mesh::plan_mesh(tiny_llama(), t);
  ASSERT_EQ(p.wafers.size(), 1u);
  EXPECT_EQ(p.wafers[0].region.rows, 7u);
  EXPECT_EQ(p.wafers[0].region.columns, 5u);
  t.rows = 1;  // fewer rows than key/value heads
  EXPECT_THROW(models::mesh::plan_mesh(tiny_llama(), t), sim::InputError);
  t.rows = 9;  // beyond the wafer
  EXPECT_THROW(models::mesh::plan_mesh(tiny_llama(), t), sim::InputError);
}

TEST(MeshPlan, SplitsTheLayersOverTheFewestSystemsThatHoldThem) {
  // Eight layers need 52,928 B on the busiest PE of a whole tiny wafer: two of tiny-cluster's
  // wafers take four each, the first with the embedding, the second with the head; on each the
  // fewest columns that hold its layers over all 8 rows.
  const auto p = models::mesh::plan_mesh(wide_llama(8), tiny_target("tiny-cluster"));
  ASSERT_EQ(p.wafers.size(), 2u);
  EXPECT_EQ(p.systems, 2u);
  for (std::uint32_t i = 0; i < 2; ++i) {
    const auto& w = p.wafers[i];
    EXPECT_EQ(w.region.rows, 8u);
    EXPECT_EQ(w.region.columns, 5u);
    EXPECT_EQ(w.first_layer, 4 * i);
    EXPECT_EQ(w.layers, 4u);
    EXPECT_EQ(w.embedding, i == 0);
    EXPECT_EQ(w.head, i == 1);
    EXPECT_LE(w.addrs.end, p.sram_capacity);
  }
  EXPECT_EQ(p.wafers[0].addrs.end, 43296u);
  EXPECT_EQ(p.wafers[1].addrs.end, 43464u);
  // The residual stream (128 bf16 values) over one 100 Gb/s port at 1.1 GHz: 2,048 bits in
  // 20.48 ns, 22.5 cycles, rounded up.
  EXPECT_EQ(p.link_bytes, 256u);
  EXPECT_EQ(p.link_cycles, 23u);
}

// Llama-3 8B, every layer with the embedding and the head, on one wafer of each preset: the
// region with the shortest collectives whose busiest PE holds it (docs/compiler.md, "Mesh
// placement"), WSE-2's with 120 B of its 48 KiB to spare.
TEST(MeshPlan, Llama3_8bFitsOneWse2AndOneWse3) {
  const auto spec = models::load_model("llama3-8b").spec;
  const auto on_wse2 = models::mesh::plan_mesh(spec, tiny_target("wse2"));
  ASSERT_EQ(on_wse2.wafers.size(), 1u);
  EXPECT_EQ(on_wse2.wafers[0].region.rows, 896u);
  EXPECT_EQ(on_wse2.wafers[0].region.columns, 512u);
  EXPECT_EQ(on_wse2.wafers[0].layers, 32u);
  EXPECT_TRUE(on_wse2.wafers[0].embedding && on_wse2.wafers[0].head);
  EXPECT_EQ(on_wse2.wafers[0].addrs.end, 49032u);
  EXPECT_EQ(on_wse2.sram_capacity, 49152u);
  const auto on_wse3 = models::mesh::plan_mesh(spec, tiny_target("wse3"));
  ASSERT_EQ(on_wse3.wafers.size(), 1u);
  EXPECT_EQ(on_wse3.wafers[0].region.rows, 1024u);
  EXPECT_EQ(on_wse3.wafers[0].region.columns, 410u);
  EXPECT_EQ(on_wse3.wafers[0].addrs.end, 47472u);
}

TEST(MeshPlan, AModelTooLargeIsAnErrorWithTheShortfall) {
  try {
    models::mesh::plan_mesh(wide_llama(8), tiny_target("tiny"));
    FAIL() << "no error";
  } catch (const sim::InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("model 'wide-llama' does not fit the mesh placement on 1 system"), std::string::npos) << m;
    EXPECT_NE(m.find("its busiest PE needs 52928 B (weights 50240 B, KV caches of 64 positions 1536 B, activations "
                     "1152 B) but has 49152 B: short by 3776 B"),
              std::string::npos)
        << m;
  }
}

TEST(MeshPlan, APrefillTakesTheSmallestSquareElseARectangleAtMostTwiceAsLongAsWide) {
  // The decode's 2 x 1 has rings of 2 and 1 positions, which MeshGEMM cannot pair up; the
  // smallest square that holds the prefill is 2 x 2.
  auto t = tiny_target("tiny");
  t.prefill = 12;
  const auto p = models::mesh::plan_mesh(tiny_llama(), t);
  ASSERT_EQ(p.wafers.size(), 1u);
  EXPECT_EQ(p.wafers[0].region.rows, 2u);
  EXPECT_EQ(p.wafers[0].region.columns, 2u);
  t.rows = 5;  // more than twice as long as wide
  t.columns = 2;
  EXPECT_THROW(models::mesh::plan_mesh(tiny_llama(), t), sim::InputError);
  t.columns = 3;
  EXPECT_EQ(models::mesh::plan_mesh(tiny_llama(), t).wafers[0].region.columns, 3u);
  // Four wide layers need 8 x 5 PEs (MeshPlan.SplitsTheLayersOverTheFewestSystemsThatHoldThem):
  // on a wafer 6 PEs wide no square holds them, and the shortest collectives among the
  // rectangles up to twice as long as wide that do are those of 8 x 5.
  auto narrow = tiny_target("tiny");
  narrow.wafer.wafer.width = 6;
  narrow.prefill = 4;
  const auto q = models::mesh::plan_mesh(wide_llama(4), narrow);
  ASSERT_EQ(q.wafers.size(), 1u);
  EXPECT_EQ(q.wafers[0].region.rows, 8u);
  EXPECT_EQ(q.wafers[0].region.columns, 5u);
}

TEST(MeshPlan, APromptWhoseBlocksDoNotFitRunsInPasses) {
  // Seven wide layers on a tiny wafer with a prompt of 20 tokens: MeshGEMM's blocks of the
  // whole prompt (3 tokens) do not fit beside them on the whole 8 x 8 wafer, blocks of one token
  // (passes of 8 tokens) do.
  auto t = tiny_target("tiny");
  t.prefill = 20;
  const auto p = models::mesh::plan_mesh(wide_llama(7), t);
  ASSERT_EQ(p.wafers.size(), 1u);
  EXPECT_EQ(p.wafers[0].region.rows, 8u);
  EXPECT_EQ(p.wafers[0].region.columns, 8u);
  EXPECT_EQ(p.prefill_chunk, 8u);
  EXPECT_LE(p.wafers[0].addrs.end + p.prefill_bytes, p.sram_capacity);
  t.prefill_chunk = 20;  // one pass, asked for: it does not fit
  EXPECT_THROW(models::mesh::plan_mesh(wide_llama(7), t), sim::InputError);
  t.prefill_chunk = 4;  // passes asked for: taken as they are
  EXPECT_EQ(models::mesh::plan_mesh(wide_llama(7), t).prefill_chunk, 4u);
}

// Llama-3 70B with a prompt of 2,048 tokens on cs3-cluster: four systems of 20 layers, the
// prompt in passes of 745 tokens (MeshGEMM's blocks of one token). The last wafer's busiest PE
// holds its blocks only with a partial-sum block (208 B) over the decode's logits: to the byte.
TEST(MeshPlan, Llama3_70bPrefillTakesFourSystemsWithABlockOverTheLogits) {
  auto t = tiny_target("cs3-cluster");
  t.prefill = 2048;
  const auto p = models::mesh::plan_mesh(models::load_model("llama3-70b").spec, t);
  ASSERT_EQ(p.wafers.size(), 4u);
  EXPECT_EQ(p.prefill_chunk, 745u);
  EXPECT_EQ(p.prefill_bytes, 576u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.wafers[i].prefill_in_logits, 0u) << i;
    EXPECT_EQ(p.wafers[i].prefill_end, p.wafers[i].addrs.end + 576) << i;
  }
  const auto& last = p.wafers[3];
  EXPECT_TRUE(last.head);
  EXPECT_EQ(last.region.rows, 1147u);
  EXPECT_EQ(last.region.columns, 745u);
  EXPECT_EQ(last.prefill_in_logits, 208u);
  EXPECT_EQ(last.addrs.end + 576 - 208, p.sram_capacity);
  EXPECT_EQ(last.prefill_end, p.sram_capacity);
}

TEST(MeshPlan, APrefillTooLargeCountsItsBlocksInTheShortfall) {
  auto t = tiny_target("tiny");
  t.prefill = 40;
  try {
    models::mesh::plan_mesh(wide_llama(8), t);
    FAIL() << "no error";
  } catch (const sim::InputError& e) {
    const std::string m = e.what();
    // The whole 8 x 8 wafer (one wafer: the first and the last), in passes of 8 tokens, the
    // least the prefill needs: MeshGEMM's blocks of one token; those that fit the decode's
    // logits buffer (32 B: a block of one token's inputs) lie there.
    const auto s = models::mesh::decoder_shape(wide_llama(8));
    const std::uint32_t blocks = models::mesh::prefill_bytes(s, models::mesh::tile_sizes(s, 8, 8), 8, 8,
                                                             models::mesh::buffer_alignment(t.wafer));
    EXPECT_GT(blocks, 0u);
    EXPECT_NE(
        m.find(fmt::format(
            "on wafer 0's 8 x 8 PEs its busiest PE needs {} B (weights 50240 B, KV caches of 64 positions 1536 B, "
            "activations 1152 B, the prefill's MeshGEMM blocks in passes of 8 tokens {} B (32 B of them in the "
            "decode's logits)) but has 49152 B: short by {} B",
            52928 + blocks - 32, blocks, 52928 + blocks - 32 - 49152)),
        std::string::npos)
        << m;
  }
}

// One decode token through the library entry of `wafersim infer --placement mesh`: with one
// layer simulated the other takes its cycles, and that is exactly what simulating both gives
// (every layer is the same program at other addresses); the functional run matches the host.
TEST(MeshToken, OneSimulatedLayerStandsForEveryLayerOfItsWafer) {
  const auto platform = platforms::load_platform("tiny");
  platforms::inference::MeshTokenOptions o;
  o.position = 10;
  o.token = 7;
  o.check = true;
  o.rows = 8;
  o.columns = 8;
  sim::stats::Group root("");
  o.layers = 1;
  platforms::inference::MeshTokenSimulation one(platform.spec, tiny_llama(), o, {}, root);
  o.layers = 0;
  platforms::inference::MeshTokenSimulation all(platform.spec, tiny_llama(), o, {}, root);
  const auto t1 = one.run(), t2 = all.run();
  ASSERT_EQ(t1.runs.size(), 1u);
  ASSERT_EQ(t2.runs.size(), 1u);
  EXPECT_EQ(t1.runs[0].simulated_layers, 1u);
  EXPECT_EQ(t2.runs[0].simulated_layers, 2u);
  EXPECT_EQ(t1.layers_simulated, 1u);
  EXPECT_EQ(t1.layers_total, 2u);
  for (const auto* t : {&t1, &t2}) {
    EXPECT_EQ(t->runs[0].mismatches, 0u) << t->runs[0].first_mismatch;
    EXPECT_GT(t->runs[0].compared, 0u);
  }
  // Layer 1's steps take layer 0's cycles to within 2 each (they start from the state the step
  // before left: the embedding for layer 0, layer 0's last for layer 1).
  std::vector<std::uint64_t> h0, h1;
  std::uint64_t sum0 = 0, sum1 = 0;
  for (const auto& s : t2.runs[0].run.steps) {
    if (s.name.rfind("h0.", 0) == 0) h0.push_back(s.cycles()), sum0 += s.cycles();
    if (s.name.rfind("h1.", 0) == 0) h1.push_back(s.cycles()), sum1 += s.cycles();
  }
  ASSERT_EQ(h0.size(), 7u);
  ASSERT_EQ(h1.size(), 7u);
  for (std::size_t i = 0; i < h0.size(); ++i)
    EXPECT_LE(std::max(h0[i], h1[i]) - std::min(h0[i], h1[i]), 2u) << "step " << i;
  EXPECT_GT(sum0, 0u);
  // The one-layer run's token counts its layer twice; the two-layer run sums both.
  std::uint64_t one0 = 0;
  for (const auto& s : t1.runs[0].run.steps)
    if (s.name.rfind("h0.", 0) == 0) one0 += s.cycles();
  EXPECT_EQ(one0, sum0);
  EXPECT_EQ(t1.layer_cycles, 2 * sum0);
  EXPECT_EQ(t2.layer_cycles, sum0 + sum1);
  EXPECT_EQ(t1.cycles(), t1.runs[0].run.cycles() + sum0);
  EXPECT_EQ(t2.cycles(), t2.runs[0].run.cycles());
  EXPECT_EQ(t1.link_cycles, 0u);
}

// One wafer of a two-wafer plan alone (the last: layers 4 to 7, the final norm and the head,
// its input a residual stream placed by the host): its part of the token, checked against the
// host, and no link out of the last wafer.
TEST(MeshToken, OneWaferOfThePlanAloneIsItsPartOfTheToken) {
  const auto platform = platforms::load_platform("tiny-cluster");
  platforms::inference::MeshTokenOptions o;
  o.position = 5;
  o.token = 3;
  o.check = true;
  o.wafer = 1;
  sim::stats::Group root("");
  platforms::inference::MeshTokenSimulation sim(platform.spec, wide_llama(8), o, {}, root);
  const auto t = sim.run();
  ASSERT_EQ(t.runs.size(), 1u);
  EXPECT_EQ(t.runs[0].wafers, std::vector<std::uint32_t>{1});
  EXPECT_EQ(t.runs[0].mismatches, 0u) << t.runs[0].first_mismatch;
  EXPECT_GT(t.runs[0].compared, 0u);
  EXPECT_EQ(t.only_wafer, 1);
  EXPECT_EQ(t.layers_total, 4u);
  EXPECT_EQ(t.embed_cycles, 0u);
  EXPECT_GT(t.head_cycles, 0u);
  EXPECT_EQ(t.link_cycles, 0u);
  o.wafer = 2;  // the plan has two
  EXPECT_THROW(platforms::inference::MeshTokenSimulation(platform.spec, wide_llama(8), o, {}, root), sim::InputError);
}

namespace {

const sim::stats::Stat* find_stat(const sim::stats::Group& g, const std::string& group, const std::string& name) {
  if (g.name() == group)
    for (const auto& s : g.stats())
      if (s.name() == name) return &s;
  for (const auto& c : g.groups())
    if (const auto* s = find_stat(*c, group, name)) return s;
  return nullptr;
}

}  // namespace

// The whole plan in one run, each wafer built, run and freed in a process of its own: its
// steps take exactly the cycles of the wafers' runs alone, the token is their parts summed
// (one link between the two wafers), and each wafer's statistics come back.
TEST(MeshToken, WafersRunInTurnInTheirOwnProcessesGiveTheirPartsBitForBit) {
  const auto platform = platforms::load_platform("tiny-cluster");
  platforms::inference::MeshTokenOptions o;
  o.position = 5;
  o.token = 3;
  o.check = true;
  o.separate = true;
  sim::stats::Group root("");
  platforms::inference::MeshTokenSimulation whole(platform.spec, wide_llama(8), o, {}, root);
  const auto t = whole.run();  // before any simulation starts in this process
  o.separate = false;
  o.wafer = 0;
  sim::stats::Group root0(""), root1("");
  platforms::inference::MeshTokenSimulation first(platform.spec, wide_llama(8), o, {}, root0);
  o.wafer = 1;
  platforms::inference::MeshTokenSimulation last(platform.spec, wide_llama(8), o, {}, root1);
  const auto p0 = first.run(), p1 = last.run();
  ASSERT_EQ(t.runs.size(), 2u);
  const platforms::inference::MeshToken* parts[] = {&p0, &p1};
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& a = t.runs[i];
    const auto& b = parts[i]->runs.at(0);
    EXPECT_EQ(a.wafers, b.wafers);
    EXPECT_EQ(a.mismatches, 0u) << a.first_mismatch;
    EXPECT_EQ(a.compared, b.compared);
    ASSERT_EQ(a.run.steps.size(), b.run.steps.size());
    for (std::size_t k = 0; k < a.run.steps.size(); ++k) {
      EXPECT_EQ(a.run.steps[k].name, b.run.steps[k].name);
      EXPECT_EQ(a.run.steps[k].cycles(), b.run.steps[k].cycles()) << a.run.steps[k].name;
      EXPECT_EQ(a.run.steps[k].busy_pe_cycles, b.run.steps[k].busy_pe_cycles) << a.run.steps[k].name;
      EXPECT_EQ(a.run.steps[k].bound.with_latency(), b.run.steps[k].bound.with_latency());
    }
    const sim::stats::Group* g = root.find_group(fmt::format("wafer{}", i));
    ASSERT_NE(g, nullptr);
    const auto* cycles = find_stat(*g, "mesh", "cycles");
    ASSERT_NE(cycles, nullptr);
    EXPECT_EQ(cycles->value(), static_cast<double>(b.run.cycles()));
  }
  EXPECT_GT(p0.link_cycles, 0u);
  EXPECT_EQ(t.link_cycles, p0.link_cycles + p1.link_cycles);
  EXPECT_EQ(t.cycles(), p0.cycles() + p1.cycles());
  EXPECT_EQ(t.layers_total, 8u);
  EXPECT_EQ(t.embed_cycles, p0.embed_cycles);
  EXPECT_EQ(t.head_cycles, p1.head_cycles);
}

TEST(MeshToken, APositionBeyondTheCacheIsAnInputError) {
  const auto platform = platforms::load_platform("tiny");
  platforms::inference::MeshTokenOptions o;
  o.position = 16;  // the cache holds 16 positions
  sim::stats::Group root("");
  EXPECT_THROW(platforms::inference::MeshTokenSimulation(platform.spec, tiny_llama(), o, {}, root), sim::InputError);
  o.position = 3;
  o.token = 40;  // the vocabulary has 40
  EXPECT_THROW(platforms::inference::MeshTokenSimulation(platform.spec, tiny_llama(), o, {}, root), sim::InputError);
}

}  // namespace
}  // namespace wafersim::test::mesh_test
