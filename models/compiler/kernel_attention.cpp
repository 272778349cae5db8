// Causal attention (multi-head and grouped-query) in the weight-streaming placement:
// docs/compiler.md, "Attention". A row holds whole key/value head groups (a Heads feature
// map), so a query's dot products never leave its PE; or, with fewer key/value heads than
// rows (a HeadParts map), some dimensions of every head of one group, and each dot product
// is one fp32 chain down the group's rows in dimension order: every row continues the
// partial scores it receives from the row above, the group's last row takes the softmax and
// sends the probabilities back up the column. Keys and values travel east along the
// row: each column receives those of its sample's earlier tokens from its west neighbour,
// appends its own and passes on what the next column needs. Each query is then computed in
// the reference's order (models/reference attention), so results match it bit for bit.
// Backward, the query's owner recomputes its probabilities, forms dP, dS and dq, and sends
// records (q, dout, P and dS rows, in fp32) west along the row, so that each key's owner forms
// dk and dv as one chain over the group's heads and then the queries, as the reference does.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>

#include "hw/numerics/softfloat.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "sim/errors.h"

namespace wafersim::models::compiler {
using hw::DType;
using hw::isa::Cond;
using hw::isa::Op;
using V = VOperand;

namespace {

// Token geometry of the columns: which earlier tokens of its sample a column needs (its
// window, from the sample start of its first token to its last token; without the causal
// mask up to the end of the sample of its last token) and which later ones (up to that end).
// Backward records are kept for the column's own and later queries (without the mask, for
// every query of its window), by position from `rec_first`.
struct Columns {
  std::uint64_t S = 0, t = 0;
  std::uint32_t C = 0;
  bool causal = true;
  [[nodiscard]] std::uint64_t first(std::uint32_t x) const { return std::uint64_t{x} * t; }
  [[nodiscard]] std::uint64_t start(std::uint32_t x) const { return first(x) / S * S; }
  [[nodiscard]] std::uint64_t before(std::uint32_t x) const { return first(x) - start(x); }
  [[nodiscard]] std::uint64_t window(std::uint32_t x) const { return before(x) + t + (causal ? 0 : after(x)); }
  [[nodiscard]] std::uint64_t visible(std::uint64_t token) const { return causal ? token % S + 1 : S; }
  [[nodiscard]] std::uint64_t rec_first(std::uint32_t x) const { return causal ? first(x) : start(x); }
  [[nodiscard]] std::uint64_t end(std::uint32_t x) const { return (first(x) + t - 1) / S * S + S; }
  [[nodiscard]] std::uint64_t after(std::uint32_t x) const { return end(x) - first(x) - t; }
  [[nodiscard]] std::uint64_t max_window() const {
    std::uint64_t m = 0;
    for (std::uint32_t x = 0; x < C; ++x) m = std::max(m, window(x));
    return m;
  }
  [[nodiscard]] std::uint64_t max_records() const {
    std::uint64_t m = 0;
    for (std::uint32_t x = 0; x < C; ++x) m = std::max(m, before(x) * (causal ? 0 : 1) + t + after(x));
    return m;
  }
};

// What a row holds: key/value groups, of each of their heads the dimensions [d0, d0 + hdl),
// and its part among the rows that share the heads (one part when heads are whole on rows).
struct RowPart {
  std::vector<std::uint32_t> groups;
  std::uint64_t d0 = 0, hdl = 0;
  std::uint32_t part = 0, parts = 1;
  [[nodiscard]] bool first() const { return part == 0; }
  [[nodiscard]] bool last() const { return part + 1 == parts; }
};

RowPart row_part(const FeatureMap& m, std::uint32_t s, std::uint64_t hd) {
  RowPart r;
  if (m.kind == FeatureMap::Kind::Heads) {
    for (std::uint32_t i = 0; i < m.groups; ++i)
      if (m.slice_of_group(i) == s) r.groups.push_back(i);
    r.hdl = hd;
    return r;
  }
  const FeatureMap::Part p = m.part_of(s);
  if (p.dims.empty()) return r;
  r.groups = {p.group};
  r.d0 = p.dims.lo;
  r.hdl = p.dims.size();
  r.part = p.part;
  r.parts = p.parts;
  return r;
}

// Keys per block when the forward widens the values for P V (bounds its fp32 buffer).
constexpr std::uint64_t kValueBlock = 256;

// `count` copies of n elements: dst += dst_step, src += src_step elements after each.
void copy_loop(ProgramBuilder& b, unsigned dst, std::int64_t dst_step, unsigned src, std::int64_t src_step,
               std::uint64_t count, DType t) {
  if (count == 0) return;
  b.mov(1, static_cast<std::int64_t>(count));
  const unsigned loop = b.label();
  b.bind(loop);
  b.vop(Op::FMov, t, t, V::d(dst), V::d(src));
  if (dst_step) b.dsd(Op::DsdAdd, dst, dst_step);
  if (src_step) b.dsd(Op::DsdAdd, src, src_step);
  b.alu(Op::Sub, 1, 1, 1);
  b.branch(Cond::Ne, 1, 0, loop);
}

}  // namespace

LayerProgram lower_attention(KernelContext& ctx, const AttentionArgs& a) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices();
  const DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const bool fwd = a.phase == Phase::Forward;
  const Tensor& q = ctx.tensors.at(a.q);
  const Tensor& k = ctx.tensors.at(a.k);
  const Tensor& v = ctx.tensors.at(a.v);
  const std::uint64_t hd = a.head_dim, group = a.heads / a.kv_heads;
  const Columns geo{a.sequence, l.tokens_per_pe, l.columns, a.causal};
  const std::uint64_t S = geo.S, t = geo.t;
  const std::uint64_t Wmax = geo.max_window();
  const auto& lat = ctx.target.wafer.pe.latency;
  const std::uint64_t exp_c = lat.exp.count(), recip_c = lat.recip.count();

  LayerProgram p;
  p.layer = a.layer;
  p.kind = LayerKind::Attention;
  p.phase = a.phase;
  p.operands = fwd ? std::vector<std::uint32_t>{a.q, a.k, a.v, a.out}
                   : std::vector<std::uint32_t>{a.q, a.k, a.v, a.dout, a.dq, a.dk, a.dv};

  std::vector<RowPart> parts(G);
  std::uint64_t ck_max = 0, hl_max = 0;
  bool chains = false;
  for (std::uint32_t s = 0; s < G; ++s) {
    parts[s] = row_part(k.map, s, hd);
    ck_max = std::max<std::uint64_t>(ck_max, parts[s].groups.size() * parts[s].hdl);
    hl_max = std::max<std::uint64_t>(hl_max, parts[s].groups.size() * group);
    chains = chains || parts[s].parts > 1;
  }
  const std::uint64_t cq_max = ck_max * group;
  // Backward records of a query token, fp32 words: q, dout, then P and dS rows per local head.
  const std::uint64_t RS = 2 * cq_max + 2 * hl_max * S;
  const std::uint64_t R = geo.max_records();
  const std::uint32_t kw = ctx.scratch("keys", ck_max * Wmax * esz);
  const std::uint32_t vw = ctx.scratch("values", ck_max * Wmax * esz);
  // Forward widens the values a block of keys at a time (P V needs them in fp32).
  const std::uint64_t block = std::min<std::uint64_t>(Wmax, kValueBlock);
  const std::uint32_t v32 = fwd ? ctx.scratch("values32", block * 4) : 0;
  const std::uint32_t k32 = fwd ? 0 : ctx.scratch("keys32", ck_max * Wmax * 4);
  const std::uint32_t sc = ctx.scratch("scores", S * 4);
  const std::uint32_t dp = fwd ? 0 : ctx.scratch("dp", S * 4);
  const std::uint32_t rec = fwd ? 0 : ctx.scratch("records", R * RS * 4);
  const std::uint64_t scratch =
      ck_max * Wmax * 2 * esz + S * 4 + (fwd ? block * 4 : ck_max * Wmax * 4 + S * 4 + R * RS * 4);

  // Work of the busiest PE, counted from the program's vector passes and transfers.
  const std::uint32_t lanes = ctx.target.lanes(dt);
  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  std::uint64_t flops = 0;
  // Per column: the keys its queries see, and over its own keys the sample's queries that see
  // them (the same on every row).
  std::vector<std::uint64_t> keys_of(geo.C), seen_of(geo.C);
  for (std::uint32_t x = 0; x < geo.C; ++x)
    for (std::uint64_t i = 0; i < t; ++i) {
      keys_of[x] += geo.visible(geo.first(x) + i);
      seen_of[x] += a.causal ? S - (geo.first(x) + i) % S : S;
    }
  for (std::uint32_t s = 0; s < G; ++s) {
    const RowPart& rp = parts[s];
    const std::uint64_t ng = rp.groups.size(), ck = ng * rp.hdl, cq = ck * group, hl = ng * group;
    sram[s] = (fwd ? 2 * cq + 2 * ck : 4 * cq + 4 * ck) * t * esz + scratch;
    if (ng == 0) continue;
    const std::uint64_t chain_words = fwd ? 1 : 2;  // scores (and dP) down, P (and dS) up, per key
    for (std::uint32_t x = 0; x < geo.C; ++x) {
      Work kk;
      const std::uint64_t keys = keys_of[x], seen = seen_of[x];
      const std::uint64_t rows = hl * t;  // (head, query) pairs
      // Every instruction below is synchronous, so their steps add up. Reductions take one
      // element a step: one per key and dimension for the scores and P V (backward the
      // scores, dP and dq); fp32 vectors one per step. The group's last row adds per key
      // max, subtract, exp (iterative), sum and scale (backward c, dP - c and two products)
      // and 1/l per query; the forward widens the values, the backward forms dk and dv.
      const std::uint64_t dots = hl * keys * rp.hdl;
      kk.datapath_steps = (fwd ? 2 : 3) * dots;
      if (rp.last()) kk.datapath_steps += hl * keys * (4 + exp_c + (fwd ? 0 : 4)) + rows * recip_c;
      const std::uint64_t kv_grads = (a.dk != kScratchTensor ? 1 : 0) + (a.dv != kScratchTensor ? 1 : 0);
      kk.datapath_steps += fwd ? dots / lanes : kv_grads * ck * group * seen;
      kk.issue = hl * keys * 4 + rows * (fwd ? rp.hdl : 3 * rp.hdl);
      kk.ramp_in = 2 * ck * geo.before(x);
      kk.ramp_out = 2 * ck * (x + 1 < geo.C ? geo.before(x + 1) : 0);
      if (!a.causal) {  // keys and values of later tokens from the east
        kk.ramp_in += 2 * ck * geo.after(x);
        kk.ramp_out += 2 * ck * (x > 0 && geo.before(x) > 0 ? geo.after(x - 1) : 0);
      }
      if (!rp.first()) kk.ramp_in += hl * keys * chain_words;
      if (!rp.last()) kk.ramp_out += hl * keys * chain_words;
      if (!rp.last()) kk.ramp_in += hl * keys * chain_words;
      if (!rp.first()) kk.ramp_out += hl * keys * chain_words;
      if (!fwd) {
        kk.ramp_in += geo.after(x) * RS;
        kk.ramp_out += (x > 0 && geo.before(x) > 0 ? geo.after(x - 1) : 0) * RS;
        if (!a.causal) {  // records of earlier queries from the west, on east
          kk.ramp_in += geo.before(x) * RS;
          kk.ramp_out += (x + 1 < geo.C ? geo.before(x + 1) : 0) * RS;
        }
      }
      flops += hl * keys * rp.hdl * (fwd ? 4 : 10);
      w.datapath_steps = std::max(w.datapath_steps, kk.datapath_steps);
      w.issue = std::max(w.issue, kk.issue);
      w.ramp_in = std::max(w.ramp_in, kk.ramp_in);
      w.ramp_out = std::max(w.ramp_out, kk.ramp_out);
      w.link = std::max(w.link, std::max(kk.ramp_in, kk.ramp_out));
    }
  }
  w.flops = flops * l.groups;  // every row group alike
  finish_layer(ctx, p, sram);
  p.colors = (fwd ? 2 : 4) + (chains ? 4 : 0);  // row chains east (and west), column chains
  if (!ctx.emit) return p;

  const std::uint32_t scale = hw::numerics::from_double(DType::F32, 1.0 / std::sqrt(static_cast<double>(hd)));
  const auto Sl = static_cast<std::uint32_t>(S);
  // A program depends on its column, the row's shape (groups, dimensions, place in the
  // column chain) and the row's parity (the chain colors), not on the row itself: rows alike
  // share one (a whole WSE-2 has about 10 distinct programs per column, not 900).
  std::map<std::array<std::uint64_t, 6>, std::shared_ptr<const hw::isa::Program>> made;
  for (std::uint32_t s = 0; s < G; ++s) {
    const RowPart& rp = parts[s];
    const std::uint64_t ng = rp.groups.size(), hdn = rp.hdl, ck = ng * hdn;
    for (std::uint32_t x = 0; x < geo.C; ++x) {
      hw::isa::Placement pl;
      pl.x0 = pl.x1 = static_cast<std::uint16_t>(x);
      pl.y0 = pl.y1 = static_cast<std::uint16_t>(l.rows[s]);
      const std::array<std::uint64_t, 6> shape{x, ng, hdn, rp.first() ? 1u : 0u, rp.last() ? 1u : 0u, s % 2};
      if (const auto it = made.find(shape); it != made.end()) {
        pl.program = it->second;
        p.code.push_back(std::move(pl));
        continue;
      }
      ProgramBuilder b(fmt::format("{}.{}.r{}.c{}", a.layer, fwd ? "forward" : "backward", s, x));
      const std::uint8_t main = b.task("main");
      b.entry(main);
      if (ng == 0) {  // a row beyond its group's parts holds nothing
        b.ret();
        pl.program = made[shape] = b.finish();
        p.code.push_back(std::move(pl));
        continue;
      }
      const auto Wn = static_cast<std::uint32_t>(Wmax);
      const std::uint64_t before = geo.before(x);
      // Keys and values of the sample's earlier tokens from the west, then our own.
      const unsigned kwin = b.mem("kwin", dt, kw, std::max<std::uint32_t>(1, static_cast<std::uint32_t>(t)));
      const unsigned kown = b.mem("kown", dt, k.addr, std::max<std::uint32_t>(1, static_cast<std::uint32_t>(t)));
      if (before > 0) {
        const unsigned w_in = b.fabin("w_in", dt, ctx.colors.east[(x + 1) % 2], static_cast<std::uint32_t>(before));
        b.dsd(Op::DsdLen, kwin, static_cast<std::int64_t>(before));
        for (std::uint32_t buf : {kw, vw}) {
          b.dsd(Op::DsdBase, kwin, buf);
          copy_loop(b, kwin, Wn, w_in, 0, ck, dt);
        }
      }
      b.dsd(Op::DsdLen, kwin, static_cast<std::int64_t>(t));
      for (int kv = 0; kv < 2; ++kv) {
        b.dsd(Op::DsdBase, kwin, (kv ? vw : kw) + static_cast<std::uint32_t>(before * esz));
        b.dsd(Op::DsdBase, kown, kv ? v.addr : k.addr);
        copy_loop(b, kwin, Wn, kown, static_cast<std::int64_t>(t), ck, dt);
      }
      if (x + 1 < geo.C && geo.before(x + 1) > 0) {
        const std::uint64_t n = geo.before(x + 1), off = geo.start(x + 1) - geo.start(x);
        const unsigned e_out = b.fabout("e_out", dt, ctx.colors.east[x % 2], static_cast<std::uint32_t>(n));
        b.dsd(Op::DsdLen, kwin, static_cast<std::int64_t>(n));
        for (std::uint32_t buf : {kw, vw}) {
          b.dsd(Op::DsdBase, kwin, buf + static_cast<std::uint32_t>(off * esz));
          copy_loop(b, e_out, 0, kwin, Wn, ck, dt);
        }
      }
      if (!a.causal) {
        // Without the mask: the keys and values of the sample's later tokens from the east,
        // after our own; then those the west neighbour needs (ours first) go on to it.
        const std::uint64_t after = geo.after(x);
        if (after > 0) {
          const unsigned e_in = b.fabin("e_in", dt, ctx.colors.west[(x + 1) % 2], static_cast<std::uint32_t>(after));
          b.dsd(Op::DsdLen, kwin, static_cast<std::int64_t>(after));
          for (std::uint32_t buf : {kw, vw}) {
            b.dsd(Op::DsdBase, kwin, buf + static_cast<std::uint32_t>((before + t) * esz));
            copy_loop(b, kwin, Wn, e_in, 0, ck, dt);
          }
        }
        if (x > 0 && before > 0) {
          const std::uint64_t n = geo.after(x - 1);
          const unsigned w_out = b.fabout("w_out", dt, ctx.colors.west[x % 2], static_cast<std::uint32_t>(n));
          b.dsd(Op::DsdLen, kwin, static_cast<std::int64_t>(n));
          for (std::uint32_t buf : {kw, vw}) {
            b.dsd(Op::DsdBase, kwin, buf + static_cast<std::uint32_t>(before * esz));
            copy_loop(b, w_out, 0, kwin, Wn, ck, dt);
          }
        }
      }
      if (!fwd) {
        const unsigned kall = b.mem("kall", dt, kw, static_cast<std::uint32_t>(ck * Wmax));
        const unsigned k32all = b.mem("k32all", DType::F32, k32, static_cast<std::uint32_t>(ck * Wmax));
        b.vop(Op::FCvt, DType::F32, dt, V::d(k32all), V::d(kall));
      }
      b.movf(10, DType::F32, scale);
      const auto hdv = static_cast<std::uint32_t>(hdn);
      const unsigned qv = b.mem("qv", dt, q.addr, hdv, static_cast<std::int32_t>(t));
      const unsigned kv = b.mem("kv", dt, kw, hdv, static_cast<std::int32_t>(Wmax));
      const unsigned scd = b.mem("sc", DType::F32, sc, 1);
      const unsigned vv = b.mem("vv", DType::F32, v32, 1);
      const unsigned vraw = b.mem("vraw", dt, vw, 1);
      // Backward operands.
      const Tensor* dout = fwd ? nullptr : &ctx.tensors.at(a.dout);
      const unsigned gv = b.mem("gv", dt, fwd ? q.addr : dout->addr, hdv, static_cast<std::int32_t>(t));
      const unsigned dpd = b.mem("dp", DType::F32, fwd ? sc : dp, 1);
      const unsigned kk32 = b.mem("kk32", DType::F32, fwd ? sc : k32, 1);
      // The column chains of the group's rows: partial sums from above and on below, the
      // results from below and on above.
      const unsigned s_in = rp.first() ? 0 : b.fabin("s_in", DType::F32, ctx.colors.south[(s + 1) % 2], Sl);
      const unsigned s_out = rp.last() ? 0 : b.fabout("s_out", DType::F32, ctx.colors.south[s % 2], Sl);
      const unsigned n_in = rp.last() ? 0 : b.fabin("n_in", DType::F32, ctx.colors.north[(s + 1) % 2], Sl);
      const unsigned n_out = rp.first() ? 0 : b.fabout("n_out", DType::F32, ctx.colors.north[s % 2], Sl);
      auto addr_of = [](std::uint32_t base, std::uint64_t elem, std::uint32_t size) {
        return static_cast<std::int64_t>(base + elem * size);
      };
      // Moves n fp32 values between a buffer and a fabric descriptor.
      auto move = [&](unsigned to, unsigned from, unsigned buf_dsd, std::uint32_t buf, std::uint64_t n) {
        b.dsd(Op::DsdBase, buf_dsd, buf);
        b.dsd(Op::DsdLen, buf_dsd, static_cast<std::int64_t>(n));
        b.dsd(Op::DsdLen, to == buf_dsd ? from : to, static_cast<std::int64_t>(n));
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(to), V::d(from));
      };
      // Stores r9 (fp32) rounded to the storage format at element `elem` of a tensor, added to
      // what is there when `accumulate`.
      auto store = [&](std::uint32_t base, std::uint64_t elem, bool accumulate) {
        b.fcvt_scalar(dt, DType::F32, 9, 9);
        const auto at = static_cast<std::uint32_t>(base + elem * esz);
        if (accumulate) {
          b.ld(11, at, esz);
          b.fscalar(Op::FAdd, dt, 9, 11, 9);
        }
        b.st(at, 9, esz);
      };
      // n chained dot products of `left` (fixed) with the keys' columns of `right` into the fp32
      // buffer at `buf`: each continues the value there (from the row above) unless this is the
      // group's first row; the last row scales them when `scaled`.
      auto partial_dots = [&](unsigned left, unsigned right, std::uint32_t buf, std::uint64_t n, bool scaled) {
        b.mov(6, buf);
        b.mov(1, static_cast<std::int64_t>(n));
        const unsigned loop = b.label();
        b.bind(loop);
        if (rp.first())
          b.mov(5, 0);
        else
          b.ld(5, 0, 4, 6);
        b.reduce(Op::FDot, DType::F32, dt, 5, V::d(left), V::d(right));
        if (scaled && rp.last()) b.fscalar(Op::FMul, DType::F32, 5, 5, 10);
        b.st(0, 5, 4, 6);
        b.alu(Op::Add, 6, 6, 4);
        b.dsd(Op::DsdAdd, right, 1);
        b.alu(Op::Sub, 1, 1, 1);
        b.branch(Cond::Ne, 1, 0, loop);
      };
      const unsigned recb = b.mem("recb", DType::F32, fwd ? sc : rec, 1);
      const std::uint64_t p_at = 2 * cq_max, ds_at = 2 * cq_max + hl_max * S;  // within a record
      for (std::uint64_t lg = 0; lg < ng; ++lg)
        for (std::uint64_t hh = 0; hh < group; ++hh) {
          const std::uint64_t hloc = lg * group + hh;  // the head's index among the slice's heads
          const std::uint64_t qp = hloc * hdn;         // the head's first feature position
          for (std::uint64_t il = 0; il < t; ++il) {
            const std::uint64_t T = geo.first(x) + il, n = geo.visible(T);
            const std::uint64_t j0 = T / S * S - geo.start(x);  // first visible key in the window
            // The partial sums of the rows above.
            if (!rp.first()) {
              move(scd, s_in, scd, sc, n);
              if (!fwd) move(dpd, s_in, dpd, dp, n);
            }
            // s_j = (q . k_j) x scale for the visible keys, in key order.
            b.dsd(Op::DsdBase, qv, addr_of(q.addr, qp * t + il, esz));
            b.dsd(Op::DsdBase, kv, addr_of(kw, lg * hdn * Wmax + j0, esz));
            partial_dots(qv, kv, sc, n, true);
            // dP_j = dout . v_j (on the last row after the softmax).
            auto dp_partials = [&] {
              b.dsd(Op::DsdBase, gv, addr_of(dout->addr, qp * t + il, esz));
              b.dsd(Op::DsdBase, kv, addr_of(vw, lg * hdn * Wmax + j0, esz));
              partial_dots(gv, kv, dp, n, false);
            };
            if (!rp.last()) {
              if (!fwd) dp_partials();
              move(s_out, scd, scd, sc, n);
              if (!fwd) move(s_out, dpd, dpd, dp, n);
            } else {
              // p = exp(s - max) x 1/(sum in key order).
              b.dsd(Op::DsdBase, scd, sc);
              b.dsd(Op::DsdLen, scd, static_cast<std::int64_t>(n));
              b.movf(7, DType::F32, 0xFF800000u);
              b.reduce(Op::FRMax, DType::F32, DType::F32, 7, V::d(scd));
              b.vop(Op::FSub, DType::F32, DType::F32, V::d(scd), V::d(scd), V::r(7));
              b.vop(Op::FExp, DType::F32, DType::F32, V::d(scd), V::d(scd));
              b.mov(8, 0);
              b.reduce(Op::FSum, DType::F32, DType::F32, 8, V::d(scd));
              b.fscalar(Op::FRecip, DType::F32, 8, 8);
              b.vop(Op::FMul, DType::F32, DType::F32, V::d(scd), V::d(scd), V::r(8));
              if (!fwd) {
                dp_partials();
                // c = chain of p_j dP_j; dS_j = p_j (dP_j - c) x scale.
                b.dsd(Op::DsdBase, dpd, dp);
                b.dsd(Op::DsdLen, dpd, static_cast<std::int64_t>(n));
                b.mov(12, 0);
                b.reduce(Op::FDot, DType::F32, DType::F32, 12, V::d(scd), V::d(dpd));
                b.vop(Op::FSub, DType::F32, DType::F32, V::d(dpd), V::d(dpd), V::r(12));
                b.vop(Op::FMul, DType::F32, DType::F32, V::d(dpd), V::d(scd), V::d(dpd));
                b.vop(Op::FMul, DType::F32, DType::F32, V::d(dpd), V::d(dpd), V::r(10));
              }
            }
            // P (and dS) from the group's last row, passed on up the column.
            if (!rp.last()) {
              move(scd, n_in, scd, sc, n);
              if (!fwd) move(dpd, n_in, dpd, dp, n);
            }
            if (!rp.first()) {
              move(n_out, scd, scd, sc, n);
              if (!fwd) move(n_out, dpd, dpd, dp, n);
            }
            // (scd and dpd now cover the n keys' P and dS.)
            if (fwd) {
              // out[d] = R(chain over keys of p_j v_j[d]), the values widened a block at a time
              // (the chain goes on in r9 from block to block).
              for (std::uint64_t d = 0; d < hdn; ++d) {
                b.mov(9, 0);
                for (std::uint64_t j = 0; j < n; j += block) {
                  const std::uint64_t m = std::min(block, n - j);
                  b.dsd(Op::DsdLen, vv, static_cast<std::int64_t>(m));
                  b.dsd(Op::DsdLen, vraw, static_cast<std::int64_t>(m));
                  b.dsd(Op::DsdBase, vraw, addr_of(vw, (lg * hdn + d) * Wmax + j0 + j, esz));
                  b.vop(Op::FCvt, DType::F32, dt, V::d(vv), V::d(vraw));
                  b.dsd(Op::DsdBase, scd, addr_of(sc, j, 4));
                  b.dsd(Op::DsdLen, scd, static_cast<std::int64_t>(m));
                  b.reduce(Op::FDot, DType::F32, DType::F32, 9, V::d(scd), V::d(vv));
                }
                store(ctx.tensors.at(a.out).addr, (qp + d) * t + il, false);
              }
              continue;
            }
            // dq[d] = R(chain over keys of dS_j k_j[d]).
            b.dsd(Op::DsdLen, kk32, static_cast<std::int64_t>(n));
            for (std::uint64_t d = 0; d < hdn; ++d) {
              b.dsd(Op::DsdBase, kk32, addr_of(k32, (lg * hdn + d) * Wmax + j0, 4));
              b.mov(9, 0);
              b.reduce(Op::FDot, DType::F32, DType::F32, 9, V::d(dpd), V::d(kk32));
              if (a.dq != kScratchTensor) store(ctx.tensors.at(a.dq).addr, (qp + d) * t + il, a.accumulate_dq);
            }
            // The query's record: q and dout widened, its P and dS rows at the keys' positions
            // in the sample (positions past the query are never read).
            const std::uint64_t r0 = (geo.first(x) + il - geo.rec_first(x)) * RS;
            b.dsd(Op::DsdLen, recb, static_cast<std::int64_t>(hdn));
            b.dsd(Op::DsdBase, recb, addr_of(rec, r0 + qp, 4));
            b.dsd(Op::DsdBase, qv, addr_of(q.addr, qp * t + il, esz));
            b.vop(Op::FCvt, DType::F32, dt, V::d(recb), V::d(qv));
            b.dsd(Op::DsdBase, recb, addr_of(rec, r0 + cq_max + qp, 4));
            b.vop(Op::FCvt, DType::F32, dt, V::d(recb), V::d(gv));
            b.dsd(Op::DsdLen, recb, static_cast<std::int64_t>(n));
            b.dsd(Op::DsdBase, recb, addr_of(rec, r0 + p_at + hloc * S, 4));
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(recb), V::d(scd));
            b.dsd(Op::DsdBase, recb, addr_of(rec, r0 + ds_at + hloc * S, 4));
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(recb), V::d(dpd));
          }
        }
      if (!fwd) {
        // Records of the sample's later queries from the east; then those the west neighbour
        // needs (ours first) go on to it.
        const std::uint64_t after = geo.after(x);
        if (after > 0) {
          const unsigned r_in =
              b.fabin("r_in", DType::F32, ctx.colors.west[(x + 1) % 2], static_cast<std::uint32_t>(after * RS));
          b.dsd(Op::DsdLen, recb, static_cast<std::int64_t>(after * RS));
          b.dsd(Op::DsdBase, recb, addr_of(rec, (geo.first(x) + t - geo.rec_first(x)) * RS, 4));
          b.vop(Op::FMov, DType::F32, DType::F32, V::d(recb), V::d(r_in));
        }
        if (x > 0 && before > 0) {
          const std::uint64_t n = geo.after(x - 1);
          const unsigned r_out =
              b.fabout("r_out", DType::F32, ctx.colors.west[x % 2], static_cast<std::uint32_t>(n * RS));
          b.dsd(Op::DsdLen, recb, static_cast<std::int64_t>(n * RS));
          b.dsd(Op::DsdBase, recb, addr_of(rec, (geo.first(x) - geo.rec_first(x)) * RS, 4));
          VectorOptions o;
          o.async = true;
          b.vop(Op::FMov, DType::F32, DType::F32, V::d(r_out), V::d(recb), {}, {}, o);
        }
        if (!a.causal) {
          // Without the mask: records of the sample's earlier queries from the west, then
          // those the east neighbour needs (ending with ours) go on to it.
          if (before > 0) {
            const unsigned l_in =
                b.fabin("l_in", DType::F32, ctx.colors.east[(x + 1) % 2], static_cast<std::uint32_t>(before * RS));
            b.dsd(Op::DsdLen, recb, static_cast<std::int64_t>(before * RS));
            b.dsd(Op::DsdBase, recb, rec);
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(recb), V::d(l_in));
          }
          if (x + 1 < geo.C && geo.before(x + 1) > 0) {
            const std::uint64_t n = geo.before(x + 1), off = geo.start(x + 1) - geo.start(x);
            const unsigned l_out =
                b.fabout("l_out", DType::F32, ctx.colors.east[x % 2], static_cast<std::uint32_t>(n * RS));
            b.dsd(Op::DsdLen, recb, static_cast<std::int64_t>(n * RS));
            b.dsd(Op::DsdBase, recb, addr_of(rec, off * RS, 4));
            VectorOptions o;
            o.async = true;
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(l_out), V::d(recb), {}, {}, o);
          }
        }
        // dk[j, d] = R(chain over the group's heads, then the queries i >= j, of dS_ij q_i[d]);
        // dv the same with P and dout.
        const unsigned ra = b.mem("ra", DType::F32, rec, 1, static_cast<std::int32_t>(RS));
        const unsigned rb = b.mem("rb", DType::F32, rec, 1, static_cast<std::int32_t>(RS));
        for (std::uint64_t lg = 0; lg < ng; ++lg)
          for (std::uint64_t jl = 0; jl < t; ++jl) {
            const std::uint64_t J = geo.first(x) + jl, jpos = J % S, nq = a.causal ? S - jpos : S;
            const std::uint64_t i0 = (a.causal ? J : J - jpos) - geo.rec_first(x);  // its first query's record
            b.dsd(Op::DsdLen, ra, static_cast<std::int64_t>(nq));
            b.dsd(Op::DsdLen, rb, static_cast<std::int64_t>(nq));
            for (int which = 0; which < 2; ++which) {
              const std::uint32_t grad = which == 0 ? a.dk : a.dv;
              if (grad == kScratchTensor) continue;
              const bool acc = which == 0 ? a.accumulate_dk : a.accumulate_dv;
              for (std::uint64_t d = 0; d < hdn; ++d) {
                b.mov(9, 0);
                for (std::uint64_t hh = 0; hh < group; ++hh) {
                  const std::uint64_t hloc = lg * group + hh;
                  const std::uint64_t row = which == 0 ? ds_at : p_at, vec = which == 0 ? 0 : cq_max;
                  b.dsd(Op::DsdBase, ra, addr_of(rec, i0 * RS + row + hloc * S + jpos, 4));
                  b.dsd(Op::DsdBase, rb, addr_of(rec, i0 * RS + vec + hloc * hdn + d, 4));
                  b.reduce(Op::FDot, DType::F32, DType::F32, 9, V::d(ra), V::d(rb));
                }
                store(ctx.tensors.at(grad).addr, (lg * hdn + d) * t + jl, acc);
              }
            }
          }
      }
      b.ret();
      pl.program = made[shape] = b.finish();
      p.code.push_back(std::move(pl));
    }
  }
  return p;
}

}  // namespace wafersim::models::compiler
