// The prefill's causal attention over a group of consecutive prompt tokens (docs/compiler.md,
// "Prefill"): the decode's attention (kernel_attention.cpp) for every token of the group at
// once, with the group's q/k/v moved out of q/k/v's blocks and its attention outputs into o's
// blocks in one step each. Every value is the decode's, bit for bit:
//   - the token-by-token kernel runs a score's FMAC chain over a PE's dimensions in order, a
//     softmax's max and sum over its positions in order, a weighted value's chain over its
//     positions in order; here each chain is the same, its operations issued as vectors over
//     the group's tokens (one element a token) instead of over the positions;
//   - a token sees the positions cached before the group's and the group's up to its own: a
//     later one's score is set to -inf at the softmax, whose exp is exactly +0, which adds
//     nothing to the sum or to a weighted value (those positions are a PE's last slots, after
//     every position it does see).

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "hw/numerics/softfloat.h"
#include "models/compiler/compiled_model.h"
#include "models/compiler/program_builder.h"
#include "models/mesh/kernel_common.h"
#include "models/mesh/kernels.h"
#include "models/mesh/prefill_group.h"

namespace wafersim::models::mesh {
using compiler::ProgramBuilder;
using compiler::VectorOptions;
using compiler::VOperand;
using hw::DType;
using hw::isa::Op;

namespace {

// The most (token, query head) pairs of a group one row's softmax takes (the shortest
// segment's share).
std::uint64_t largest_share(const MeshLayout& l, std::uint64_t group) {
  std::uint64_t R = l.region().rows;
  for (const LineTree& tree : l.segments().trees) R = std::min<std::uint64_t>(R, tree.length);
  return (group * l.shape().group_heads() + R - 1) / R;
}

// Bytes of the group's buffers for `group` tokens, in GroupAddrs' order (sums, qkv, scores,
// mx, sum, rcp, att). The softmax's statistics are a row's share's; mx also holds the input
// norm's sums of squares, one a token.
std::array<std::uint64_t, 7> group_bytes(const MeshLayout& l, PromptChunk chunk, std::uint32_t group) {
  const std::uint64_t g = group, e = l.esize();
  const std::uint64_t scores = l.shape().group_heads() * l.slots(0, chunk.end()), share = largest_share(l, g);
  const std::uint64_t kc = l.kc_max;  // the wafer's input: x, its fp32 sums and xn
  return {g * std::max<std::uint64_t>({l.nqkv_max, scores, l.nq_max, kc, 1}) * 4,
          g * std::max<std::uint64_t>(l.nqkv_max, kc) * e,
          g * std::max<std::uint64_t>(scores, 1) * 4,
          std::max(g, share) * 4,
          share * 4,
          share * 4,
          g * std::max<std::uint64_t>(l.nq_max, kc) * e};
}

// The buffers free while the groups' steps run: the decode's activations (the decode's own
// token comes after the prefill, the wafer's output after the last product) but for what
// MeshGEMM's buffers take of its logits, q/k/v's other partial-sum block and an input block of
// MeshGEMM (neither holds anything before q/k/v's product or after it), and the SRAM after
// MeshGEMM's buffers.
using Spans = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
Spans free_spans(const MeshLayout& l, PromptChunk chunk, std::uint32_t sram_bytes) {
  const std::uint32_t N = l.gemm_n();
  const Addrs& d = l.addrs();
  const GemmAddrs qkv = gemm_addrs(l, Gemv::Qkv, chunk.tokens, l.align());
  Spans free;
  if (qkv.in_logits)
    free = {{d.end - d.activations, d.logits}, {d.logits + qkv.in_logits, d.end}};
  else
    free = {{d.end - d.activations, d.end}};
  free.insert(free.end(), {{qkv.x[1], qkv.x[1] + qkv.x_bytes},
                           {qkv.acc[N % 2], qkv.acc[N % 2] + qkv.acc_bytes},
                           {qkv.end, std::max(qkv.end, sram_bytes)}});
  return free;
}

// The group's buffers first-fit, largest first, into `free`.
std::optional<GroupAddrs> place(const MeshLayout& l, PromptChunk chunk, std::uint32_t group, Spans free) {
  const std::uint32_t align = l.align();
  const auto bytes = group_bytes(l, chunk, group);
  std::array<std::size_t, 7> order{0, 1, 2, 3, 4, 5, 6};
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bytes[a] > bytes[b]; });
  std::array<std::uint32_t, 7> at{};
  for (std::size_t i : order) {
    const std::uint64_t need = (bytes[i] + align - 1) / align * align;
    bool placed = false;
    for (auto& [lo, hi] : free) {
      const std::uint32_t base = (lo + align - 1) / align * align;
      if (base <= hi && hi - base >= need) {
        at[i] = base;
        lo = static_cast<std::uint32_t>(base + need);
        placed = true;
        break;
      }
    }
    if (!placed) return std::nullopt;
  }
  GroupAddrs a;
  a.group = group;
  a.slots = l.slots(0, chunk.end());
  a.sums = at[0];
  a.qkv = at[1];
  a.scores = at[2];
  a.mx = at[3];
  a.sum = at[4];
  a.rcp = at[5];
  a.att = at[6];
  return a;
}

}  // namespace

GroupAddrs group_addrs(const MeshLayout& l, PromptChunk chunk, std::uint32_t group, std::uint32_t sram_bytes) {
  if (group == 0) throw std::logic_error("group_addrs: a group of at least one token");
  const auto a = place(l, chunk, group, free_spans(l, chunk, sram_bytes));
  if (!a) throw std::logic_error(fmt::format("group_addrs: a group of {} tokens does not fit", group));
  return *a;
}

std::uint32_t prefill_group(const MeshLayout& l, PromptChunk chunk, std::uint32_t sram_bytes, std::uint32_t most) {
  if (most == 0) throw std::logic_error("prefill_group: a group of at least one token");
  auto g = static_cast<std::uint32_t>(std::min<std::uint64_t>(most, chunk.tokens));
  const Spans free = free_spans(l, chunk, sram_bytes);
  while (g > 1 && !place(l, chunk, g, free)) --g;
  return std::max(g, 1u);
}

PrefillGroup prefill_group_of(const MeshLayout& l, std::uint32_t sram_bytes, PromptChunk chunk, std::uint32_t group,
                              std::uint64_t first, std::uint32_t count, const char* what) {
  if (count == 0 || count > group || first < chunk.base || first + count > chunk.end())
    throw std::logic_error(fmt::format("{}: a group of 1 to `group` prompt tokens", what));
  PrefillGroup g;
  g.ga = group_addrs(l, chunk, group, sram_bytes);
  g.chunk = chunk;
  g.first = first;
  g.count = count;
  g.N = l.gemm_n();
  g.T = gemm_addrs(l, Gemv::Qkv, chunk.tokens, l.align()).block;
  return g;
}

std::pair<std::uint32_t, std::uint32_t> PrefillGroup::in_block(std::uint64_t j) const {
  const std::uint64_t b0 = chunk.base + j * T, b1 = b0 + T;
  const std::uint64_t lo = std::max(b0, first), hi = std::min(b1, first + count);
  if (lo >= hi) return {0, 0};
  return {static_cast<std::uint32_t>(lo - first), static_cast<std::uint32_t>(hi - first)};
}

std::uint64_t held_block(const MeshLayout& l, std::uint32_t r, std::uint32_t c) {
  const std::uint32_t N = l.gemm_n();
  if (!l.row_ring().sends(c)) return N;
  return (l.column_ring().position(r) + l.row_ring().position(c) + N - 1) % N;
}

std::uint64_t start_block(const MeshLayout& l, std::uint32_t r, std::uint32_t c) {
  return (l.column_ring().position(r) + l.row_ring().position(c)) % l.gemm_n();
}

namespace {

// The group's positions cached on column c: (slot, index in the group).
std::vector<std::pair<std::uint32_t, std::uint32_t>> appended(const MeshLayout& l, const PrefillGroup& g,
                                                              std::uint32_t c) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> v;
  const std::uint32_t C = l.region().columns;
  std::uint64_t p = g.first + (c + C - g.first % C) % C;
  for (; p < g.first + g.count; p += C)
    v.emplace_back(static_cast<std::uint32_t>(p / C), static_cast<std::uint32_t>(p - g.first));
  return v;
}

}  // namespace

MeshStep qkv_unblock_group_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, PromptChunk chunk,
                                std::uint32_t group, std::uint64_t first, std::uint32_t count, bool code) {
  const PrefillGroup g = prefill_group_of(l, t.sram_bytes(), chunk, group, first, count, "qkv_unblock_group_step");
  const GemmAddrs a = gemm_addrs(l, Gemv::Qkv, chunk.tokens, l.align());
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const LineFamily& f = l.rows();
  MeshStep step;
  step.layer = layer;
  step.name = fmt::format("prefill.h{}.qkv.unblock", layer);
  step.kernel = "unblock";
  build_programs_by_pe(
      step, l.region().rows, l.region().columns,
      [&](std::uint32_t r, std::uint32_t c) {
        const auto [lo, hi] = g.in_block(held_block(l, r, c));
        return fmt::format("n{}|{}-{}|{}", gemm_outputs(l, Gemv::Qkv, r, c), lo, hi, role_key(f.role(c)));
      },
      [&](std::uint32_t r, std::uint32_t c) {
        const std::uint32_t n = gemm_outputs(l, Gemv::Qkv, r, c);
        const LineRole role = f.role(c);
        ProgramBuilder b(fmt::format("{}[{},{}]", step.name, r, c));
        b.entry(b.task("main"));
        if (!n) {
          b.ret();
          return b.finish();
        }
        const std::uint64_t j = held_block(l, r, c);
        const auto [lo, hi] = g.in_block(j);
        b.movf(14, DType::F32, 0x80000000u);  // -0: adds nothing
        auto zeros = [&](std::uint32_t from, std::uint32_t to, const char* tag) {
          if (from < to)
            b.vop(Op::FMov, DType::F32, DType::F32,
                  VOperand::d(b.mem(tag, DType::F32, g.ga.sums + from * n * 4, (to - from) * n)), VOperand::r(14));
        };
        zeros(0, lo, "none_before");
        for (std::uint32_t k = lo; k < hi; ++k) {
          const std::uint64_t row = g.row(k);
          b.vop(Op::FMov, DType::F32, DType::F32,
                VOperand::d(b.mem(fmt::format("sel{}", k), DType::F32, g.ga.sums + k * n * 4, n)),
                VOperand::d(b.mem(fmt::format("out{}", k), DType::F32,
                                  a.acc[(g.N - 1) % 2] + static_cast<std::uint32_t>(row) * a.nmax * 4, n)));
        }
        zeros(std::max(lo, hi), count, "none_after");
        // The decode's finish of q/k/v: rounded once.
        emit_reduce_round_broadcast(b, f, role, g.ga.sums, g.ga.qkv, count * n, dt, "qkv", "bc");
        b.ret();
        return b.finish();
      },
      code);
  std::uint64_t latency = 0;
  const std::uint64_t n = std::uint64_t{count} * l.nqkv_max;
  add_vector(step.work, t, n, 4, 1, t.lanes(DType::F32));
  add_allreduce(step.work, latency, f, n, t);
  add_vector(step.work, t, n, 4, 1, t.lanes(dt));
  step.bound = bound_of(step.work, latency, t);
  return step;
}

MeshStep block_group_step(const MeshLayout& l, const compiler::Target& t, Gemv gemv, std::uint32_t layer,
                          PromptChunk chunk, std::uint32_t group, std::uint64_t first, std::uint32_t count, bool code) {
  const PrefillGroup g = prefill_group_of(l, t.sram_bytes(), chunk, group, first, count, "block_group_step");
  const GemmAddrs a = gemm_addrs(l, gemv, chunk.tokens, l.align());
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const std::uint32_t e = l.esize();
  const bool keep = gemv == Gemv::Qkv;  // the residual stream x, kept beside q/k/v's inputs
  MeshStep step;
  step.layer = layer;
  step.name = fmt::format("prefill.h{}.{}.block", layer, to_string(gemv));
  step.kernel = "block";
  build_programs_by_pe(
      step, l.region().rows, l.region().columns,
      [&](std::uint32_t r, std::uint32_t c) {
        const auto [lo, hi] = g.in_block(start_block(l, r, c));
        return lo < hi ? fmt::format("k{}|{}-{}|{}", gemm_inputs(l, gemv, r, c), lo, hi, g.row(lo)) : std::string("-");
      },
      [&](std::uint32_t r, std::uint32_t c) {
        ProgramBuilder b(fmt::format("{}[{},{}]", step.name, r, c));
        b.entry(b.task("main"));
        const auto [lo, hi] = g.in_block(start_block(l, r, c));
        const std::uint32_t k = gemm_inputs(l, gemv, r, c);
        if (lo < hi) b.movf(15, DType::F32, 0);
        for (std::uint32_t i = lo; i < hi; ++i) {
          const auto t_row = g.row(i);
          const std::uint32_t row = a.x[0] + t_row * a.kmax * e;
          if (k) {
            b.vop(Op::FMov, dt, dt, VOperand::d(b.mem(fmt::format("x{}", i), dt, row, k)),
                  VOperand::d(b.mem(fmt::format("in{}", i), dt, g.ga.att + i * k * e, k)));
            if (keep)
              b.vop(Op::FMov, dt, dt,
                    VOperand::d(b.mem(fmt::format("res{}", i), dt, a.residual + t_row * l.kc_max * e, k)),
                    VOperand::d(b.mem(fmt::format("stream{}", i), dt, g.ga.qkv + i * k * e, k)));
          }
          if (k < a.kmax)  // zeros beyond its own inputs, as the busiest PE's count is taken
            b.vop(Op::FMov, dt, dt, VOperand::d(b.mem(fmt::format("pad{}", i), dt, row + k * e, a.kmax - k)),
                  VOperand::r(15));
        }
        b.ret();
        return b.finish();
      },
      code);
  add_vector(step.work, t, std::uint64_t{g.T} * a.kmax, e, 1, t.lanes(dt));
  if (keep) add_vector(step.work, t, std::uint64_t{g.T} * l.kc_max, e, 1, t.lanes(dt));
  step.bound = bound_of(step.work, 0, t);
  return step;
}

namespace {

struct GroupPe {
  std::uint32_t nd = 0, S = 0;  // its dimensions, its cached positions up to the group's last
  std::vector<std::pair<std::uint32_t, std::uint32_t>> added;  // the group's positions on its column
};

// Elements (k, i, s) of a [count x hq x S] fp32 buffer for one slot s: count x hq of them, S apart.
unsigned at_slot(ProgramBuilder& b, const std::string& name, std::uint32_t buf, std::uint32_t n, std::uint32_t S,
                 std::uint32_t s) {
  return b.mem(name, DType::F32, buf + s * 4, n, static_cast<std::int32_t>(S));
}

// On every row, for the pairs (token, query head) [plo, phi) of the row's share: the scores
// (scaled, the positions after a token's own at -inf), their softmax over every position of
// the row (max and sum allreduced along it), into the probabilities at the scores buffer.
// Every pair takes the same operations in the same order wherever it is computed.
void group_softmax(ProgramBuilder& b, const MeshLayout& l, const PrefillGroup& g, const GroupPe& pe,
                   const LineRole& row_role, std::uint32_t plo, std::uint32_t phi) {
  const GroupAddrs& ga = g.ga;
  const std::uint32_t hq = static_cast<std::uint32_t>(l.shape().group_heads()), S = pe.S, n = phi - plo;
  if (!n) return;
  const std::uint32_t scale =
      hw::numerics::from_double(DType::F32, 1.0 / std::sqrt(static_cast<double>(l.shape().head_dim)));
  const std::uint32_t scores = ga.scores + plo * S * 4;
  const unsigned mx = b.mem("smax", DType::F32, ga.mx, n), sum = b.mem("ssum", DType::F32, ga.sum, n);
  if (S) {
    b.movf(12, DType::F32, scale);
    b.vop(Op::FMul, DType::F32, DType::F32, VOperand::d(b.mem("scores", DType::F32, scores, n * S)),
          VOperand::d(b.mem("raw", DType::F32, ga.sums + plo * S * 4, n * S)), VOperand::r(12));
    for (const auto& [slot, k] : pe.added) {  // tokens before the k-th do not see its position
      const std::uint32_t hi = std::min(phi, k * hq);
      if (hi > plo)
        b.vop(Op::FMov, DType::F32, DType::F32,
              VOperand::d(at_slot(b, fmt::format("mask{}", k), scores, hi - plo, S, slot)), VOperand::r(13));
    }
  }
  b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(mx), VOperand::r(13));
  for (std::uint32_t s = 0; s < S; ++s)
    b.vop(Op::FMax, DType::F32, DType::F32, VOperand::d(mx), VOperand::d(mx),
          VOperand::d(at_slot(b, fmt::format("m{}", s), scores, n, S, s)));
  emit_allreduce(b, l.rows(), row_role, ga.mx, n, Op::FMax, "max");
  const unsigned all = b.mem("e", DType::F32, scores, n * S);
  for (std::uint32_t s = 0; s < S; ++s) {
    const unsigned es = at_slot(b, fmt::format("d{}", s), scores, n, S, s);
    b.vop(Op::FSub, DType::F32, DType::F32, VOperand::d(es), VOperand::d(es), VOperand::d(mx));
  }
  if (S) b.vop(Op::FExp, DType::F32, DType::F32, VOperand::d(all), VOperand::d(all));
  b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(sum), VOperand::r(15));
  for (std::uint32_t s = 0; s < S; ++s)
    b.vop(Op::FAdd, DType::F32, DType::F32, VOperand::d(sum), VOperand::d(sum),
          VOperand::d(at_slot(b, fmt::format("l{}", s), scores, n, S, s)));
  emit_allreduce(b, l.rows(), row_role, ga.sum, n, Op::FAdd, "sum");
  if (!S) return;
  const unsigned rcp = b.mem("rcp", DType::F32, ga.rcp, n);
  b.vop(Op::FRecip, DType::F32, DType::F32, VOperand::d(rcp), VOperand::d(sum));
  for (std::uint32_t s = 0; s < S; ++s) {
    const unsigned ps = at_slot(b, fmt::format("p{}", s), scores, n, S, s);
    b.vop(Op::FMul, DType::F32, DType::F32, VOperand::d(ps), VOperand::d(ps), VOperand::d(rcp));
  }
}

// The group's keys and values into the cache, then every token's partial scores: for each
// query head i and slot s, the chain over the PE's dimensions d in order, one element a token.
void group_scores(ProgramBuilder& b, const MeshLayout& l, std::uint32_t layer, const PrefillGroup& g, const GroupPe& pe,
                  std::uint8_t then) {
  const GroupAddrs& ga = g.ga;
  const LayerAddrs& la = l.addrs().layers[layer];
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const std::uint32_t e = l.esize(), hq = static_cast<std::uint32_t>(l.shape().group_heads());
  const std::uint32_t nd = pe.nd, S = pe.S, smax = l.slots_max, nq = hq * nd, n = nq + 2 * nd;
  if (nd)
    for (const auto& [slot, k] : pe.added) {
      const std::uint32_t row = ga.qkv + k * n * e;
      b.vop(Op::FMov, dt, dt,
            VOperand::d(b.mem(fmt::format("k_new{}", k), dt, la.kc + slot * e, nd, static_cast<std::int32_t>(smax))),
            VOperand::d(b.mem(fmt::format("k{}", k), dt, row + nq * e, nd)));
      b.vop(Op::FCvt, DType::F32, dt,
            VOperand::d(
                b.mem(fmt::format("v_new{}", k), DType::F32, la.vc + slot * 4, nd, static_cast<std::int32_t>(smax))),
            VOperand::d(b.mem(fmt::format("v{}", k), dt, row + (nq + nd) * e, nd)));
    }
  const std::uint32_t cnt = g.count * hq * S;
  if (!S || !nd) {
    if (S)
      b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(b.mem("part", DType::F32, ga.sums, cnt)), VOperand::r(14));
    b.activate(then);
    return;
  }
  b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(b.mem("part", DType::F32, ga.sums, cnt)), VOperand::r(15));
  std::vector<unsigned> q(nq);  // q (head i, dimension d) of every token
  for (std::uint32_t k = 0; k < nq; ++k)
    q[k] = b.mem(fmt::format("q{}", k), dt, ga.qkv + k * e, g.count, static_cast<std::int32_t>(n));
  for (std::uint32_t i = 0; i < hq; ++i)
    for (std::uint32_t s = 0; s < S; ++s) {
      const unsigned part = b.mem(fmt::format("part{}_{}", i, s), DType::F32, ga.sums + (i * S + s) * 4, g.count,
                                  static_cast<std::int32_t>(hq * S));
      for (std::uint32_t d = 0; d < nd; ++d) {
        b.ld(1, la.kc + (d * smax + s) * e, e);
        VectorOptions o;
        o.async = true;
        o.ut = 0;
        if (i + 1 == hq && s + 1 == S && d + 1 == nd) {
          o.on_done = hw::isa::OnDone::Activate;
          o.task = then;
        }
        b.vop(Op::FMac, DType::F32, dt, VOperand::d(part), VOperand::d(part), VOperand::d(q[i * nd + d]),
              VOperand::r(1), o);
      }
    }
}

// Every token's weighted values: for each output (i, d), the chain over the PE's slots in
// order; then reduced along the row, rounded at its root and broadcast.
void group_values(ProgramBuilder& b, const MeshLayout& l, std::uint32_t layer, const PrefillGroup& g, const GroupPe& pe,
                  const LineRole& row_role) {
  const GroupAddrs& ga = g.ga;
  const LayerAddrs& la = l.addrs().layers[layer];
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const std::uint32_t hq = static_cast<std::uint32_t>(l.shape().group_heads());
  const std::uint32_t nd = pe.nd, S = pe.S, smax = l.slots_max, nq = hq * nd;
  if (!nq) return;
  const unsigned out = b.mem("out", DType::F32, ga.sums, g.count * nq);
  b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(out), VOperand::r(S ? 15 : 14));
  for (std::uint32_t i = 0; i < hq; ++i)
    for (std::uint32_t d = 0; d < nd; ++d) {
      const unsigned o = b.mem(fmt::format("o{}_{}", i, d), DType::F32, ga.sums + (i * nd + d) * 4, g.count,
                               static_cast<std::int32_t>(nq));
      for (std::uint32_t s = 0; s < S; ++s) {
        b.ld(1, la.vc + (d * smax + s) * 4);
        b.vop(Op::FMac, DType::F32, DType::F32, VOperand::d(o), VOperand::d(o),
              VOperand::d(b.mem(fmt::format("pv{}_{}_{}", i, d, s), DType::F32, ga.scores + (i * S + s) * 4, g.count,
                                static_cast<std::int32_t>(hq * S))),
              VOperand::r(1));
      }
    }
  emit_reduce_round_broadcast(b, l.rows(), row_role, ga.sums, ga.att, g.count * nq, dt, "pv", "att");
}

}  // namespace

MeshStep attention_group_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, PromptChunk chunk,
                              std::uint32_t group, std::uint64_t first, std::uint32_t count, bool code) {
  const PrefillGroup g = prefill_group_of(l, t.sram_bytes(), chunk, group, first, count, "attention_group_step");
  if (first + count >= l.shape().capacity)
    throw std::logic_error("attention_group_step: a position beyond the KV cache's capacity");
  const std::uint64_t last = first + count - 1;
  MeshStep step;
  step.layer = layer;
  step.name = fmt::format("prefill.h{}.attn", layer);
  step.kernel = "attention";
  const auto pairs = static_cast<std::uint32_t>(count * l.shape().group_heads());
  auto pe_of = [&](std::uint32_t r, std::uint32_t c) {
    GroupPe p;
    p.nd = static_cast<std::uint32_t>(l.row_dims(r).size());
    p.S = l.slots(c, last + 1);
    p.added = appended(l, g, c);
    return p;
  };
  build_programs(
      step, l.region().rows, l.region().columns,
      [&](std::uint32_t r) {
        return fmt::format("d{}{}|{}", l.row_dims(r).size(), role_key(l.segments().role(r)),
                           gather_plan(l.segments(), r, pairs).key());
      },
      [&](std::uint32_t c) {
        std::string key = fmt::format("s{}{}", l.slots(c, last + 1), role_key(l.rows().role(c)));
        for (const auto& [slot, k] : appended(l, g, c)) key += fmt::format("|{}@{}", k, slot);
        return key;
      },
      [&](std::uint32_t r, std::uint32_t c) {
        const GroupPe pe = pe_of(r, c);
        const LineRole seg_role = l.segments().role(r), row_role = l.rows().role(c);
        const std::uint32_t hq = static_cast<std::uint32_t>(l.shape().group_heads());
        ProgramBuilder b(fmt::format("{}[{},{}]", step.name, r, c));
        b.entry(b.task("main"));
        const std::uint8_t scores = b.declare_task("scores"), values = b.declare_task("values");
        b.movf(15, DType::F32, 0);            // +0
        b.movf(14, DType::F32, 0x80000000u);  // -0: adds nothing
        b.movf(13, DType::F32, 0xFF800000u);  // -inf
        group_scores(b, l, layer, g, pe, scores);
        b.ret();
        b.start(scores);
        // The scores are allreduced down the segment; each row takes the softmax of its share
        // of the pairs, gathered to the segment's root, which broadcasts them all.
        const std::uint32_t n = g.count * hq * pe.S;
        if (n) emit_allreduce(b, l.segments(), seg_role, g.ga.sums, n, Op::FAdd, "qk");
        const GatherPlan share = gather_plan(l.segments(), r, pairs);
        group_softmax(b, l, g, pe, row_role, share.lo, share.hi);
        if (n) {
          emit_gather(b, l.segments(), r, g.ga.scores, pairs, pe.S, values, 1, "pg");
        } else {
          b.activate(values);
          b.ret();
        }
        b.start(values);
        if (n) emit_broadcast(b, l.segments(), seg_role, g.ga.scores, n, DType::F32, "p");
        group_values(b, l, layer, g, pe, row_role);
        b.ret();
        return b.finish();
      },
      code);
  const std::uint64_t hq = l.shape().group_heads(), S = l.slots(0, last + 1), nd = l.nd_max, G = count;
  const std::uint32_t lanes = t.lanes(DType::F32);
  std::uint64_t latency = 0;
  compiler::Work& w = step.work;
  add_fmacs(w, t, hq * nd * S, G);
  add_allreduce(w, latency, l.segments(), G * hq * S, t);
  if (S && l.segments().max_hops()) {  // the probabilities' broadcast from the segment's root
    w.ramp_in += G * hq * S;
    latency += std::uint64_t{l.segments().max_hops()} * t.fabric.hop_latency.count() + G * hq * S - 1;
  }
  // The softmax of the largest share of the pairs (the shortest segment's).
  std::uint32_t R = l.region().rows;
  for (const LineTree& tree : l.segments().trees) R = std::min(R, tree.length);
  const std::uint64_t share = (G * hq + R - 1) / R;
  add_vector(w, t, share * S, 4, 1, lanes);  // scale
  for (std::uint64_t s = 0; s < S; ++s) {
    add_vector(w, t, share, 4, 2, lanes);  // max
    add_vector(w, t, share, 4, 2, lanes);  // subtract
    add_vector(w, t, share, 4, 2, lanes);  // sum
    add_vector(w, t, share, 4, 2, lanes);  // times 1 / sum
  }
  add_vector(w, t, share * S, 4, 1, 1, static_cast<std::uint32_t>(t.wafer.pe.latency.exp.count()));
  add_vector(w, t, share, 4, 1, 1, static_cast<std::uint32_t>(t.wafer.pe.latency.recip.count()));
  for (std::uint64_t k = 0; k < hq * nd * S; ++k) add_vector(w, t, G, 4, 2, lanes);  // weighted values
  add_allreduce(w, latency, l.rows(), share, t);
  add_allreduce(w, latency, l.rows(), share, t);
  add_allreduce(w, latency, l.rows(), G * hq * nd, t);
  for (std::uint64_t p = first; p <= last; ++p)
    step.work.flops += 4 * l.shape().heads * (p + 1) * l.shape().head_dim + 5 * l.shape().heads * (p + 1);
  step.bound = bound_of(w, latency, t);
  return step;
}

}  // namespace wafersim::models::mesh
