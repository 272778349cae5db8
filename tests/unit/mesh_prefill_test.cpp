// The prefill on the mesh placement (docs/compiler.md, "Prefill"): MeshGEMM's shift rings
// (at most two hops, colored without conflicts) and every product of a layer for a prompt of
// several tokens on `tiny`, simulated and compared bit for bit with the host's computation in
// the PEs' order (models/mesh/gemm_expect.cpp).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fabric/route_table.h"
#include "models/mesh/kernels.h"
#include "models/mesh/layout.h"
#include "models/mesh/mesh_decode.h"
#include "models/mesh/mesh_expect.h"
#include "models/mesh/mesh_prefill.h"
#include "models/mesh/ring.h"
#include "models/reference/arith.h"
#include "models/reference/tensor.h"
#include "platforms/inference/mesh_run.h"
#include "platforms/inference/mesh_token.h"
#include "platforms/platform_spec.h"
#include "sim/errors.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_llama.h"

namespace wafersim::test::mesh_prefill_test {
namespace {
namespace mesh = models::mesh;
using mesh::Gemv;

TEST(MeshRing, VisitsEvensUpAndOddsDownWithinTwoHops) {
  const mesh::Ring r(mesh::Axis::Row, 5, {0, 1, 2, 3});
  const std::vector<std::uint32_t> order{0, 2, 4, 3, 1};
  for (std::uint32_t p = 0; p < 5; ++p) {
    EXPECT_EQ(r.index(p), order[p]);
    EXPECT_EQ(r.position(order[p]), p);
  }
  EXPECT_EQ(r.max_hops(), 2u);
  for (std::uint32_t n = 1; n <= 41; ++n) {
    const mesh::Ring ring(mesh::Axis::Column, n, {4, 5, 6, 7});
    EXPECT_LE(ring.max_hops(), 2u) << n;
    fabric::RouteTable t(3, n, 24);
    EXPECT_NO_THROW(mesh::add_routes(t, mesh::Region{0, 0, n, 3}, ring)) << n;
    // Each PE receives on the color its successor sends on.
    for (std::uint32_t i = 0; i < n; ++i)
      EXPECT_EQ(ring.recv_color(i), ring.send_color(ring.index((ring.position(i) + 1) % n)));
  }
}

// A ring of P positions over a line of P to 2P PEs: units of one or two neighbours, each
// position's sender nearer the unit it sends to, its stream reaching every member of that unit
// within four hops on four colors, a unit of two paired on the pair color.
TEST(MeshRing, UnitsOfOneOrTwoPEsOverALongerLine) {
  const mesh::Ring r(mesh::Axis::Column, 6, 4, {0, 1, 2, 3}, 9);
  // Units [0], [1, 2], [3], [4, 5] in ring order 0, 2, 3, 1 (units): position 3 (PEs 1, 2)
  // sends to position 2 (PEs 4, 5), so PE 2 is its sender.
  const std::vector<std::uint32_t> pos{0, 3, 3, 1, 2, 2};
  for (std::uint32_t i = 0; i < 6; ++i) EXPECT_EQ(r.position(i), pos[i]) << i;
  EXPECT_EQ(r.index(3), 2u);
  EXPECT_TRUE(r.sends(2));
  EXPECT_FALSE(r.sends(1));
  EXPECT_TRUE(r.paired(1));
  EXPECT_FALSE(r.paired(3));
  for (std::uint32_t P = 2; P <= 24; ++P)
    for (std::uint32_t L = P; L <= 2 * P; ++L) {
      const mesh::Ring ring(mesh::Axis::Column, L, P, {4, 5, 6, 7}, 23);
      EXPECT_LE(ring.max_hops(), 4u) << L << " over " << P;
      std::vector<std::uint32_t> senders(P, 0);
      for (std::uint32_t i = 0; i < L; ++i) {
        senders[ring.position(i)] += ring.sends(i);
        const std::uint32_t next = ring.index((ring.position(i) + 1) % P);
        EXPECT_EQ(ring.recv_color(i), ring.send_color(next));
      }
      for (std::uint32_t p = 0; p < P; ++p) EXPECT_EQ(senders[p], 1u);
      fabric::RouteTable t(3, L, 24);
      EXPECT_NO_THROW(mesh::add_routes(t, mesh::Region{0, 0, L, 3}, ring)) << L << " over " << P;
    }
  // The longer lines of the planner's regions for Llama-3 8B and 70B (wse2, wse3, CS-3).
  for (const auto& [L, P] : std::vector<std::pair<std::uint32_t, std::uint32_t>>{{896, 512},
                                                                                 {896, 586},
                                                                                 {1024, 512},
                                                                                 {1062, 683},
                                                                                 {1062, 745},
                                                                                 {1103, 745},
                                                                                 {1147, 586},
                                                                                 {1147, 631},
                                                                                 {1147, 745},
                                                                                 {1172, 762}}) {
    const mesh::Ring ring(mesh::Axis::Column, L, P, {4, 5, 6, 7}, 23);
    EXPECT_LE(ring.max_hops(), 4u) << L << " over " << P;
    fabric::RouteTable t(1, L, 24);
    EXPECT_NO_THROW(mesh::add_routes(t, mesh::Region{0, 0, L, 1}, ring)) << L << " over " << P;
  }
  EXPECT_THROW(mesh::Ring(mesh::Axis::Row, 9, 4, {0, 1, 2, 3}, 9), std::logic_error);
  fabric::RouteTable few(3, 6, 9);  // no pair color on a fabric of 9 colors
  EXPECT_THROW(mesh::add_routes(few, mesh::Region{0, 0, 6, 3}, r), std::logic_error);
}

struct Rig {
  platforms::LoadedPlatform platform;
  models::compiler::Target target;
  std::shared_ptr<mesh::MeshLayout> layout;
  std::unique_ptr<mesh::MeshDecode> decode;
  std::unique_ptr<sim::stats::Group> stats;
  std::unique_ptr<platforms::inference::MeshSimulation> sim;
  // The decode token at `position` (after a prefill of that many tokens) on n x n PEs (n x
  // `columns` when not 0); `queue_depth` and `sram_bytes`, when not 0, replace the platform's.
  explicit Rig(std::uint32_t n, bool timing_only = false, std::uint64_t position = 0, std::uint64_t token = 0,
               std::uint32_t queue_depth = 0, std::uint32_t columns = 0, std::uint32_t sram_bytes = 0)
      : platform(platforms::load_platform("tiny")) {
    if (queue_depth) platform.spec.fabric.queue_depth = queue_depth;
    if (sram_bytes) platform.spec.wafer.pe.sram.size = units::DataSize::from_bytes(sram_bytes);
    target = {platform.spec.wafer, platform.spec.fabric};
    const auto shape = mesh::decoder_shape(tiny_llama());
    layout = std::make_shared<mesh::MeshLayout>(shape, mesh::Region{0, 0, n, columns ? columns : n}, 2, true, true, 4,
                                                8, target.sram_bytes());
    decode = std::make_unique<mesh::MeshDecode>(target, layout, position, token, 2);
    stats = std::make_unique<sim::stats::Group>("");
    platforms::BuildOptions build;
    build.timing_only = timing_only;
    sim = std::make_unique<platforms::inference::MeshSimulation>(platform.spec, build, *stats, *decode);
  }
};

// Runs product g of layer 1 for `tokens` tokens on an n x n region (n x `columns` when not 0)
// and compares every real token's outputs where the kernel leaves them; returns the step's
// cycles.
std::uint64_t expect_gemm_matches(std::uint32_t n, Gemv g, std::uint64_t tokens, std::uint32_t columns = 0) {
  Rig rig(n, false, 0, 0, 0, columns);
  const auto& l = *rig.layout;
  const std::uint32_t N = l.gemm_positions(), rows = l.region().rows, cols = l.region().columns;
  const std::uint32_t layer = 1;
  const auto weights = mesh::random_weights(l.shape(), 2, 7);
  const auto cache = mesh::random_cache(l.shape(), 2, 0, 11);
  const auto shape = mesh::gemv_shape(l.shape(), g);
  const auto xt = models::reference::Tensor::uniform(models::reference::Format::BF16,
                                                     models::Shape{1, tokens, shape.in}, -1.0, 1.0, 99);
  std::vector<mesh::Bits> x(tokens * shape.in);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = xt.bits(i);
  const auto a = mesh::gemm_addrs(l, g, tokens, l.align());
  const auto run = rig.sim->run_steps(
      1, [&](std::size_t) { return mesh::gemm_step(l, rig.target, g, layer, tokens, N); },
      [&](std::uint32_t r, std::uint32_t c) {
        auto img = mesh::pe_image(l, weights, cache, 0, {}, r, c);
        mesh::place_gemm_inputs(img, l, g, a, x, tokens, r, c);
        return img;
      });
  const auto want = mesh::expect_gemm(l, weights, g, layer, x, tokens);
  const bool along_rows = mesh::reduces_along_rows(g);
  int mismatches = 0, compared = 0;
  for (std::uint32_t r = 0; r < rows; ++r)
    for (std::uint32_t c = 0; c < cols; ++c) {
      const auto pe = mesh::gemm_pe(l, r, c);
      // This PE holds block j of its line when (j - line - N + 1) mod N is its position and it
      // is its unit's sender along the line.
      const std::uint32_t line = along_rows ? pe.a : pe.b, here = along_rows ? pe.b : pe.a;
      if (!(along_rows ? l.row_ring().sends(c) : l.column_ring().sends(r))) continue;
      const std::uint64_t j = (here + line + N - 1) % N;
      const auto outs = mesh::gemm_output_indices(l, g, r, c);
      const auto got =
          platforms::inference::read_pe(rig.sim->wafer(), l.region(), r, c, a.acc[(N - 1) % 2], a.block * a.nmax, 4);
      for (std::uint32_t t = 0; t < a.block; ++t) {
        const std::uint64_t token = j * a.block + t;
        if (token >= tokens) break;
        for (std::size_t o = 0; o < outs.size(); ++o) {
          ++compared;
          const auto expected = want[token * shape.out + outs[o]];
          if (got[t * a.nmax + o] != expected && mismatches++ < 5)
            ADD_FAILURE() << fmt::format("{} token {} output {} on PE ({}, {}): got {:#x}, expected {:#x}",
                                         mesh::to_string(g), token, outs[o], r, c, got[t * a.nmax + o], expected);
        }
      }
    }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(compared, static_cast<int>(tokens * shape.out));
  std::set<mesh::Bits> distinct(want.begin(), want.end());
  EXPECT_GT(distinct.size(), want.size() / 2);
  EXPECT_GE(run.steps[0].cycles(), run.steps[0].bound.with_latency());
  return run.cycles();
}

// One simulation per test (SystemC builds one per process): every product of a layer and the
// head on 4 x 4 with 16 tokens (blocks of 4).
TEST(MeshGemm, QkvMatchesTheHost) {
  // Cycle-exact: the simulated kernel's cycles on this case (a change in them is a change in
  // the kernel or the core's timing).
  EXPECT_EQ(expect_gemm_matches(4, Gemv::Qkv, 16), 560u);
}
TEST(MeshGemm, OMatchesTheHost) { expect_gemm_matches(4, Gemv::O, 16); }
TEST(MeshGemm, GateUpMatchesTheHost) { expect_gemm_matches(4, Gemv::GateUp, 16); }
TEST(MeshGemm, DownMatchesTheHost) { expect_gemm_matches(4, Gemv::Down, 16); }
TEST(MeshGemm, HeadMatchesTheHost) { expect_gemm_matches(4, Gemv::Head, 16); }
// 11 tokens over 5 blocks of 3: the last blocks padded, the ring of 5 wrapping in one hop.
TEST(MeshGemm, PadsTheLastBlocksOnAnOddRegion) { expect_gemm_matches(5, Gemv::Qkv, 11); }
TEST(MeshGemm, ReducesAlongColumnsOnAnOddRegion) { expect_gemm_matches(5, Gemv::Down, 11); }
// Rectangles: the longer lines' ring has the shorter lines' length in positions, in units of
// one or two PEs (6 rows over 4 positions: units of 1, 2, 1, 2). A unit of two along the
// lines a product reduces over adds its members' sums at its sender; a unit of two along the
// inputs' lines takes the inputs at both members.
TEST(MeshGemm, TallRegionSharesInputsInUnitsOfTwo) { expect_gemm_matches(6, Gemv::Qkv, 11, 4); }
TEST(MeshGemm, TallRegionAddsPairsAlongColumns) { expect_gemm_matches(6, Gemv::Down, 11, 4); }
TEST(MeshGemm, TallRegionAddsPairsOfO) { expect_gemm_matches(7, Gemv::O, 9, 4); }
TEST(MeshGemm, WideRegionAddsPairsAlongRows) { expect_gemm_matches(4, Gemv::GateUp, 13, 7); }
TEST(MeshGemm, WideRegionSharesInputsOfDown) { expect_gemm_matches(4, Gemv::Down, 8, 6); }
TEST(MeshGemm, TwiceAsTallIsAllPairs) { expect_gemm_matches(6, Gemv::Qkv, 7, 3); }
TEST(MeshGemm, TwiceAsWideIsAllPairsAlongRows) { expect_gemm_matches(3, Gemv::Qkv, 7, 6); }

// The prefill of `tokens` prompt tokens through both layers of tiny on an n x n region (n x
// `columns` when not 0), every
// kernel simulated functionally, then the decode token at position `tokens`: the KV cache the
// prefill leaves and the token's layer output and logits, bit for bit against the host's
// causal forward in the PEs' order (expect_prefill, then expect_decode over its cache).
// Returns the prefill's cycles by kernel and in all ("all"). `sram_bytes`: a PE's, when not 0.
std::map<std::string, std::uint64_t> expect_prefill_then_decode(std::uint32_t n, std::uint64_t tokens,
                                                                std::uint32_t group = mesh::MeshPrefill::kDefaultGroup,
                                                                std::uint32_t queue_depth = 0,
                                                                std::uint32_t columns = 0, std::uint64_t chunk = 0,
                                                                std::uint32_t sram_bytes = 0) {
  const std::uint64_t token = 17;
  Rig rig(n, false, tokens, token, queue_depth, columns, sram_bytes);
  const auto& l = *rig.layout;
  const std::uint32_t R = l.region().rows, C = l.region().columns;
  const auto weights = mesh::random_weights(l.shape(), 2, 7);
  std::vector<std::uint64_t> prompt;
  for (std::uint64_t i = 0; i < tokens; ++i) prompt.push_back((3 + 7 * i) % l.shape().vocabulary);
  const mesh::MeshPrefill prefill(rig.target, rig.layout, prompt, 2, l.gemm_positions(), false, false, group, chunk);
  EXPECT_EQ(prefill.group(), std::min<std::uint64_t>(group, prefill.chunk()));
  EXPECT_EQ(prefill.chunk(), chunk ? std::min(chunk, tokens) : tokens);
  const auto empty = mesh::random_cache(l.shape(), 2, 0, 0);
  const auto pre = rig.sim->run_steps(
      prefill.steps().size(), [&](std::size_t i) { return prefill.step(i); },
      [&](std::uint32_t r, std::uint32_t c) { return mesh::pe_image(l, weights, empty, 0, {}, r, c); });
  const auto want_pre = mesh::expect_prefill(l, weights, prompt, 2, chunk);
  int mismatches = 0, compared = 0;
  auto check = [&](std::uint64_t got, std::uint64_t want, const std::string& what) {
    ++compared;
    if (got != want && mismatches++ < 5) ADD_FAILURE() << fmt::format("{}: got {:#x}, expected {:#x}", what, got, want);
  };
  // The cache: position p of layer i on column p mod C, slot p / C, dimension-major.
  const auto& s = l.shape();
  for (std::uint32_t i = 0; i < 2; ++i)
    for (std::uint32_t r = 0; r < R; ++r)
      for (std::uint32_t c = 0; c < C; ++c) {
        const auto dims = l.row_dims(r);
        const auto& la = l.addrs().layers[i];
        const auto n_slots = static_cast<std::uint32_t>(dims.size() * l.slots_max);
        const auto kc = platforms::inference::read_pe(rig.sim->wafer(), l.region(), r, c, la.kc, n_slots, 2);
        const auto vc = platforms::inference::read_pe(rig.sim->wafer(), l.region(), r, c, la.vc, n_slots, 4);
        const models::reference::Arith f32(models::reference::Format::FP32);
        const auto& K = want_pre.cache.k[i];
        const auto& V = want_pre.cache.v[i];
        for (std::uint64_t p = c; p < tokens; p += C)
          for (std::uint64_t d = 0; d < dims.size(); ++d) {
            const std::uint64_t j = l.kv_group(r) * s.head_dim + dims.lo + d, at = d * l.slots_max + p / C;
            const std::string where = fmt::format("layer {} dimension {} of position {} on PE ({}, {})", i, j, p, r, c);
            check(kc[at], K.bits(K.at(p, j)), "key of " + where);
            check(vc[at], f32.from(models::reference::Format::BF16, V.bits(V.at(p, j))), "value of " + where);
          }
      }
  // A token's output of the last layer (the residual stream x) on PE (r, c).
  auto check_x = [&](std::uint32_t r, std::uint32_t c, const auto& want_x, const std::string& what) {
    const auto f = l.col_features(c);
    const auto x = platforms::inference::read_pe(rig.sim->wafer(), l.region(), r, c, l.addrs().x,
                                                 static_cast<std::uint32_t>(f.size()), 2);
    for (std::uint64_t k = 0; k < f.size(); ++k)
      check(x[k], want_x[f.lo + k], fmt::format("{}[{}] on PE ({}, {})", what, f.lo + k, r, c));
  };
  // The last prompt token's, on every PE.
  for (std::uint32_t r = 0; r < R; ++r)
    for (std::uint32_t c = 0; c < C; ++c) check_x(r, c, want_pre.x.back(), "prompt x");
  const auto dec = rig.sim->run();
  const auto want = mesh::expect_decode(l, weights, want_pre.cache, token, tokens, 2);
  for (std::uint32_t r = 0; r < R; ++r)
    for (std::uint32_t c = 0; c < C; ++c) {
      check_x(r, c, want.layers.back().x, "x");
      const auto v = l.row_vocab(r);
      const auto lg = platforms::inference::read_pe(rig.sim->wafer(), l.region(), r, c, l.addrs().logits,
                                                    static_cast<std::uint32_t>(v.size()), 2);
      for (std::uint64_t k = 0; k < v.size(); ++k)
        check(lg[k], want.logits[v.lo + k], fmt::format("logit {} on PE ({}, {})", v.lo + k, r, c));
    }
  EXPECT_EQ(mismatches, 0);
  std::set<mesh::Bits> distinct(want.logits.begin(), want.logits.end());
  EXPECT_GT(distinct.size(), want.logits.size() / 2);
  EXPECT_EQ(dec.steps.size(), 1u + 2 * 7 + 2);
  // The prefill's cycles by kernel, each step at least its bound.
  std::map<std::string, std::uint64_t> cycles;
  for (const auto& st : pre.steps) {
    cycles[st.kernel] += st.cycles();
    EXPECT_GE(st.cycles(), st.bound.with_latency()) << st.name;
  }
  cycles["all"] = pre.cycles();
  cycles["steps"] = pre.steps.size();
  return cycles;
}

TEST(MeshPrefill, FillsTheCacheThenTheDecodeTokenMatchesTheHost) {
  // Cycle-exact (a change in them is a change in a kernel or the core's timing): 6 tokens in
  // blocks of 2 on 4 x 4, two layers, attention over one group of all 6; 38 steps.
  const auto cycles = expect_prefill_then_decode(4, 6);
  EXPECT_EQ(cycles.at("block"), 47u);
  EXPECT_EQ(cycles.at("unblock"), 454u);
  EXPECT_EQ(cycles.at("output"), 84u);
  EXPECT_EQ(cycles.at("swiglu_blocks"), 612u);
  EXPECT_EQ(cycles.at("norm_blocks"), 894u);
  EXPECT_EQ(cycles.at("gemm"), 2428u);
  EXPECT_EQ(cycles.at("attention"), 1660u);
  EXPECT_EQ(cycles.at("rmsnorm"), 443u);
  EXPECT_EQ(cycles.at("embedding"), 137u);
  EXPECT_EQ(cycles.at("all"), 6759u);
  EXPECT_EQ(cycles.at("steps"), 23u);
}
// Blocks of 2 tokens behind queues of 1 wavelet: the norm over the blocks moves its vectors
// one ring position a task, not as relays (which could then deadlock), with the same bits.
TEST(MeshPrefill, NormMovesOnePositionATaskWhenABlockOutgrowsTheQueue) {
  const auto cycles = expect_prefill_then_decode(4, 6, mesh::MeshPrefill::kDefaultGroup, 1);
  EXPECT_EQ(cycles.at("norm_blocks"), 1173u);
}
// Blocks of 2 behind queues of 2: the relays' edge (every PE's own values just fit its queue).
TEST(MeshPrefill, NormRelaysWhenABlockJustFitsTheQueue) {
  const auto cycles = expect_prefill_then_decode(4, 6, mesh::MeshPrefill::kDefaultGroup, 2);
  EXPECT_EQ(cycles.at("norm_blocks"), 894u);
}
TEST(MeshPrefill, PadsTheLastBlockOnAnOddRegion) { expect_prefill_then_decode(5, 7); }
TEST(MeshPrefill, FewerTokensThanBlocks) { expect_prefill_then_decode(4, 3); }
// Attention over groups: each token of a group sees the positions before the group's and the
// group's up to its own, whichever column they are cached on.
// Groups of 4 on 4 columns (each column one position of each group; the last group short).
TEST(MeshPrefill, AttendsOverGroupsOfOnePositionAColumn) { expect_prefill_then_decode(4, 13, 4); }
// Groups of 8 on 4 columns: two of a group's positions on each column, both masked for the
// group's first tokens.
TEST(MeshPrefill, AttendsOverGroupsOfTwoPositionsAColumn) { expect_prefill_then_decode(4, 13, 8); }
// Groups of 2 on 5 x 5 with blocks of 3: groups that straddle two GEMM blocks.
TEST(MeshPrefill, AttendsOverGroupsAcrossBlocks) { expect_prefill_then_decode(5, 11, 2); }
// Groups of 1: token by token through the same kernels.
TEST(MeshPrefill, AttendsTokenByTokenInGroupsOfOne) { expect_prefill_then_decode(4, 6, 1); }
// Rectangles (MeshGEMM over units of one or two PEs along the longer lines): the moves over
// the blocks send from a unit's sender and reach both its members.
TEST(MeshPrefill, TallRegion) { expect_prefill_then_decode(6, 9, 4, 0, 4); }
TEST(MeshPrefill, WideRegion) { expect_prefill_then_decode(4, 11, 3, 0, 7); }
TEST(MeshPrefill, TallRegionMovesOnePositionATask) { expect_prefill_then_decode(7, 13, 4, 1, 4); }
// A prompt in passes (chunks): 13 tokens in passes of 5, 5 and 3 on 4 x 4 (MeshGEMM's blocks
// of 2, 2 and 1 token), each pass through both layers before the next attends to its cache;
// groups of 2 (a pass's last group short); and passes of one token each.
TEST(MeshPrefill, PassesOfAChunkedPrompt) {
  const auto cycles = expect_prefill_then_decode(4, 13, 2, 0, 0, 5);
  // A pass of g groups: the input's 3 steps a group, each of the 2 layers' 4 products, 2 steps
  // over the blocks and 3 a group, the norm between the layers: 9 g + 13; then the output.
  EXPECT_EQ(cycles.at("steps"), (9u * 3 + 13) * 2 + (9u * 2 + 13) + 1);
}
TEST(MeshPrefill, PassesOfOneToken) { expect_prefill_then_decode(5, 4, 64, 0, 4, 1); }

// On the wafer with the head, with SRAM for no more: MeshGEMM's buffers that would pass its
// end lie over the decode's logits, the largest that fit first (here 4 tokens on 4 x 4,
// blocks of one token: an input block of 16 B, then the residual block of 8 B, in the 24 B of
// logits), the groups' buffers in what is left (groups of 3 tokens, not the prompt's 4); the
// prefill and then the decode token, which writes its logits over them, match the host bit
// for bit.
TEST(MeshPrefill, BuffersOverTheDecodesLogitsWhereTheSramIsShort) {
  const auto shape = mesh::decoder_shape(tiny_llama());
  const mesh::MeshLayout roomy(shape, mesh::Region{0, 0, 4, 4}, 2, true, true, 4, 8, 48 * 1024);
  const auto after = mesh::gemm_addrs(roomy, Gemv::Qkv, 4, 8);
  const mesh::Addrs& a = roomy.addrs();
  ASSERT_EQ(after.in_logits, 0u);
  ASSERT_EQ(a.logits_bytes, 24u);
  ASSERT_EQ(after.x_bytes, 16u);
  ASSERT_EQ(after.acc_bytes, 48u);
  ASSERT_EQ(after.end, a.end + 2 * 16 + 2 * 48 + 8);
  const std::uint32_t sram = after.end - 24;
  const mesh::MeshLayout tight(shape, mesh::Region{0, 0, 4, 4}, 2, true, true, 4, 8, sram);
  ASSERT_EQ(tight.addrs().end, a.end);
  const auto over = mesh::gemm_addrs(tight, Gemv::Qkv, 4, 8);
  EXPECT_EQ(over.in_logits, 24u);
  EXPECT_EQ(over.x[0], a.logits);
  EXPECT_EQ(over.residual, a.logits + 16);
  EXPECT_EQ(over.x[1], a.end);
  EXPECT_EQ(over.acc[0], a.end + 16);
  EXPECT_EQ(over.acc[1], a.end + 16 + 48);
  EXPECT_EQ(over.end, sram);
  // One byte less and they do not fit: the same placement, past the SRAM's end.
  EXPECT_EQ(mesh::gemm_addrs(mesh::MeshLayout(shape, mesh::Region{0, 0, 4, 4}, 2, true, true, 4, 8, sram - 1),
                             Gemv::Qkv, 4, 8)
                .end,
            sram);
  EXPECT_EQ(mesh::prefill_group(tight, 4, sram, 64), 3u);
  expect_prefill_then_decode(4, 4, 3, 0, 0, 0, sram);
}

// `infer --prefill 6` on 4 x 4, functional (in passes of `chunk` tokens when not 0): the
// prefill and the decode token as one run, the token's output and logits checked against the
// host's causal forward over the prompt and the token.
platforms::inference::MeshToken infer_prefill(std::uint64_t chunk) {
  const auto platform = platforms::load_platform("tiny");
  platforms::inference::MeshTokenOptions o;
  o.prefill = o.position = 6;
  o.token = 5;
  o.layers = 0;
  o.check = true;
  o.rows = o.columns = 4;
  o.prefill_chunk = chunk;
  sim::stats::Group root("");
  platforms::inference::MeshTokenSimulation s(platform.spec, tiny_llama(), o, platforms::BuildOptions{}, root);
  return s.run();
}

// `infer --mesh-prefill-chunk 4`: 6 tokens in passes of 4 and 2; the products and the steps
// over the blocks run once a pass, the groups' steps once a group of a pass.
TEST(MeshPrefill, InferRunsThePromptInPassesWhenAsked) {
  const auto t = infer_prefill(4);
  ASSERT_EQ(t.runs.size(), 1u);
  const auto& r = t.runs[0];
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
  EXPECT_EQ(r.compared, 16u * 4 + 16u * 10);
  EXPECT_EQ(t.prefill_chunk, 4u);
  EXPECT_EQ(t.prefill_group, 4u);
  EXPECT_EQ(r.prefill.size(), 16u);  // 4 products of 2 layers, twice
  std::map<std::string, std::uint64_t> steps;
  for (const auto& k : r.prefill_kernels) steps[k.kernel + "/" + mesh::to_string(k.per)] = k.steps;
  const std::map<std::string, std::uint64_t> want{
      {"embedding/wafer", 2},     {"rmsnorm/wafer", 2},     {"block/wafer", 2},
      {"block/layer", 4},         {"unblock/layer", 4},     {"attention/layer", 4},
      {"swiglu_blocks/layer", 4}, {"norm_blocks/layer", 4}, {"norm_blocks/between layers", 2},
      {"output/wafer", 1}};
  EXPECT_EQ(steps, want);
}

TEST(MeshPrefill, InferRunsThePrefillThenTheTokenFunctionally) {
  const auto t = infer_prefill(0);
  ASSERT_EQ(t.runs.size(), 1u);
  const auto& r = t.runs[0];
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
  EXPECT_EQ(r.compared, 16u * 4 + 16u * 10);  // x and the logits on every PE
  ASSERT_EQ(r.prefill.size(), 8u);
  std::map<std::string, std::uint64_t> steps;
  std::uint64_t other = 0, gemm = 0;
  for (const auto& k : r.prefill_kernels) {
    steps[k.kernel + "/" + mesh::to_string(k.per)] = k.steps;
    other += k.cycles;
    EXPECT_GE(k.cycles, k.bound) << k.kernel;
  }
  for (const auto& p : r.prefill) gemm += p.cycles;
  const std::map<std::string, std::uint64_t> want{
      {"embedding/wafer", 1},     {"rmsnorm/wafer", 1},     {"block/wafer", 1},
      {"block/layer", 2},         {"unblock/layer", 2},     {"attention/layer", 2},
      {"swiglu_blocks/layer", 2}, {"norm_blocks/layer", 2}, {"norm_blocks/between layers", 1},
      {"output/wafer", 1}};
  EXPECT_EQ(steps, want);
  // Both layers simulated: the prefill's cycles are the simulated ones.
  EXPECT_EQ(t.prefill_gemm_cycles, gemm);
  EXPECT_EQ(t.prefill_other_cycles, other);
  EXPECT_EQ(t.prefill_cycles, gemm + other);
  // FillsTheCacheThenTheDecodeTokenMatchesTheHost's prefill takes 6,759 cycles: its prompt's
  // tokens lie on other rows of the embedding.
  EXPECT_EQ(t.prefill_cycles, 6767u);
  EXPECT_EQ(t.prefill_group, 6u);
}

// `infer --prefill --timing-only`: every simulated layer's four products and the kernels
// between them before the decode token, all steps simulated or runs of 1 and M steps with the
// others derived; the prefill's cycles over every layer from the simulated ones.
TEST(MeshPrefill, ProductsOfEveryLayerThenTheToken) {
  const auto platform = platforms::load_platform("tiny");
  platforms::inference::MeshTokenOptions o;
  o.prefill = o.position = 12;
  o.layers = 0;
  o.gemm_steps = 0;
  o.rows = o.columns = 6;
  sim::stats::Group root("");
  platforms::BuildOptions build;
  build.timing_only = true;
  platforms::inference::MeshTokenSimulation s(platform.spec, tiny_llama(), o, build, root);
  const auto t = s.run();
  ASSERT_EQ(t.runs.size(), 1u);
  const auto& r = t.runs[0];
  ASSERT_EQ(r.prefill.size(), 8u);
  std::uint64_t sum = 0;
  for (const auto& p : r.prefill) {
    EXPECT_EQ(p.steps, 6u);
    EXPECT_EQ(p.simulated, 6u);
    EXPECT_EQ(p.cycles, p.cycles_m);
    EXPECT_GE(p.cycles, p.bound.with_latency()) << p.name;
    sum += p.cycles;
  }
  EXPECT_EQ(t.prefill_gemm_cycles, sum);
  std::uint64_t other = 0;
  for (const auto& k : r.prefill_kernels) other += k.cycles;
  EXPECT_EQ(r.prefill_kernels.size(), 10u);
  EXPECT_EQ(t.prefill_other_cycles, other);
  EXPECT_EQ(t.prefill_cycles, sum + other);
  EXPECT_EQ(t.prefill_tokens, 12u);
  EXPECT_EQ(r.run.steps.size(), 1u + 2 * 7 + 2);  // the decode token after it
}

// sample_groups: each run of groups of one cache depth at its first and last group, the
// first half of the run counted at the first's cycles; groups of one token sample each run
// of C tokens.
TEST(MeshPrefill, SamplesEachCacheDepthAtItsFirstAndLastGroup) {
  using S = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  auto pairs = [](std::uint64_t tokens, std::uint32_t group, std::uint32_t columns) {
    S v;
    for (const auto& t : mesh::sample_groups(tokens, group, columns)) v.emplace_back(t.first, t.count);
    return v;
  };
  EXPECT_EQ(pairs(1, 1, 4), (S{{0, 1}}));
  EXPECT_EQ(pairs(2, 1, 4), (S{{0, 1}, {1, 1}}));
  EXPECT_EQ(pairs(4, 1, 4), (S{{0, 2}, {3, 2}}));
  EXPECT_EQ(pairs(9, 1, 4), (S{{0, 2}, {3, 2}, {4, 2}, {7, 2}, {8, 1}}));
  EXPECT_EQ(pairs(10, 1, 3), (S{{0, 2}, {2, 1}, {3, 2}, {5, 1}, {6, 2}, {8, 1}, {9, 1}}));
  // Groups of 2 on 4 columns: [0, 1] [2, 3] depth 0, [4, 5] [6, 7] depth 1, [8, 9] depth 2.
  EXPECT_EQ(pairs(10, 2, 4), (S{{0, 1}, {2, 1}, {4, 1}, {6, 1}, {8, 1}}));
  // Groups of 3 on 12 columns: [0, 2] .. [9, 11] depth 0, then [12, 13] (the last, short).
  EXPECT_EQ(pairs(14, 3, 12), (S{{0, 2}, {9, 2}, {12, 1}}));
  EXPECT_EQ(mesh::sample_groups(14, 3, 12).back().tokens, 2u);
  std::uint64_t n = 0;
  for (const auto& t : mesh::sample_groups(2048, 1, 683)) n += t.count;
  EXPECT_EQ(n, 2048u);
  EXPECT_EQ(mesh::sample_groups(2048, 1, 683).size(), 6u);
  n = 0;
  for (const auto& t : mesh::sample_groups(2048, 64, 683)) n += t.count;
  EXPECT_EQ(n, 32u);  // groups
  EXPECT_THROW(mesh::sample_groups(0, 1, 4), std::logic_error);
  EXPECT_THROW(mesh::sample_groups(4, 0, 4), std::logic_error);
}

// The group's buffers lie in SRAM free while the groups' steps run: disjoint from each other,
// from the weights and KV caches, from q/k/v's output and o's input blocks and from the
// residual block, and within the SRAM; the largest group that fits is taken.
TEST(MeshPrefill, GroupBuffersLieInFreeSram) {
  Rig rig(4);
  const auto& l = *rig.layout;
  const std::uint32_t N = 4;
  // tiny's SRAM, and none after MeshGEMM's buffers (the groups then shorter)
  std::set<std::uint32_t> groups;
  for (const auto& [tokens, sram] :
       std::vector<std::pair<std::uint64_t, std::uint32_t>>{{6, rig.target.sram_bytes()},
                                                            {40, rig.target.sram_bytes()},
                                                            {40, mesh::gemm_addrs(l, Gemv::Qkv, 40, l.align()).end}}) {
    const std::uint32_t g = mesh::prefill_group(l, tokens, sram, 64);
    groups.insert(g);
    SCOPED_TRACE(fmt::format("{} tokens, {} B, groups of {}", tokens, sram, g));
    EXPECT_GE(g, 1u);
    EXPECT_LE(g, tokens);
    const auto ga = mesh::group_addrs(l, tokens, g, sram);
    const std::uint64_t hq = l.shape().group_heads(), slots = l.slots(0, tokens), kc = l.kc_max;
    // The softmax's statistics: one row's share of the group's pairs (the shortest segment's).
    std::uint64_t rows = N;
    for (const auto& tree : l.segments().trees) rows = std::min<std::uint64_t>(rows, tree.length);
    const std::uint64_t share = (g * hq + rows - 1) / rows;
    const std::vector<std::pair<std::uint64_t, std::uint64_t>> bufs{
        {ga.sums, g * std::max({std::uint64_t{l.nqkv_max}, hq * slots, std::uint64_t{l.nq_max}, kc}) * 4},
        {ga.qkv, g * std::max(std::uint64_t{l.nqkv_max}, kc) * 2},
        {ga.scores, g * hq * slots * 4},
        {ga.mx, std::max<std::uint64_t>(g, share) * 4},  // also the input norm's sums, one a token
        {ga.sum, share * 4},
        {ga.rcp, share * 4},
        {ga.att, g * std::max(std::uint64_t{l.nq_max}, kc) * 2}};
    const auto qkv = mesh::gemm_addrs(l, Gemv::Qkv, tokens, l.align());
    const std::uint64_t block_in = std::uint64_t{qkv.block} * std::max({l.kc_max, l.nq_max, l.nf_max}) * 2;
    const std::uint64_t block_out = qkv.acc_bytes;
    const std::vector<std::pair<std::uint64_t, std::uint64_t>> live{
        {0, l.addrs().end - l.addrs().activations},  // weights and caches
        {qkv.x[0], block_in},                        // o's inputs, filled group by group
        {qkv.acc[(N - 1) % 2], block_out},           // q/k/v's outputs
        {qkv.residual, std::uint64_t{qkv.block} * l.kc_max * 2}};
    auto overlap = [](auto a, auto b) { return a.first < b.first + b.second && b.first < a.first + a.second; };
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      EXPECT_LE(bufs[i].first + bufs[i].second, sram) << i;
      for (std::size_t j = i + 1; j < bufs.size(); ++j) EXPECT_FALSE(overlap(bufs[i], bufs[j])) << i << " " << j;
      for (const auto& lv : live) EXPECT_FALSE(overlap(bufs[i], lv)) << i << " at " << bufs[i].first;
    }
    if (g < std::min<std::uint64_t>(tokens, 64)) {  // one token more would not fit
      EXPECT_THROW(mesh::group_addrs(l, tokens, g + 1, sram), std::logic_error);
    }
  }
  EXPECT_EQ(groups.size(), 3u);
  EXPECT_LT(*groups.begin(), 40u);  // a group the SRAM limits
  EXPECT_THROW(mesh::prefill_group(l, 6, rig.target.sram_bytes(), 0), std::logic_error);
}

// --mesh-prefill-tokens sampled: the steps of the sampled attention groups and wafer input
// tokens only, every other at its sample's cycles. The products and the steps over the blocks
// are the same runs; every kernel counts every group's (or token's) steps, and its cycles stay
// within 1% of the run of all of them (a group's steps differ from its sample's only in where
// its blocks, its cache positions and its embedding rows lie).
TEST(MeshPrefill, ASampledPromptStandsForEveryGroup) {
  const auto platform = platforms::load_platform("tiny");
  models::ModelSpec m = tiny_llama();
  m.sequence = 48;
  auto run = [&](bool sampled) {
    platforms::inference::MeshTokenOptions o;
    o.prefill = o.position = 40;
    o.layers = 1;
    o.gemm_steps = 0;
    o.rows = o.columns = 8;
    o.prefill_group = 2;
    o.prefill_sampled = sampled;
    o.separate = true;  // each in a process of its own: SystemC builds no module after a run
    sim::stats::Group root("");
    platforms::BuildOptions build;
    build.timing_only = true;
    platforms::inference::MeshTokenSimulation s(platform.spec, m, o, build, root);
    return s.run();
  };
  const auto all = run(false), sampled = run(true);
  EXPECT_TRUE(sampled.prefill_sampled);
  EXPECT_FALSE(all.prefill_sampled);
  EXPECT_EQ(sampled.prefill_group, 2u);
  EXPECT_EQ(sampled.prefill_gemm_cycles, all.prefill_gemm_cycles);
  const auto& ka = all.runs.at(0).prefill_kernels;
  const auto& ks = sampled.runs.at(0).prefill_kernels;
  ASSERT_EQ(ks.size(), ka.size());
  for (std::size_t i = 0; i < ka.size(); ++i) {
    SCOPED_TRACE(ka[i].kernel + "/" + mesh::to_string(ka[i].per));
    EXPECT_EQ(ks[i].kernel, ka[i].kernel);
    EXPECT_EQ(ks[i].steps, ka[i].steps);
    EXPECT_EQ(ka[i].simulated, ka[i].steps);
    if (ka[i].kernel == "swiglu_blocks" || ka[i].kernel == "norm_blocks" || ka[i].kernel == "output") {
      EXPECT_EQ(ks[i].simulated, ks[i].steps);  // not sampled
    } else {
      EXPECT_EQ(ka[i].steps, 20u);      // groups of 2
      EXPECT_EQ(ks[i].simulated, 10u);  // 5 depths of 4 groups, at their first and last
    }
    const double d = static_cast<double>(ks[i].cycles) - static_cast<double>(ka[i].cycles);
    EXPECT_LE(std::abs(d), 0.01 * static_cast<double>(ka[i].cycles)) << ks[i].cycles << " vs " << ka[i].cycles;
  }
  EXPECT_EQ(sampled.cycles(), all.cycles());  // the decode token after it
}

// One simulated layer stands for every layer of its wafer: the steps once a layer counted for
// each layer, those between two layers once per gap, the wafer's input and output once. On
// tiny (two layers, 15 tokens on 8 x 8) the steps between the products then take the cycles of
// the run that simulates both layers, to within 0.1%.
TEST(MeshPrefill, OneSimulatedLayerStandsForEveryLayer) {
  const auto platform = platforms::load_platform("tiny");
  auto run = [&](std::uint32_t layers) {
    platforms::inference::MeshTokenOptions o;
    o.prefill = o.position = 15;
    o.layers = layers;
    o.gemm_steps = 0;
    o.rows = o.columns = 8;
    o.separate = true;  // each in a process of its own: SystemC builds no module after a run
    sim::stats::Group root("");
    platforms::BuildOptions build;
    build.timing_only = true;
    platforms::inference::MeshTokenSimulation s(platform.spec, tiny_llama(), o, build, root);
    return s.run();
  };
  const auto one = run(1), all = run(0);
  EXPECT_EQ(one.layers_simulated, 1u);
  EXPECT_EQ(all.layers_simulated, 2u);
  std::map<std::string, std::uint64_t> per;
  for (const auto& k : one.runs.at(0).prefill_kernels) per[k.kernel + "/" + mesh::to_string(k.per)] = k.steps;
  // The one simulated layer is followed by the second's first norm: a gap of layers.
  EXPECT_EQ(per.at("norm_blocks/layer"), 1u);
  EXPECT_EQ(per.at("norm_blocks/between layers"), 1u);
  EXPECT_EQ(per.at("output/wafer"), 1u);
  const double a = static_cast<double>(one.prefill_other_cycles), b = static_cast<double>(all.prefill_other_cycles);
  EXPECT_NEAR(a, b, 0.001 * b);
  EXPECT_NEAR(static_cast<double>(one.prefill_gemm_cycles), static_cast<double>(all.prefill_gemm_cycles),
              0.001 * static_cast<double>(all.prefill_gemm_cycles));
}

// A mesh run reports every simulated step on stderr as it ends, in order: its name, kernel,
// cycles and the wall seconds so far (the tests' environment silences it otherwise).
TEST(MeshPrefill, InferReportsEveryStepAsItEnds) {
  test::TempDir tmp;
  const char* quiet = std::getenv("WAFERSIM_NO_PROGRESS");
  const std::string saved = quiet ? quiet : "";
  unsetenv("WAFERSIM_NO_PROGRESS");
  const auto r = wafersim(std::string("infer tiny --model ") + WAFERSIM_SOURCE_DIR +
                              "/examples/models/tiny-llama.yaml --placement mesh --prefill 6 --mesh-region 4x4 "
                              "--timing-only -o " +
                              (tmp.path() / "p").string(),
                          true);
  setenv("WAFERSIM_NO_PROGRESS", "1", 1);
  const auto silent = wafersim(std::string("infer tiny --model ") + WAFERSIM_SOURCE_DIR +
                                   "/examples/models/tiny-llama.yaml --placement mesh --prefill 6 --mesh-region 4x4 "
                                   "--timing-only -o " +
                                   (tmp.path() / "q").string(),
                               true);
  if (quiet)
    setenv("WAFERSIM_NO_PROGRESS", saved.c_str(), 1);
  else
    unsetenv("WAFERSIM_NO_PROGRESS");
  EXPECT_EQ(silent.out.find("(norm_blocks)"), std::string::npos) << silent.out;
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string out = "\n" + r.out;  // each line after a newline
  std::size_t at = 0;
  for (const char* step :
       {"prefill.embed (embedding)", "prefill.h0.ln1 (rmsnorm)", "prefill.h0.qkv (gemm)", "prefill.h0.attn (attention)",
        "prefill.h0.ln2 (norm_blocks)", "prefill.h0.swiglu (swiglu_blocks)", "prefill.h0.down (gemm)",
        "prefill.h1.ln1 (norm_blocks)", "h0.qkv (gemv)", "head (gemv)"}) {
    const std::regex line(std::string("\\n  ") + std::regex_replace(step, std::regex(R"([.()])"), R"(\$&)") +
                          R"( [0-9]+ cycles, [0-9]+\.[0-9] s\n)");
    std::smatch m;
    const std::string rest = out.substr(at);
    ASSERT_TRUE(std::regex_search(rest, m, line)) << step << "\n" << r.out;
    at += static_cast<std::size_t>(m.position(0)) + 1;
  }
}

// `infer --mesh-prefill-tokens sampled`: timing-only, with a prefill; the JSON says the
// prompt was sampled and gives each kernel's steps simulated. Without --timing-only, or with
// another value, it is an input error (exit code 2).
TEST(MeshPrefill, InferSamplesThePromptWhenAskedAndOnlyForTiming) {
  test::TempDir tmp;
  const std::string base = std::string("infer tiny --model ") + WAFERSIM_SOURCE_DIR +
                           "/examples/models/tiny-llama.yaml --placement mesh --prefill 12 --mesh-region 4x4 ";
  const auto ok = wafersim(base + "--timing-only --mesh-prefill-tokens sampled --mesh-prefill-group 1 --json -o " +
                           (tmp.path() / "s").string());
  ASSERT_EQ(ok.code, 0) << ok.out;
  const auto j = nlohmann::json::parse(ok.out);
  EXPECT_TRUE(j["prefill"]["tokens_sampled"].get<bool>());
  EXPECT_EQ(j["prefill"]["group"].get<int>(), 1);
  bool attention = false;
  for (const auto& k : j["runs"][0]["prefill_kernels"])
    if (k["kernel"] == "attention") {
      attention = true;
      EXPECT_EQ(k["steps"].get<int>(), 12);           // every token counted
      EXPECT_EQ(k["steps_simulated"].get<int>(), 6);  // 0, 3, 4, 7, 8, 11
      EXPECT_EQ(k["per"], "layer");
    }
  EXPECT_TRUE(attention);
  const auto functional = wafersim(base + "--mesh-prefill-tokens sampled -o " + (tmp.path() / "f").string(), true);
  EXPECT_EQ(functional.code, 2);
  EXPECT_NE(functional.out.find("--mesh-prefill-tokens sampled: a timing-only prefill"), std::string::npos)
      << functional.out;
  EXPECT_EQ(wafersim(base + "--timing-only --mesh-prefill-tokens some", true).code, 2);
  EXPECT_EQ(wafersim(base + "--timing-only --mesh-prefill-group 0", true).code, 2);
  // By default one group holds the whole prompt of 12 here.
  const auto whole = wafersim(base + "--timing-only --json -o " + (tmp.path() / "g").string());
  ASSERT_EQ(whole.code, 0) << whole.out;
  EXPECT_EQ(nlohmann::json::parse(whole.out)["prefill"]["group"].get<int>(), 12);
}

// The products alone (--mesh-prefill-products): the eight products, no kernel between them.
TEST(MeshPrefill, ProductsAloneWhenAsked) {
  const auto platform = platforms::load_platform("tiny");
  platforms::inference::MeshTokenOptions o;
  o.prefill = o.position = 8;
  o.layers = 0;
  o.prefill_products = true;
  o.rows = o.columns = 4;
  sim::stats::Group root("");
  platforms::BuildOptions build;
  build.timing_only = true;
  platforms::inference::MeshTokenSimulation s(platform.spec, tiny_llama(), o, build, root);
  const auto t = s.run();
  EXPECT_EQ(t.runs[0].prefill.size(), 8u);
  EXPECT_TRUE(t.runs[0].prefill_kernels.empty());
  EXPECT_EQ(t.prefill_other_cycles, 0u);
  EXPECT_EQ(t.prefill_cycles, t.prefill_gemm_cycles);
}

// The products alone, timing-only, of 13 tokens on 4 x 4 in passes of 7 and 6 (MeshGEMM's
// blocks of 2 tokens both), with `gemm_steps` simulated a product (0: all).
std::vector<platforms::inference::MeshPrefillStep> products_in_passes_of_7(std::uint32_t gemm_steps) {
  const auto platform = platforms::load_platform("tiny");
  platforms::inference::MeshTokenOptions o;
  o.prefill = o.position = 13;
  o.prefill_chunk = 7;
  o.layers = 0;
  o.prefill_products = true;
  o.gemm_steps = gemm_steps;
  o.rows = o.columns = 4;
  sim::stats::Group root("");
  platforms::BuildOptions build;
  build.timing_only = true;
  platforms::inference::MeshTokenSimulation s(platform.spec, tiny_llama(), o, build, root);
  return s.run().runs[0].prefill;
}

// A product's programs depend on the prompt only through its blocks: with every step
// simulated, the later tokens' products take the earlier tokens' cycles. The one exception is the
// run's first step: a step's cycles run from the cycle the one before ended, and its programs
// are loaded a cycle later (when the run finds the wafer quiet), so every step but the run's
// first counts that cycle; the later h0.qkv, which follows h1.down, takes one more.
TEST(MeshPrefill, APassWithAnEarlierPassesBlocksTakesItsCycles) {
  const auto every = products_in_passes_of_7(0);
  ASSERT_EQ(every.size(), 16u);  // 2 passes x 2 layers x 4 products
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(every[i + 8].name, every[i].name);
    EXPECT_EQ(every[i + 8].simulated, 4u);
    EXPECT_EQ(every[i + 8].cycles, every[i].cycles + (i == 0 ? 1 : 0)) << every[i].name;
  }
}

// With runs of 1 and 3 steps, the later 6 tokens' products are not simulated again but take the
// earlier 7 tokens' cycles, with the bound and work of their own 6 tokens.
TEST(MeshPrefill, APassWithAnEarlierPassesBlocksRepeatsItsProducts) {
  const auto platform = platforms::load_platform("tiny");
  const auto layout = std::make_shared<mesh::MeshLayout>(mesh::decoder_shape(tiny_llama()), mesh::Region{0, 0, 4, 4}, 2,
                                                         true, true, 4, 8, 48 * 1024);
  const models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
  const mesh::MeshPrefill m(target, layout, std::vector<std::uint64_t>(13, 1), 2, 3, true, false, 64, 7);
  EXPECT_EQ(m.steps().size(), 16u);  // the earlier 7 tokens' 8 products in runs of 1 and 3 steps
  ASSERT_EQ(m.repeated().size(), 8u);
  EXPECT_EQ(m.repeated()[0].id.base, 7u);
  EXPECT_EQ(m.repeated()[0].id.chunk, 6u);
  EXPECT_EQ(m.repeated()[0].same_as, 1u);
  EXPECT_EQ(m.repeated()[0].before, 16u);
  const auto derived = products_in_passes_of_7(3);
  ASSERT_EQ(derived.size(), 16u);
  for (std::size_t i = 0; i < 8; ++i) {
    const auto& rep = m.repeated()[i];
    const mesh::MeshStep own = mesh::gemm_step(*layout, target, rep.id.g, rep.id.layer, 6, 4, false);
    EXPECT_EQ(derived[i].simulated, 3u);
    EXPECT_EQ(derived[i + 8].simulated, 0u);
    EXPECT_EQ(derived[i + 8].name, derived[i].name);
    EXPECT_EQ(derived[i + 8].cycles_one, derived[i].cycles_one);
    EXPECT_EQ(derived[i + 8].cycles_m, derived[i].cycles_m);
    EXPECT_EQ(derived[i + 8].cycles, derived[i].cycles);
    EXPECT_EQ(derived[i + 8].flops, own.work.flops);
    EXPECT_EQ(derived[i + 8].flops * 7, derived[i].flops * 6) << derived[i].name;
    EXPECT_EQ(derived[i + 8].bound.roofline(), own.bound.roofline());
  }
}

// With sampled groups, a later pass's steps over the blocks whose blocks hold as many tokens as
// an earlier pass's take that pass's cycles (13 tokens on 4 x 4 in passes of 7 and 6, blocks
// of 2): norm_blocks and swiglu_blocks simulated once, not twice, and their sums (each pass's
// cycles, its own bound) the same as with every group and step simulated.
TEST(MeshPrefill, ASampledPromptRepeatsAPassesStepsOverTheBlocks) {
  test::TempDir tmp;
  const std::string base = std::string("infer tiny --model ") + WAFERSIM_SOURCE_DIR +
                           "/examples/models/tiny-llama.yaml --placement mesh --timing-only --prefill 13 "
                           "--mesh-region 4x4 --mesh-prefill-chunk 7 --mesh-gemm-steps all --json -o ";
  const auto all = wafersim(base + (tmp.path() / "a").string());
  const auto sampled = wafersim(base + (tmp.path() / "s").string() + " --mesh-prefill-tokens sampled");
  ASSERT_EQ(all.code, 0) << all.out;
  ASSERT_EQ(sampled.code, 0) << sampled.out;
  const auto ka = nlohmann::json::parse(all.out)["runs"][0]["prefill_kernels"];
  const auto ks = nlohmann::json::parse(sampled.out)["runs"][0]["prefill_kernels"];
  int compared = 0;
  for (const auto& a : ka)
    for (const auto& b : ks)
      if (a["kernel"] == b["kernel"] && a["per"] == b["per"] &&
          (a["kernel"] == "norm_blocks" || a["kernel"] == "swiglu_blocks")) {
        ++compared;
        SCOPED_TRACE(a.dump());
        EXPECT_EQ(a["steps"].get<int>(), 2);
        EXPECT_EQ(a["steps_simulated"].get<int>(), 2);
        EXPECT_EQ(b["steps"].get<int>(), 2);
        EXPECT_EQ(b["steps_simulated"].get<int>(), 1);
        EXPECT_EQ(b["cycles"], a["cycles"]);
        EXPECT_EQ(b["bound"], a["bound"]);
      }
  EXPECT_EQ(compared, 3);  // ln2 in the layer, swiglu, the norm between the layers
}

// A two-wafer plan (wide_llama: 8 layers over two of tiny-cluster's wafers): the second wafer's
// prefill runs timing-only without the embedding; functionally it is an input error, as the
// prompt's residual stream from the first wafer is not simulated.
models::ModelSpec wide_llama() {
  return models::load_model_text(
             "name: wide-llama\ndtype: bf16\nbatch: 1\nsequence: 64\ntransformer:\n  d_model: 128\n  heads: 8\n"
             "  kv_heads: 2\n  d_ff: 384\n  layers: 8\n  vocabulary: 256\n  activation: swiglu\n  norm: rmsnorm\n"
             "  positions: rotary\n  bias: false\n",
             "wide-llama.yaml")
      .spec;
}

TEST(MeshPrefill, AWaferWithoutTheEmbeddingRunsTimingOnly) {
  const auto platform = platforms::load_platform("tiny-cluster");
  platforms::inference::MeshTokenOptions o;
  o.prefill = o.position = 5;
  o.wafer = 1;
  sim::stats::Group root("");
  platforms::BuildOptions build;
  build.timing_only = true;
  platforms::inference::MeshTokenSimulation s(platform.spec, wide_llama(), o, build, root);
  ASSERT_EQ(s.plan().wafers.size(), 2u);
  const auto t = s.run();
  std::map<std::string, std::uint64_t> steps;
  for (const auto& k : t.runs[0].prefill_kernels) steps[k.kernel + "/" + mesh::to_string(k.per)] = k.steps;
  const std::map<std::string, std::uint64_t> want{
      {"rmsnorm/wafer", 1},   {"block/wafer", 1},         {"block/layer", 1},       {"unblock/layer", 1},
      {"attention/layer", 1}, {"swiglu_blocks/layer", 1}, {"norm_blocks/layer", 1}, {"norm_blocks/between layers", 1},
      {"output/wafer", 1}};  // one attention group of all 5 tokens
  EXPECT_EQ(steps, want);
  o.check = true;
  sim::stats::Group root2("");
  try {
    platforms::inference::MeshTokenSimulation f(platform.spec, wide_llama(), o, {}, root2);
    ADD_FAILURE() << "a functional prefill on the wafer without the embedding";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("wafer 1 does not"), std::string::npos) << e.what();
  }
}

TEST(MeshPrefill, ARegionMoreThanTwiceAsLongAsWideIsAnInputError) {
  const auto platform = platforms::load_platform("tiny");
  platforms::inference::MeshTokenOptions o;
  o.prefill = o.position = 4;
  o.rows = 5;
  o.columns = 2;
  sim::stats::Group root("");
  platforms::BuildOptions build;
  build.timing_only = true;
  EXPECT_THROW(platforms::inference::MeshTokenSimulation(platform.spec, tiny_llama(), o, build, root), sim::InputError);
}

}  // namespace
}  // namespace wafersim::test::mesh_prefill_test
