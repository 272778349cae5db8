// The weight gradient of a streamed matrix product, streamed out through the east edge:
// docs/compiler.md, "Linear backward".

#include <fmt/format.h>

#include <algorithm>

#include "hw/numerics/softfloat.h"
#include "models/compiler/chunk_loop.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "sim/errors.h"

namespace wafersim::models::compiler {
using hw::DType;
using hw::isa::Op;
using V = VOperand;

namespace {}  // namespace

LayerProgram lower_weight_gradient(KernelContext& ctx, const WeightGradArgs& m) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe, C = l.columns;
  const DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const FeatureMap& Xm = ctx.tensors.at(m.x).map;
  const FeatureMap& Dm = ctx.tensors.at(m.dy).map;
  const std::uint64_t cmax = Dm.max_count(), amax = Xm.max_count();
  const bool bias = m.bias_grad >= 0;
  const Tensor& x = ctx.tensors.at(m.x);
  const Tensor& dy = ctx.tensors.at(m.dy);

  LayerProgram p;
  p.layer = m.layer;
  p.kind = m.kind;
  p.phase = Phase::BackwardWeights;
  p.reads = {m.x, m.dy};

  const std::uint64_t rbytes = std::uint64_t{t} * cmax * esz;
  const std::uint64_t pbytes = std::max<std::uint64_t>(amax * cmax, cmax) * 4;
  const std::uint32_t R = ctx.scratch("received", rbytes, 16);
  const std::uint32_t Pw[2] = {ctx.scratch("wgrad0", pbytes), ctx.scratch("wgrad1", pbytes)};
  const std::uint32_t ones = bias ? ctx.scratch("ones", std::uint64_t{t} * esz, 16) : 0;
  const std::uint32_t chunks = G + (bias ? 1 : 0);
  const std::uint32_t tbytes = chunk_table_bytes(chunks);
  const std::uint32_t table = tbytes ? ctx.scratch("chunk_table", tbytes) : 0;
  const std::uint64_t scratch_bytes = rbytes + 2 * pbytes + (bias ? std::uint64_t{t} * esz : 0) + tbytes;

  // Blocks of a slice: chunk j < G is dM[A_s][O_j], chunk G the bias gradient of O_s.
  std::vector<std::uint64_t> xc(G), dc(G);  // counts by slice (count() divides: hoisted out of the loops)
  for (std::uint32_t j = 0; j < G; ++j) {
    xc[j] = Xm.count(j);
    dc[j] = Dm.count(j);
  }
  auto block = [&](std::uint32_t s, std::uint32_t j) -> std::uint64_t {
    if (j == G) return dc[s];
    return xc[s] * dc[j];
  };
  std::uint64_t all_d = 0;  // sum of dc: a slice's blocks are xc[s] x all_d (+ dc[s] with a bias)
  for (std::uint32_t j = 0; j < G; ++j) all_d += dc[j];
  auto blocks_of = [&](std::uint32_t s) { return xc[s] * all_d + (bias ? dc[s] : 0); };

  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t a = Xm.count(s), cs = Dm.count(s);
    sram[s] = (a + cs) * t * esz + scratch_bytes;
    Work k;
    const std::uint64_t blocks = blocks_of(s);
    k.datapath_steps = a * m.f_out * t + (bias ? cs * t : 0) + (C > 1 ? blocks : 0);
    k.issue = 4 * a * m.f_out + (bias ? 4 * cs : 0);
    k.sram_reads = (a * m.f_out + (bias ? cs : 0)) * 2 * words(std::uint64_t{t} * esz);
    k.sram_writes = words(blocks * 4);
    if (G > 1) {
      k.ramp_in = std::uint64_t{t} * m.f_out + std::uint64_t{t} * cs;  // every chunk, plus the owner's second echo
      k.ramp_out = 2 * std::uint64_t{t} * cs;
    }
    k.ramp_in += C > 1 ? blocks : 0;
    k.ramp_out += C > 1 ? blocks : 0;
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.issue = std::max(w.issue, k.issue);
    w.sram_reads = std::max(w.sram_reads, k.sram_reads);
    w.sram_writes = std::max(w.sram_writes, k.sram_writes);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.ramp_out = std::max(w.ramp_out, k.ramp_out);
    w.link = std::max(w.link, C > 1 ? blocks : 0);
  }
  std::uint64_t south = 0;  // column broadcasts across the link below slice s
  for (std::uint32_t s = 0; s + 1 < G; ++s) {
    south += std::uint64_t{t} * dc[s];
    w.link = std::max({w.link, south, std::uint64_t{t} * all_d - south});
  }
  for (const auto& b : l.bands) {
    std::uint64_t edge = 0;
    for (std::uint32_t s : b.slices) edge += blocks_of(s);
    w.edge = std::max(w.edge, edge);
    w.wavelets_out += edge;
  }
  w.link = std::max(w.link, w.edge);
  w.flops = 2 * l.tokens * m.f_in * m.f_out + (bias ? l.tokens * m.f_out : 0);
  finish_layer(ctx, p, sram);
  p.colors = 9;

  if (!ctx.emit) return p;

  // Streams out: per band, chunk by chunk, the anchor's block, then those of the rows above it
  // (nearest first), then those below (nearest first).
  for (const auto& b : l.bands) {
    EdgeStream st;
    st.side = fabric::EdgeSide::East;
    st.channel = b.channel;
    st.color = ctx.colors.out;
    st.into_wafer = false;
    st.dtype = DType::F32;
    st.accumulate = true;
    std::vector<std::uint32_t> order{b.anchor};
    for (std::uint32_t s = b.anchor; s-- > b.slices.front();) order.push_back(s);
    for (std::uint32_t s = b.anchor + 1; s <= b.slices.back(); ++s) order.push_back(s);
    for (std::uint32_t j = 0; j < chunks; ++j)
      for (std::uint32_t s : order) {
        if (!block(s, j)) continue;
        if (j == G) {
          for (const Span& o : Dm.runs(s))
            st.segments.push_back({static_cast<std::uint32_t>(m.bias_grad), o.lo, 1, o.size(), 0, 1});
          continue;
        }
        const std::vector<Span> oruns = Dm.runs(j);
        for (const Span& A : Xm.runs(s)) {
          if (oruns.size() == 1) {
            st.segments.push_back(
                {m.grad,
                 m.grad_base + A.lo * static_cast<std::uint64_t>(m.sf) + oruns[0].lo * static_cast<std::uint64_t>(m.so),
                 A.size(), oruns[0].size(), m.sf, m.so});
            continue;
          }
          for (std::uint64_t f = A.lo; f < A.hi; ++f)
            for (const Span& O : oruns)
              st.segments.push_back(
                  {m.grad, m.grad_base + f * static_cast<std::uint64_t>(m.sf) + O.lo * static_cast<std::uint64_t>(m.so),
                   1, O.size(), 0, m.so});
        }
      }
    if (st.wavelets()) p.streams.push_back(std::move(st));
  }

  const std::uint32_t one_bits = hw::numerics::from_double(dt, 1.0);
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint32_t a = static_cast<std::uint32_t>(Xm.count(s)), cs = static_cast<std::uint32_t>(Dm.count(s));
    const Band& band = l.bands[l.band_of[s]];
    const std::uint32_t first = band.slices.front(), last = band.slices.back();
    // Per chunk: the blocks of the band's rows above and below this one (the last column
    // forwards them).
    std::uint64_t x_above = 0, x_below = 0, d_above = 0, d_below = 0;
    for (std::uint32_t u = first; u < s; ++u) {
      x_above += xc[u];
      d_above += dc[u];
    }
    for (std::uint32_t u = s + 1; u <= last; ++u) {
      x_below += xc[u];
      d_below += dc[u];
    }
    std::vector<std::uint64_t> above(chunks), below(chunks);
    for (std::uint32_t j = 0; j < chunks; ++j) {
      above[j] = j == G ? d_above : x_above * dc[j];
      below[j] = j == G ? d_below : x_below * dc[j];
    }
    // One program per column class: first, middle (by parity), last.
    std::shared_ptr<const hw::isa::Program> programs[4];
    auto program_for = [&](std::uint32_t xcls) {
      // xcls: 0 first column, 1 middle even, 2 middle odd, 3 last column
      const bool is_first = xcls == 0 || C == 1, is_last = xcls == 3 || C == 1;
      const std::uint32_t parity = xcls == 0 ? 0 : xcls == 1 ? 0 : xcls == 2 ? 1 : (C - 1) % 2;
      ProgramBuilder b(fmt::format("{}.wgrad.r{}.c{}", m.layer, s, xcls));
      const unsigned xrow = b.mem("xrow", dt, x.addr, t);
      const unsigned rrow = b.mem("rrow", dt, R, t);
      const unsigned rall = b.mem("rall", dt, R, 0);
      const unsigned dself = b.mem("dself", dt, dy.addr, t * cs);
      const unsigned dcol = b.mem("dcol", dt, dy.addr, t);
      const unsigned onesd = b.mem("ones", dt, ones, t);
      const unsigned bs_in = b.fabin("bs_in", dt, ctx.colors.bcast_south, 0);
      const unsigned bn_in = b.fabin("bn_in", dt, ctx.colors.bcast_north, 0);
      const unsigned bs_out = b.fabout("bs_out", dt, ctx.colors.bcast_south, t * cs);
      const unsigned bn_out = b.fabout("bn_out", dt, ctx.colors.bcast_north, t * cs);
      const unsigned pw = b.mem("pw", DType::F32, Pw[0], 0);
      const unsigned e_in = b.fabin("e_in", DType::F32, ctx.colors.east[(parity + 1) % 2], 0);
      const unsigned e_out = b.fabout("e_out", DType::F32, ctx.colors.east[parity], 0);
      const unsigned s_in = b.fabin("s_in", DType::F32, ctx.colors.south[(s + 1) % 2], 0);
      const unsigned s_out = b.fabout("s_out", DType::F32, ctx.colors.south[s % 2], 0);
      const unsigned n_in = b.fabin("n_in", DType::F32, ctx.colors.north[(s + 1) % 2], 0);
      const unsigned n_out = b.fabout("n_out", DType::F32, ctx.colors.north[s % 2], 0);
      const unsigned outd = b.fabout("out", DType::F32, ctx.colors.out, 0);
      if (bias) {
        std::vector<std::uint8_t> bytes;
        for (std::uint32_t i = 0; i < t; ++i)
          for (std::uint32_t k = 0; k < esz; ++k) bytes.push_back(static_cast<std::uint8_t>(one_bits >> (8 * k)));
        b.data(ones, std::move(bytes));
      }
      const std::uint8_t main = b.task("main");
      b.entry(main);
      // Per chunk: what to wait for before writing its partials (its buffer's previous reader,
      // an asynchronous send east, when no later one issued).
      std::vector<int> reader(chunks, -1);
      std::vector<bool> writes(chunks);
      for (std::uint32_t j = 0; j < chunks; ++j) {
        writes[j] = block(s, j) > 0;
        if (!is_last && writes[j]) reader[j] = 0;
      }
      const std::vector<int> waits = buffer_waits(reader, writes);
      auto key = [&](std::uint32_t j) {
        return std::vector<std::int64_t>{
            j == G ? 3 : j < s ? 0 : j == s ? 1 : 2, static_cast<std::int64_t>(j < G ? dc[j] : 0),
            static_cast<std::int64_t>(block(s, j)),  static_cast<std::int64_t>(above[j]),
            static_cast<std::int64_t>(below[j]),     waits[j]};
      };
      auto chunk = [&](std::uint32_t j) {
        const std::uint32_t n_blk = static_cast<std::uint32_t>(block(s, j));
        const std::uint32_t pb = Pw[j % 2];
        auto wait_for_buffer = [&] {  // a zero-length send issues once the earlier sends east finished
          if (waits[j] < 0) return;
          b.dsd(Op::DsdLen, e_out, 0);
          b.vop(Op::FMov, DType::F32, DType::F32, V::d(e_out), V::r(5));
        };
        if (j < G) {
          const std::uint32_t cj = static_cast<std::uint32_t>(dc[j]);
          const std::uint32_t n = t * cj;
          // 1. dy of chunk j from its owner row, down and up the column (route-level broadcast).
          if (G > 1 && n > 0) {
            b.dsd(Op::DsdLen, rall, n);
            if (j == s) {
              b.vop(Op::FMov, dt, dt, V::d(bs_out), V::d(dself), {}, {}, {true});
              b.vop(Op::FMov, dt, dt, V::d(bn_out), V::d(dself), {}, {}, {true});
              b.dsd(Op::DsdLen, bs_in, n);
              b.vop(Op::FMov, dt, dt, V::d(rall), V::d(bs_in));
              b.dsd(Op::DsdLen, bn_in, n);
              b.vop(Op::FMov, dt, dt, V::d(rall), V::d(bn_in));
            } else {
              const unsigned src = j < s ? bs_in : bn_in;
              b.dsd(Op::DsdLen, src, n);
              b.vop(Op::FMov, dt, dt, V::d(rall), V::d(src));
            }
          }
          // 2. local partials: pw[f][o] = sum over this column's tokens of x[f] dy[o].
          const std::uint32_t rbase = G > 1 ? R : dy.addr;
          if (a > 0 && cj > 0) {
            wait_for_buffer();
            b.dsd(Op::DsdBase, xrow, x.addr);
            b.mov(6, pb);
            b.mov(2, a);
            const unsigned loop = b.label();
            b.bind(loop);
            b.dsd(Op::DsdBase, rrow, rbase);
            for (std::uint32_t o = 0; o < cj; ++o) {
              b.mov(5, 0);
              b.reduce(Op::FDot, DType::F32, dt, 5, V::d(xrow), V::d(rrow));
              b.st(o * 4, 5, 4, 6);
              b.dsd(Op::DsdAdd, rrow, t);
            }
            b.dsd(Op::DsdAdd, xrow, t);
            b.alu(Op::Add, 6, 6, cj * 4);
            b.alu(Op::Sub, 2, 2, 1);
            b.branch(hw::isa::Cond::Ne, 2, 0, loop);
          }
        } else if (cs > 0) {  // the bias gradient of this slice's own outputs
          wait_for_buffer();
          b.dsd(Op::DsdBase, dcol, dy.addr);
          for (std::uint32_t o = 0; o < cs; ++o) {
            b.mov(5, 0);
            b.reduce(Op::FDot, DType::F32, dt, 5, V::d(dcol), V::d(onesd));
            b.st(pb + o * 4, 5, 4);
            b.dsd(Op::DsdAdd, dcol, t);
          }
        }
        // 3. sum over the columns (west to east), 4. out through the band's east channel.
        b.dsd(Op::DsdBase, pw, pb);
        b.dsd(Op::DsdLen, pw, n_blk);
        const VectorOptions async{true};
        if (!is_last) {
          if (n_blk > 0) {
            b.dsd(Op::DsdLen, e_out, n_blk);
            if (is_first) {
              b.vop(Op::FMov, DType::F32, DType::F32, V::d(e_out), V::d(pw), {}, {}, async);
            } else {
              b.dsd(Op::DsdLen, e_in, n_blk);
              b.vop(Op::FAdd, DType::F32, DType::F32, V::d(e_out), V::d(e_in), V::d(pw), {}, async);
            }
          }
          return;
        }
        if (!is_first && n_blk > 0) {
          b.dsd(Op::DsdLen, e_in, n_blk);
          b.vop(Op::FAdd, DType::F32, DType::F32, V::d(pw), V::d(e_in), V::d(pw));
        }
        auto send = [&](unsigned out_d, unsigned in_d, std::uint64_t len) {
          if (len == 0) return;
          b.dsd(Op::DsdLen, out_d, len);
          if (in_d == pw) {
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(out_d), V::d(pw));
          } else {
            b.dsd(Op::DsdLen, in_d, len);
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(out_d), V::d(in_d));
          }
        };
        if (s < band.anchor) {
          send(s_out, pw, n_blk);
          send(s_out, s_in, above[j]);
        } else if (s > band.anchor) {
          send(n_out, pw, n_blk);
          send(n_out, n_in, below[j]);
        } else {
          send(outd, pw, n_blk);
          send(outd, s_in, above[j]);
          send(outd, n_in, below[j]);
        }
      };
      emit_chunks(b, chunks, key, chunk, table);
      b.ret();
      return b.finish();
    };
    for (std::uint32_t xx = 0; xx < C; ++xx) {
      const std::uint32_t cls = xx + 1 == C ? 3 : xx == 0 ? 0 : (xx % 2 == 0 ? 1 : 2);
      if (!programs[cls]) programs[cls] = program_for(cls);
      hw::isa::Placement pl;
      pl.x0 = pl.x1 = static_cast<std::uint16_t>(xx);
      pl.y0 = pl.y1 = static_cast<std::uint16_t>(l.rows[s]);
      pl.program = programs[cls];
      p.code.push_back(std::move(pl));
    }
  }
  return p;
}

}  // namespace wafersim::models::compiler
