// The streamed matrix product (linear forward, linear data gradient): docs/compiler.md,
// "Linear forward".

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"

namespace wafersim::models::compiler {
using hw::DType;
using hw::isa::OnDone;
using hw::isa::Op;
using V = VOperand;

namespace {
std::uint64_t words(std::uint64_t bytes) { return ceil_div(bytes, 8); }
}  // namespace

LayerProgram lower_matmul(KernelContext& ctx, const MatmulArgs& m) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe;
  const DType dt = ctx.dtype;
  const DType acc = ctx.accumulate == Accumulate::Fp32 ? DType::F32 : dt;
  const std::uint32_t esz = hw::size_of(dt), asz = hw::size_of(acc);
  const FeatureMap& Am = ctx.tensors.at(m.in).map;
  const FeatureMap& Om = ctx.tensors.at(m.out).map;
  const std::uint64_t cmax = Om.max_count();
  const std::uint32_t lanes_dt = ctx.target.lanes(dt), lanes_acc = ctx.target.lanes(acc);
  const bool fp32_acc = acc != dt;
  const Tensor& in = ctx.tensors.at(m.in);
  const Tensor& out = ctx.tensors.at(m.out);

  LayerProgram p;
  p.layer = m.layer;
  p.kind = m.kind;
  p.phase = m.phase;
  p.reads = {m.in};
  p.writes = {m.out};
  if (m.accumulate_out) p.reads.push_back(m.out);

  const std::uint64_t pbytes = std::uint64_t{t} * cmax * asz;
  const std::uint32_t P[2] = {ctx.scratch("partials0", pbytes, 16), ctx.scratch("partials1", pbytes, 16)};
  const bool bias = m.bias >= 0;
  const std::uint32_t bbuf = bias ? ctx.scratch("bias", cmax * esz) : 0;
  const std::uint32_t b32 = bias && fp32_acc ? ctx.scratch("bias32", cmax * 4) : 0;
  const std::uint32_t tmp = m.accumulate_out && fp32_acc ? ctx.scratch("grad32", std::uint64_t{t} * cmax * 4) : 0;
  const std::uint64_t scratch_bytes = 2 * pbytes + (bias ? cmax * esz + (fp32_acc ? cmax * 4 : 0) : 0) +
                                      (m.accumulate_out && fp32_acc ? std::uint64_t{t} * cmax * 4 : 0);

  std::vector<std::uint64_t> oc(G);  // Om.count by slice (count() divides: hoisted out of the loops)
  for (std::uint32_t j = 0; j < G; ++j) oc[j] = Om.count(j);
  std::vector<std::uint64_t> sram(G);
  std::vector<std::uint64_t> stream_len(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t a = Am.count(s), cs = oc[s];
    sram[s] = (a + cs) * t * esz + scratch_bytes;
    stream_len[s] = a * m.f_out + (bias ? cs : 0);
    Work k;
    k.datapath_steps = a * m.f_out * ceil_div(t, lanes_dt);
    k.sram_reads = a * m.f_out * (words(std::uint64_t{t} * asz) + words(std::uint64_t{t} * esz));
    k.sram_writes = a * m.f_out * words(std::uint64_t{t} * asz);
    k.ramp_in = stream_len[s];
    for (std::uint32_t j = 0; j < G; ++j) {
      const std::uint64_t cj = oc[j], n = std::uint64_t{t} * cj;
      if (cj == 0) continue;
      k.sram_writes += words(n * asz);  // zeroing
      const bool from_north = s > 0 && j >= s, from_south = s + 1 < G && j <= s;
      if (j != s) {
        k.ramp_out += n;
        if ((j > s && s > 0) || (j < s && s + 1 < G)) {
          k.ramp_in += n;
          k.datapath_steps += n;
        }
        k.sram_reads += words(n * asz);
        continue;
      }
      const std::uint64_t inputs = (from_north ? 1 : 0) + (from_south ? 1 : 0);
      k.ramp_in += inputs * n;
      k.datapath_steps += inputs * n;
      if (bias) k.datapath_steps += cj * ceil_div(t, lanes_acc);
      if (m.accumulate_out)
        k.datapath_steps += fp32_acc ? ceil_div(n, lanes_dt) + ceil_div(n, lanes_acc) : ceil_div(n, lanes_dt);
      if (fp32_acc) k.datapath_steps += ceil_div(n, lanes_dt);
      k.sram_writes += words(n * esz);
    }
    k.issue = 3 * a * m.f_out + 2 * G;
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.sram_reads = std::max(w.sram_reads, k.sram_reads);
    w.sram_writes = std::max(w.sram_writes, k.sram_writes);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.ramp_out = std::max(w.ramp_out, k.ramp_out);
    w.issue = std::max(w.issue, k.issue);
    w.link = std::max(w.link, l.columns > 1 ? stream_len[s] : 0);
  }
  // Edge channels and the column-0 spines of the bands.
  for (const auto& b : l.bands) {
    std::uint64_t edge = 0;
    for (std::uint32_t s : b.slices) edge += stream_len[s];
    w.edge = std::max(w.edge, edge);
    w.wavelets_in += edge;
    for (std::uint32_t y = b.lo; y + 1 < b.hi; ++y) {  // link between rows y and y + 1 of column 0
      std::uint64_t down = 0, up = 0;
      for (std::uint32_t s : b.slices) {
        if (b.channel_row <= y && l.rows[s] > y) down += stream_len[s];
        if (b.channel_row > y && l.rows[s] <= y) up += stream_len[s];
      }
      w.link = std::max({w.link, down, up});
    }
  }
  // Column chains: between slices s and s + 1, partial sums of the chunks owned below flow
  // south and those owned at or above flow north.
  for (std::uint32_t s = 0; s + 1 < G; ++s) {
    std::uint64_t south = 0, north = 0;
    for (std::uint32_t j = 0; j < G; ++j) (j > s ? south : north) += std::uint64_t{t} * oc[j];
    w.link = std::max({w.link, south, north});
  }
  w.flops = 2 * l.tokens * m.f_in * m.f_out + (bias ? l.tokens * m.f_out : 0);
  finish_layer(ctx, p, sram);
  p.colors = static_cast<std::uint32_t>(ctx.colors.weight.size()) + 4;

  p.analytical = G + 1 > hw::isa::kMaxTasks;  // one task per chunk: beyond that, no code
  if (!ctx.emit) return p;
  if (p.analytical)
    throw NoCodeError(fmt::format("layer '{}': code generation supports at most {} rows, the layout uses {}", m.layer,
                                  hw::isa::kMaxTasks - 1, G));

  // Streams: per slice, on its band's west channel and its weight color: the bias of the
  // slice's own outputs, then for every chunk j the block M[A_s][O_j] row by row.
  for (const auto& b : l.bands)
    for (std::uint32_t s : b.slices) {
      EdgeStream st;
      st.side = fabric::EdgeSide::West;
      st.channel = b.channel;
      st.color = ctx.colors.weight[l.position_of[s]];
      st.into_wafer = true;
      st.dtype = dt;
      if (bias)
        for (const Span& o : Om.runs(s))
          st.segments.push_back({static_cast<std::uint32_t>(m.bias), o.lo, 1, o.size(), 0, 1});
      for (std::uint32_t j = 0; j < G; ++j)
        for (const Span& A : Am.runs(s))
          for (const Span& O : Om.runs(j))
            st.segments.push_back(
                {m.weight,
                 m.weight_base + A.lo * static_cast<std::uint64_t>(m.sf) + O.lo * static_cast<std::uint64_t>(m.so),
                 A.size(), O.size(), m.sf, m.so});
      if (st.wavelets()) p.streams.push_back(std::move(st));
    }

  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint32_t cs = static_cast<std::uint32_t>(Om.count(s));
    const std::uint8_t cw = ctx.colors.weight[l.position_of[s]];
    ProgramBuilder b(fmt::format("{}.{}.r{}", m.layer, to_string(m.phase), s));
    const unsigned w_in = b.fabin("w_in", dt, cw, cs);
    const unsigned acol = b.mem("acol", dt, in.addr, t);
    const unsigned pcol = b.mem("pcol", acc, P[0], t);
    const unsigned pall = b.mem("pall", acc, P[0], 0);
    const unsigned outd = b.mem("out", dt, out.addr, t * cs);
    const unsigned s_in = b.fabin("s_in", acc, ctx.colors.south[(s + 1) % 2], 0);
    const unsigned s_out = b.fabout("s_out", acc, ctx.colors.south[s % 2], 0);
    const unsigned n_in = b.fabin("n_in", acc, ctx.colors.north[(s + 1) % 2], 0);
    const unsigned n_out = b.fabout("n_out", acc, ctx.colors.north[s % 2], 0);
    const unsigned biasd = b.mem("bias", dt, bbuf, cs);
    const unsigned bias32 = b.mem("bias32", DType::F32, b32, cs);
    const unsigned tmpd = b.mem("grad32", DType::F32, tmp, t * cs);

    const std::uint8_t main = b.task("main");
    std::vector<std::uint8_t> chunk(G);
    for (std::uint32_t j = 0; j < G; ++j) chunk[j] = b.declare_task(fmt::format("chunk{}", j));
    b.entry(main);
    for (std::uint32_t j = 2; j < G; ++j) b.block(chunk[j]);
    b.mov(3, 0);
    b.movf(5, acc, acc == DType::F32 ? 0x80000000u : 0x8000u);  // -0: x + -0 is x, bit for bit
    if (bias && cs > 0) {
      b.vop(Op::FMov, dt, dt, V::d(biasd), V::d(w_in));
      if (fp32_acc) b.vop(Op::FCvt, DType::F32, dt, V::d(bias32), V::d(biasd));
    }
    b.activate(chunk[0]);
    b.ret();

    for (std::uint32_t j = 0; j < G; ++j) {
      b.start(chunk[j]);
      const std::uint32_t cj = static_cast<std::uint32_t>(Om.count(j));
      const std::uint32_t n = t * cj;
      const std::uint32_t pb = P[j % 2];
      const bool next2 = j + 2 < G;
      if (cj > 0) {
        b.dsd(Op::DsdBase, pall, pb);
        b.dsd(Op::DsdLen, pall, n);
        b.vop(Op::FMov, acc, acc, V::d(pall), V::r(3));
      }
      // For every run of this slice's inputs and of chunk j's outputs: y[o] += x[f] w[f][o].
      std::uint32_t apos = 0;
      for (const Span& ra : Am.runs(s)) {
        std::uint32_t opos = 0;
        for (const Span& ro : Om.runs(j)) {
          b.dsd(Op::DsdBase, acol, in.addr + apos * t * esz);
          b.mov(2, ra.size());
          const unsigned loop = b.label();
          b.bind(loop);
          b.dsd(Op::DsdBase, pcol, pb + opos * t * asz);
          for (std::uint64_t o = 0; o < ro.size(); ++o) {
            b.recv(1, cw);
            b.vop(Op::FMac, acc, dt, V::d(pcol), V::d(pcol), V::d(acol), V::r(1), {!fp32_acc});
            b.dsd(Op::DsdAdd, pcol, t);
          }
          b.dsd(Op::DsdAdd, acol, t);
          b.alu(Op::Sub, 2, 2, 1);
          b.branch(hw::isa::Cond::Ne, 2, 0, loop);
          opos += static_cast<std::uint32_t>(ro.size());
        }
        apos += static_cast<std::uint32_t>(ra.size());
      }
      ProgramBuilder::VectorOptions async{true, next2 ? OnDone::Unblock : OnDone::None,
                                          next2 ? chunk[j + 2] : std::uint8_t{0}};
      if (j == s) {
        if (cj > 0) {
          if (s > 0) {
            b.dsd(Op::DsdLen, s_in, n);
            b.vop(Op::FAdd, acc, acc, V::d(pall), V::d(pall), V::d(s_in));
          }
          if (s + 1 < G) {
            b.dsd(Op::DsdLen, n_in, n);
            b.vop(Op::FAdd, acc, acc, V::d(pall), V::d(pall), V::d(n_in));
          }
          if (bias) {
            b.dsd(Op::DsdBase, pcol, pb);
            for (std::uint32_t o = 0; o < cj; ++o) {
              if (fp32_acc)
                b.ld(4, b32 + o * 4, 4);
              else
                b.ld(4, bbuf + o * esz, esz);
              b.vop(Op::FAdd, acc, acc, V::d(pcol), V::d(pcol), V::r(4));
              b.dsd(Op::DsdAdd, pcol, t);
            }
          }
          if (fp32_acc) {
            if (m.accumulate_out) {
              b.vop(Op::FCvt, DType::F32, dt, V::d(tmpd), V::d(outd));
              b.vop(Op::FAdd, DType::F32, DType::F32, V::d(pall), V::d(pall), V::d(tmpd));
            }
            b.vop(Op::FCvt, dt, DType::F32, V::d(outd), V::d(pall));
          } else if (m.accumulate_out) {
            b.vop(Op::FAdd, dt, dt, V::d(outd), V::d(outd), V::d(pall));
          } else {
            b.vop(Op::FMov, dt, dt, V::d(outd), V::d(pall));
          }
        }
        if (next2) b.unblock(chunk[j + 2]);
      } else {
        const bool south = j > s;
        const bool has_in = south ? s > 0 : s + 1 < G;
        const unsigned o_d = south ? s_out : n_out, i_d = south ? s_in : n_in;
        if (cj > 0) {
          b.dsd(Op::DsdLen, o_d, n);
          if (has_in) {
            b.dsd(Op::DsdLen, i_d, n);
            b.vop(Op::FAdd, acc, acc, V::d(o_d), V::d(i_d), V::d(pall), {}, async);
          } else {
            b.vop(Op::FAdd, acc, acc, V::d(o_d), V::d(pall), V::r(5), {}, async);
          }
        } else if (next2) {
          b.unblock(chunk[j + 2]);
        }
      }
      if (j + 1 < G) b.activate(chunk[j + 1]);
      b.ret();
    }
    hw::isa::Placement pl;
    pl.x0 = 0;
    pl.x1 = static_cast<std::uint16_t>(l.columns - 1);
    pl.y0 = pl.y1 = static_cast<std::uint16_t>(l.rows[s]);
    pl.program = b.finish();
    p.code.push_back(std::move(pl));
  }
  return p;
}

}  // namespace wafersim::models::compiler
