// Embedding lookup in the weight-streaming placement: docs/compiler.md, "Embedding".
// Forward: each row's feature slice of the whole table streams in through its band's west
// channel and is multicast along the row; every PE keeps it for the layer and copies the row
// of each of its tokens into its block. Weight gradient: each PE adds its tokens' dy, in
// token order, into a table-slice accumulator in fp32, which runs west to east along the row
// (so the sum is the reference's scatter-add in row order) and leaves east through the band's
// anchor row. Learned positions are rows Vn .. Vn + S - 1 of the same slice (forward adds a
// token's position row to its table row; the gradient adds dy into both rows).

#include <fmt/format.h>

#include <algorithm>

#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "sim/errors.h"

namespace wafersim::models::compiler {
using hw::DType;
using hw::isa::Cond;
using hw::isa::Op;
using V = VOperand;

LayerProgram lower_embedding(KernelContext& ctx, const EmbeddingArgs& a) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe, C = l.columns;
  const DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const Tensor& ids = ctx.tensors.at(a.ids);
  const Tensor& y = ctx.tensors.at(a.fwd ? a.out : a.dy);
  const FeatureMap& map = y.map;
  const std::uint64_t cmax = map.max_count(), Vn = a.vocabulary, d = y.features;
  const bool pos = a.positions >= 0;
  const std::uint64_t S = a.sequence, Rn = Vn + (pos ? S : 0);  // rows kept: the table, then positions
  for (std::uint32_t s = 0; s < G; ++s)
    if (map.runs(s).size() > 1)
      throw sim::InputError(fmt::format("layer '{}': the embedding needs each row's features contiguous", a.layer));

  LayerProgram p;
  p.layer = a.layer;
  p.kind = LayerKind::Embedding;
  p.phase = a.fwd ? Phase::Forward : Phase::BackwardWeights;
  p.operands = {a.ids, a.fwd ? a.out : a.dy};
  // Forward: the table slice (storage format); gradient: dy in fp32 and the fp32 accumulator.
  const std::uint64_t tab_bytes = a.fwd ? Rn * cmax * esz : Rn * cmax * 4;
  const std::uint32_t tab = ctx.scratch(a.fwd ? "table" : "table_grad", tab_bytes);
  const std::uint32_t dyw = a.fwd ? 0 : ctx.scratch("dy32", cmax * t * 4);
  // With positions: the address of each token's position row (set when the program loads).
  const std::uint32_t prow_at = pos ? ctx.scratch("position_rows", std::uint64_t{t} * 4) : 0;
  const std::uint64_t scratch = tab_bytes + (a.fwd ? 0 : cmax * t * 4) + (pos ? std::uint64_t{t} * 4 : 0);

  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  const std::uint32_t lanes = ctx.target.lanes(a.fwd ? dt : DType::F32);
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t c = map.count(s);
    sram[s] = std::uint64_t{t} * 4 + c * t * esz + scratch;
    Work k;
    if (c > 0) {
      // forward: the table slice stored, a row copied per token; gradient: dy widened, a row
      // added per token, the accumulator passed on.
      k.datapath_steps = a.fwd ? (Rn * c + lanes - 1) / lanes + t * ((c + lanes - 1) / lanes)
                               : (pos ? 2 : 1) * t * ((c + lanes - 1) / lanes);
      k.ramp_in = a.fwd ? Rn * c : 0;
      k.issue = 6 * std::uint64_t{t};
    }
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.issue = std::max(w.issue, k.issue);
    w.link = std::max(w.link, C > 1 ? Rn * c : 0);
  }
  for (const auto& b : l.bands) {
    std::uint64_t e = 0;
    for (std::uint32_t s : b.slices) e += Rn * map.count(s);
    w.edge = std::max(w.edge, e);
    (a.fwd ? w.wavelets_in : w.wavelets_out) += e;
  }
  w.flops = a.fwd ? (pos ? l.tokens * d : 0) : l.tokens * d * (pos ? 2 : 1);  // the adds
  finish_layer(ctx, p, sram);
  p.colors = a.fwd ? static_cast<std::uint32_t>(ctx.colors.weight.size()) : 7;
  if (!ctx.emit) return p;

  for (const auto& b : l.bands) {
    EdgeStream st;
    st.side = a.fwd ? fabric::EdgeSide::West : fabric::EdgeSide::East;
    st.channel = b.channel;
    st.into_wafer = a.fwd;
    st.dtype = a.fwd ? dt : DType::F32;
    st.accumulate = !a.fwd;
    auto add = [&](std::uint32_t s) {
      for (const Span& r : map.runs(s)) {
        st.segments.push_back({a.table, r.lo, Vn, r.size(), static_cast<std::int64_t>(d), 1});
        if (pos)
          st.segments.push_back(
              {static_cast<std::uint32_t>(a.positions), r.lo, S, r.size(), static_cast<std::int64_t>(d), 1});
      }
    };
    if (a.fwd) {
      for (std::uint32_t s : b.slices) {
        st.color = ctx.colors.weight[l.position_of[s]];
        st.segments.clear();
        add(s);
        if (st.wavelets()) p.streams.push_back(st);
      }
      continue;
    }
    st.color = ctx.colors.out;  // the anchor's slice, then those above (nearest first), then below
    add(b.anchor);
    for (std::uint32_t s = b.anchor; s-- > b.slices.front();) add(s);
    for (std::uint32_t s = b.anchor + 1; s <= b.slices.back(); ++s) add(s);
    if (st.wavelets()) p.streams.push_back(std::move(st));
  }

  for (std::uint32_t s = 0; s < G; ++s) {
    const auto c = static_cast<std::uint32_t>(map.count(s));
    const std::uint32_t n = static_cast<std::uint32_t>(Rn) * c;
    const Band& band = l.bands[l.band_of[s]];
    auto program_for = [&](std::uint32_t col) {
      const bool first_col = col == 0, last_col = col + 1 == C;
      ProgramBuilder b(fmt::format("{}.{}.r{}.c{}", a.layer, a.fwd ? "forward" : "weight_grad", s, col));
      const std::uint8_t main = b.task("main");
      b.entry(main);
      const std::uint32_t row_bytes = c * (a.fwd ? esz : 4);
      if (pos && c > 0) {
        std::vector<std::uint8_t> bytes;
        for (std::uint64_t i = 0; i < t; ++i) {
          const auto at = static_cast<std::uint32_t>(tab + (Vn + (std::uint64_t{col} * t + i) % S) * row_bytes);
          for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<std::uint8_t>(at >> (8 * k)));
        }
        b.data(prow_at, std::move(bytes));
      }
      if (c > 0) {
        // Register 5: token i; register 3: the byte offset of its id's row in the slice.
        auto token_loop = [&](std::uint32_t id_stride, auto&& body) {
          b.mov(5, 0);
          const unsigned tok = b.label();
          b.bind(tok);
          b.alu(Op::Shl, 6, 5, 2);
          b.ld(3, ids.addr, 4, 6);
          b.alu(Op::Mul, 3, 3, id_stride);
          body();
          b.alu(Op::Add, 5, 5, 1);
          b.branch(Cond::Ne, 5, t, tok);
        };
        if (a.fwd) {
          const unsigned w_in = b.fabin("w_in", dt, ctx.colors.weight[l.position_of[s]], n);
          const unsigned tabd = b.mem("table", dt, tab, n);
          const unsigned row = b.mem("row", dt, tab, c);
          const unsigned dst = b.mem("y_tok", dt, y.addr, c, static_cast<std::int32_t>(t));
          const unsigned prow = b.mem("position_row", dt, tab, c);
          b.vop(Op::FMov, dt, dt, V::d(tabd), V::d(w_in));
          token_loop(c * esz, [&] {
            b.alu(Op::Add, 3, 3, tab);
            b.dsdr(Op::DsdBase, row, 3);
            b.alu(Op::Mul, 7, 5, esz);
            b.alu(Op::Add, 7, 7, y.addr);
            b.dsdr(Op::DsdBase, dst, 7);
            if (pos) {  // y = R(table row + position row), as the reference adds them
              b.ld(8, prow_at, 4, 6);
              b.dsdr(Op::DsdBase, prow, 8);
              b.vop(Op::FAdd, dt, dt, V::d(dst), V::d(row), V::d(prow));
            } else {
              b.vop(Op::FMov, dt, dt, V::d(dst), V::d(row));
            }
          });
        } else {
          const unsigned acc = b.mem("table_grad", DType::F32, tab, n);
          const unsigned row = b.mem("row", DType::F32, tab, c);
          const unsigned dyall = b.mem("dy", dt, y.addr, c * t);
          const unsigned dy32 = b.mem("dy32", DType::F32, dyw, c * t);
          const unsigned src = b.mem("dy_tok", DType::F32, dyw, c, static_cast<std::int32_t>(t));
          const unsigned prow = b.mem("position_row", DType::F32, tab, c);
          const unsigned e_in = b.fabin("e_in", DType::F32, ctx.colors.east[(col + 1) % 2], n);
          const unsigned e_out = b.fabout("e_out", DType::F32, ctx.colors.east[col % 2], n);
          if (dt == DType::F32)
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(dy32), V::d(dyall));
          else
            b.vop(Op::FCvt, DType::F32, dt, V::d(dy32), V::d(dyall));
          if (first_col) {
            b.mov(7, 0);
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(acc), V::r(7));
          } else {
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(acc), V::d(e_in));
          }
          token_loop(c * 4, [&] {
            b.alu(Op::Add, 3, 3, tab);
            b.dsdr(Op::DsdBase, row, 3);
            b.vop(Op::FAdd, DType::F32, DType::F32, V::d(row), V::d(row), V::d(src));
            if (pos) {  // the position's row too (a separate sum: its order is the reference's)
              b.ld(8, prow_at, 4, 6);
              b.dsdr(Op::DsdBase, prow, 8);
              b.vop(Op::FAdd, DType::F32, DType::F32, V::d(prow), V::d(prow), V::d(src));
            }
            b.dsd(Op::DsdAdd, src, 1);
          });
          if (!last_col) b.vop(Op::FMov, DType::F32, DType::F32, V::d(e_out), V::d(acc));
        }
      }
      if (!a.fwd && last_col) {
        // Out through the band's anchor row, as the weight gradient does.
        std::uint64_t above = 0, below = 0;
        for (std::uint32_t u = band.slices.front(); u < s; ++u) above += Rn * map.count(u);
        for (std::uint32_t u = s + 1; u <= band.slices.back(); ++u) below += Rn * map.count(u);
        const unsigned accd = b.mem("acc_all", DType::F32, tab, std::max(n, 1u));
        const unsigned s_in = b.fabin("s_in", DType::F32, ctx.colors.south[(s + 1) % 2], 1);
        const unsigned s_out = b.fabout("s_out", DType::F32, ctx.colors.south[s % 2], 1);
        const unsigned n_in = b.fabin("n_in", DType::F32, ctx.colors.north[(s + 1) % 2], 1);
        const unsigned n_out = b.fabout("n_out", DType::F32, ctx.colors.north[s % 2], 1);
        const unsigned outd = b.fabout("out", DType::F32, ctx.colors.out, 1);
        auto send = [&](unsigned out_d, int in_d, std::uint64_t len) {
          if (len == 0) return;
          b.dsd(Op::DsdLen, out_d, static_cast<std::int64_t>(len));
          if (in_d < 0) {
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(out_d), V::d(accd));
          } else {
            b.dsd(Op::DsdLen, static_cast<unsigned>(in_d), static_cast<std::int64_t>(len));
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(out_d), V::d(static_cast<unsigned>(in_d)));
          }
        };
        if (s < band.anchor) {
          send(s_out, -1, n);
          send(s_out, static_cast<int>(s_in), above);
        } else if (s > band.anchor) {
          send(n_out, -1, n);
          send(n_out, static_cast<int>(n_in), below);
        } else {
          send(outd, -1, n);
          send(outd, static_cast<int>(s_in), above);
          send(outd, static_cast<int>(n_in), below);
        }
      }
      b.ret();
      return b.finish();
    };
    std::shared_ptr<const hw::isa::Program> programs[4];
    for (std::uint32_t col = 0; col < C; ++col) {
      // Columns share programs unless positions make each column's tokens differ.
      const std::uint32_t cls = a.fwd ? 0 : col + 1 == C ? 3 : col == 0 ? 0 : 1 + col % 2;
      if (!programs[cls] || pos) programs[cls] = program_for(a.fwd && !pos ? 0 : col);
      hw::isa::Placement pl;
      pl.x0 = pl.x1 = static_cast<std::uint16_t>(col);
      pl.y0 = pl.y1 = static_cast<std::uint16_t>(l.rows[s]);
      pl.program = programs[cls];
      p.code.push_back(std::move(pl));
    }
  }
  return p;
}

}  // namespace wafersim::models::compiler
