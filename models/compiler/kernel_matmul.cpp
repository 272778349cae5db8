// The streamed matrix product (linear forward, linear data gradient): docs/compiler.md,
// "Linear forward".

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/compiler/chunk_loop.h"
#include "models/compiler/kernels.h"
#include "models/compiler/matmul_program.h"
#include "models/compiler/program_builder.h"

namespace wafersim::models::compiler {
using hw::DType;
using hw::isa::Op;
using V = VOperand;

namespace {

// The FMACs of one chunk, y += x W over the row's inputs and a chunk's runs of outputs, in the
// kernel's three forms; `pb` is the chunk's partial-sum buffer.
struct ChunkProducts {
  ProgramBuilder& b;
  std::uint32_t t, esz, asz, in_addr;
  DType dt, acc;
  const std::vector<Span>& aruns;
  VectorOptions part, on_ut0;
  unsigned w_rep, xcol, pblk, acol, pcol, pvec, wvec;

  // Streamed: y[o][i] += w[f][o] x[f][i] over (o, i) of a run of outputs, one FMAC per input f.
  void streamed(const std::vector<Span>& oruns, std::uint32_t pb) const {
    std::uint32_t apos = 0, set = 0;  // the FMACs' length last set in this chunk's code
    for (const Span& ra : aruns) {
      std::uint32_t opos = 0;
      for (const Span& ro : oruns) {
        const auto n = static_cast<std::uint32_t>(t * ro.size());
        if (n != set) {
          b.dsd(Op::DsdLen, w_rep, n);
          b.dsd(Op::DsdLen, xcol, n);
          b.dsd(Op::DsdLen, pblk, n);
          set = n;
        }
        b.dsd(Op::DsdBase, pblk, pb + opos * t * asz);
        b.mov(6, static_cast<std::int64_t>(in_addr + apos * t * esz));
        const unsigned loop = b.label();
        b.bind(loop);
        b.dsdr(Op::DsdBase, xcol, 6);
        b.vop(Op::FMac, acc, dt, V::d(pblk), V::d(pblk), V::d(xcol), V::d(w_rep), on_ut0);
        b.alu(Op::Add, 6, 6, t * esz);
        b.branch(hw::isa::Cond::Ne, 6, static_cast<std::int64_t>(in_addr + (apos + ra.size()) * t * esz), loop);
        opos += static_cast<std::uint32_t>(ro.size());
      }
      apos += static_cast<std::uint32_t>(ra.size());
    }
  }

  // Resident, one token per vector: y[o][i] += x[f][i] w[f][o] as vectors over o, for each token
  // i and input f in order (per element the streamed order: the input runs, then f). r9 points
  // at the chunk's weights and moves past them.
  void gemv(const std::vector<Span>& oruns, std::uint32_t pb) const {
    std::uint64_t off = 0;  // bytes into the chunk's weights
    std::uint32_t apos = 0;
    for (const Span& ra : aruns) {
      std::uint32_t opos = 0;
      for (const Span& ro : oruns) {
        const auto len = static_cast<std::uint32_t>(ro.size());
        for (std::uint32_t i = 0; i < t; ++i) {
          b.dsd(Op::DsdBase, pvec, pb + (opos * t + i) * asz);
          b.dsd(Op::DsdLen, pvec, len);
          b.dsd(Op::DsdLen, wvec, len);
          b.alu(Op::Add, 5, 9, static_cast<std::int64_t>(off));
          b.mov(6, static_cast<std::int64_t>(in_addr + (apos * t + i) * esz));
          const unsigned loop = b.label();
          b.bind(loop);
          b.ld(1, 0, esz, 6);
          b.dsdr(Op::DsdBase, wvec, 5);
          b.vop(Op::FMac, acc, dt, V::d(pvec), V::d(pvec), V::d(wvec), V::r(1), part);
          b.alu(Op::Add, 5, 5, len * esz);
          b.alu(Op::Add, 6, 6, t * esz);
          b.branch(hw::isa::Cond::Ne, 6, static_cast<std::int64_t>(in_addr + ((apos + ra.size()) * t + i) * esz), loop);
        }
        off += ra.size() * len * esz;
        opos += len;
      }
      apos += static_cast<std::uint32_t>(ra.size());
    }
    b.alu(Op::Add, 9, 9, static_cast<std::int64_t>(off));
  }

  // Resident, tokens as the vectors: for every run of inputs and of outputs, y[o] += x[f] w[f][o]
  // with each weight loaded from r5's pointer.
  void resident(const std::vector<Span>& oruns, std::uint32_t pb) const {
    std::uint32_t apos = 0;
    for (const Span& ra : aruns) {
      std::uint32_t opos = 0;
      for (const Span& ro : oruns) {
        b.dsd(Op::DsdBase, acol, in_addr + apos * t * esz);
        b.mov(2, static_cast<std::int64_t>(ra.size()));
        const unsigned loop = b.label();
        b.bind(loop);
        b.dsd(Op::DsdBase, pcol, pb + opos * t * asz);
        for (std::uint64_t o = 0; o < ro.size(); ++o) {
          b.ld(1, static_cast<std::uint32_t>(o * esz), esz, 5);
          b.vop(Op::FMac, acc, dt, V::d(pcol), V::d(pcol), V::d(acol), V::r(1), part);
          b.dsd(Op::DsdAdd, pcol, t);
        }
        b.alu(Op::Add, 5, 5, static_cast<std::int64_t>(ro.size() * esz));
        b.dsd(Op::DsdAdd, acol, t);
        b.alu(Op::Sub, 2, 2, 1);
        b.branch(hw::isa::Cond::Ne, 2, 0, loop);
        opos += static_cast<std::uint32_t>(ro.size());
      }
      apos += static_cast<std::uint32_t>(ra.size());
    }
  }
};

}  // namespace

std::shared_ptr<const hw::isa::Program> matmul_row_program(const KernelContext& ctx, const MatmulArgs& m,
                                                           const MatmulScratch& buf, const MatmulWeights& w,
                                                           std::uint32_t s, const std::string& name) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe;
  const DType dt = ctx.dtype;
  const DType acc = ctx.accumulate == Accumulate::Fp32 ? DType::F32 : dt;
  const std::uint32_t esz = hw::size_of(dt), asz = hw::size_of(acc);
  const bool fp32_acc = acc != dt, bias = m.bias >= 0;
  const bool resident = w.source == MatmulWeights::Source::Resident, gemv = resident && w.gemv;
  const FeatureMap& Am = ctx.tensors.at(m.in).map;
  const FeatureMap& Om = ctx.tensors.at(m.out).map;
  const Tensor& in = ctx.tensors.at(m.in);
  const Tensor& out = ctx.tensors.at(m.out);
  const std::uint32_t cs = static_cast<std::uint32_t>(Om.count(s));
  const std::uint64_t a_s = Am.count(s);
  const std::vector<Span> aruns = Am.runs(s);

  // Every vector instruction on the partials of a streamed product, and with fp32 partial sums
  // of a resident one, runs on ordered microthread 0 (docs/isa.md): the FMACs back to back
  // while the main thread prepares the next, the sends, the owner's adds and the next chunk's
  // zeroing after them in issue order. A streamed FMAC reads its weights from the fabric, one
  // wavelet per output over the PE's t tokens (`repeat`), for one input over a run of outputs.
  const bool ordered = fp32_acc || !resident;
  VectorOptions on_ut0;
  on_ut0.async = true;
  on_ut0.ut = 0;
  const VectorOptions part = ordered ? on_ut0 : VectorOptions{};

  ProgramBuilder b(name);
  const std::uint8_t cw = resident ? 0 : ctx.colors.weight[l.position_of[s]];
  const unsigned w_in = resident ? 0 : b.fabin("w_in", dt, cw, cs);
  const unsigned w_rep = resident ? 0 : b.fabin_repeat("w_rep", dt, cw, t, t);
  const unsigned xcol = resident ? 0 : b.circ("xcol", dt, in.addr, t, t);
  const unsigned pblk = resident ? 0 : b.mem("pblk", acc, buf.partials[0], t);
  const unsigned acol = b.mem("acol", dt, in.addr, t);
  const unsigned pcol = b.mem("pcol", acc, buf.partials[0], t);
  const unsigned pall = b.mem("pall", acc, buf.partials[0], 0);
  const unsigned outd = b.mem("out", dt, out.addr, t * cs);
  const unsigned s_in = b.fabin("s_in", acc, ctx.colors.south[(s + 1) % 2], 0);
  const unsigned s_out = b.fabout("s_out", acc, ctx.colors.south[s % 2], 0);
  const unsigned n_in = b.fabin("n_in", acc, ctx.colors.north[(s + 1) % 2], 0);
  const unsigned n_out = b.fabout("n_out", acc, ctx.colors.north[s % 2], 0);
  const unsigned biasd = b.mem("bias", dt, buf.bias, cs);
  const unsigned bias32 = b.mem("bias32", DType::F32, buf.bias32, cs);
  const unsigned tmpd = b.mem("grad32", DType::F32, buf.grad32, t * cs);
  const unsigned biasr = resident ? b.mem("bias_resident", dt, w.bias_addr, cs) : 0;
  const unsigned pvec = gemv ? b.mem("pvec", acc, buf.partials[0], 0, static_cast<std::int32_t>(t)) : 0;
  const unsigned wvec = gemv ? b.mem("wvec", dt, w.addr, 0) : 0;
  // Registers: r1 the weight, r2 the input loop (resident), r3 +0, r4 a bias value, r5 the weight pointer
  // (resident), r6 the input pointer (gemv, streamed), r7 -0, r8 the chunk loop, r9 the chunk's
  // weights (gemv).

  // Per chunk j: its owner's role (0 above this row, 1 this row, 2 below), the color class of
  // the asynchronous send reading its partial sums (0 north, 1 south) and what to wait for.
  std::vector<std::vector<Span>> oruns(G);
  std::vector<int> reader(G, -1);
  std::vector<bool> writes(G);
  for (std::uint32_t j = 0; j < G; ++j) {
    oruns[j] = Om.runs(j);
    std::uint64_t cj = 0;
    for (const Span& r : oruns[j]) cj += r.size();
    writes[j] = cj > 0;
    if (j != s && cj > 0) reader[j] = j > s ? 1 : 0;
  }
  const std::vector<int> waits = buffer_waits(reader, writes);
  auto key = [&](std::uint32_t j) {
    std::vector<std::int64_t> k{j < s ? 0 : j == s ? 1 : 2, waits[j]};
    for (const Span& r : oruns[j]) k.push_back(static_cast<std::int64_t>(r.size()));
    return k;
  };

  const std::uint8_t main = b.task("main");
  b.entry(main);
  b.mov(3, 0);
  b.movf(7, acc, acc == DType::F32 ? 0x80000000u : 0x8000u);  // -0: x + -0 is x, bit for bit
  if (resident) b.mov(gemv ? 9 : 5, w.addr);
  if (bias && cs > 0) {
    b.vop(Op::FMov, dt, dt, V::d(biasd), V::d(resident ? biasr : w_in));
    if (fp32_acc) b.vop(Op::FCvt, DType::F32, dt, V::d(bias32), V::d(biasd));
  }

  const ChunkProducts products{b,      t,     esz,  asz,  in.addr, dt,   acc,  aruns, part,
                               on_ut0, w_rep, xcol, pblk, acol,    pcol, pvec, wvec};

  auto chunk = [&](std::uint32_t j) {
    std::uint32_t cj = 0;
    for (const Span& r : oruns[j]) cj += static_cast<std::uint32_t>(r.size());
    const std::uint32_t n = t * cj;
    const std::uint32_t pb = buf.partials[j % 2];
    if (cj > 0) {
      if (waits[j] >= 0) {  // a zero-length send issues once the color's earlier sends finished
        const unsigned o_d = waits[j] == 0 ? n_out : s_out;
        b.dsd(Op::DsdLen, o_d, 0);
        b.vop(Op::FMov, acc, acc, V::d(o_d), V::r(7));
      }
      b.dsd(Op::DsdBase, pall, pb);
      b.dsd(Op::DsdLen, pall, n);
      b.vop(Op::FMov, acc, acc, V::d(pall), V::r(3), {}, {}, part);
    }
    if (gemv && cj > 0 && a_s > 0)
      products.gemv(oruns[j], pb);
    else if (resident && !gemv)
      products.resident(oruns[j], pb);
    else if (!resident)
      products.streamed(oruns[j], pb);
    if (cj == 0) return;
    if (j == s) {
      if (s > 0) {
        b.dsd(Op::DsdLen, s_in, n);
        b.vop(Op::FAdd, acc, acc, V::d(pall), V::d(pall), V::d(s_in), {}, part);
      }
      if (s + 1 < G) {
        b.dsd(Op::DsdLen, n_in, n);
        b.vop(Op::FAdd, acc, acc, V::d(pall), V::d(pall), V::d(n_in), {}, part);
      }
      if (bias) {
        b.dsd(Op::DsdBase, pcol, pb);
        for (std::uint32_t o = 0; o < cj; ++o) {
          if (fp32_acc)
            b.ld(4, buf.bias32 + o * 4, 4);
          else
            b.ld(4, buf.bias + o * esz, esz);
          b.vop(Op::FAdd, acc, acc, V::d(pcol), V::d(pcol), V::r(4), {}, part);
          b.dsd(Op::DsdAdd, pcol, t);
        }
      }
      if (fp32_acc) {
        if (m.accumulate_out) {
          b.vop(Op::FCvt, DType::F32, dt, V::d(tmpd), V::d(outd), {}, {}, part);
          b.vop(Op::FAdd, DType::F32, DType::F32, V::d(pall), V::d(pall), V::d(tmpd), {}, part);
        }
        b.vop(Op::FCvt, dt, DType::F32, V::d(outd), V::d(pall), {}, {}, part);
      } else if (m.accumulate_out) {
        b.vop(Op::FAdd, dt, dt, V::d(outd), V::d(outd), V::d(pall), {}, part);
      } else {
        b.vop(Op::FMov, dt, dt, V::d(outd), V::d(pall), {}, {}, part);
      }
      return;
    }
    // The partials of chunk j go to row j, added to those coming from beyond this row.
    const bool south = j > s;
    const bool has_in = south ? s > 0 : s + 1 < G;
    const unsigned o_d = south ? s_out : n_out, i_d = south ? s_in : n_in;
    const VectorOptions async = ordered ? on_ut0 : VectorOptions{true};
    b.dsd(Op::DsdLen, o_d, n);
    if (has_in) {
      b.dsd(Op::DsdLen, i_d, n);
      b.vop(Op::FAdd, acc, acc, V::d(o_d), V::d(i_d), V::d(pall), {}, async);
    } else {
      b.vop(Op::FAdd, acc, acc, V::d(o_d), V::d(pall), V::r(7), {}, async);
    }
  };
  emit_chunks(b, G, key, chunk, buf.table);
  b.ret();
  return b.finish();
}

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
  const std::uint32_t tbytes = chunk_table_bytes(G);
  const std::uint32_t table = tbytes ? ctx.scratch("chunk_table", tbytes) : 0;
  const std::uint64_t scratch_bytes = 2 * pbytes + (bias ? cmax * esz + (fp32_acc ? cmax * 4 : 0) : 0) +
                                      (m.accumulate_out && fp32_acc ? std::uint64_t{t} * cmax * 4 : 0) + tbytes;

  std::vector<std::uint64_t> oc(G);  // Om.count by slice (count() divides: hoisted out of the loops)
  for (std::uint32_t j = 0; j < G; ++j) oc[j] = Om.count(j);
  // Prefix sums over the owners j < i of their chunks' partials (t x outputs) and port words.
  std::vector<std::uint64_t> pn(G + 1, 0), pw(G + 1, 0);
  for (std::uint32_t j = 0; j < G; ++j) {
    const std::uint64_t n = std::uint64_t{t} * oc[j];
    pn[j + 1] = pn[j] + n;
    pw[j + 1] = pw[j] + (n ? words(n * asz) : 0);
  }
  std::vector<std::uint64_t> sram(G);
  std::vector<std::uint64_t> stream_len(G);
  std::uint64_t oruns_all = 0;  // runs of outputs over all chunks: one FMAC per input and run
  for (std::uint32_t j = 0; j < G; ++j) oruns_all += Om.runs(j).size();
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t a = Am.count(s), cs = oc[s], aruns_n = Am.runs(s).size();
    sram[s] = (a + cs) * t * esz + scratch_bytes;
    stream_len[s] = a * m.f_out + (bias ? cs : 0);
    Work k;
    k.datapath_steps = a * m.f_out * ceil_div(t, lanes_dt);
    k.sram_reads = a * m.f_out * (words(std::uint64_t{t} * asz) + words(std::uint64_t{t} * esz));
    k.sram_writes = a * m.f_out * words(std::uint64_t{t} * asz);
    k.ramp_in = stream_len[s];
    // Other owners' chunks: zeroed, sent on, and relayed when they come from the far side.
    const std::uint64_t all_n = pn[G], all_w = pw[G];
    k.sram_writes += all_w;  // zeroing
    k.ramp_out += all_n - (pn[s + 1] - pn[s]);
    k.sram_reads += all_w - (pw[s + 1] - pw[s]);
    const std::uint64_t relayed = (s > 0 ? pn[G] - pn[s + 1] : 0) + (s + 1 < G ? pn[s] : 0);
    k.ramp_in += relayed;
    k.datapath_steps += relayed;
    if (const std::uint64_t cj = oc[s], n = std::uint64_t{t} * cj; cj > 0) {  // its own chunk
      const bool from_north = s > 0, from_south = s + 1 < G;
      const std::uint64_t inputs = (from_north ? 1 : 0) + (from_south ? 1 : 0);
      k.ramp_in += inputs * n;
      k.datapath_steps += inputs * n;
      if (bias) k.datapath_steps += cj * ceil_div(t, lanes_acc);
      if (m.accumulate_out)
        k.datapath_steps += fp32_acc ? ceil_div(n, lanes_dt) + ceil_div(n, lanes_acc) : ceil_div(n, lanes_dt);
      if (fp32_acc) k.datapath_steps += ceil_div(n, lanes_dt);
      k.sram_writes += words(n * esz);
    }
    k.issue = 4 * a * oruns_all + 2 * aruns_n * oruns_all + 2 * G;
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
  for (std::uint32_t s = 0; s + 1 < G; ++s) w.link = std::max({w.link, pn[G] - pn[s + 1], pn[s + 1]});
  w.flops = 2 * l.tokens * m.f_in * m.f_out + (bias ? l.tokens * m.f_out : 0);
  finish_layer(ctx, p, sram);
  p.colors = static_cast<std::uint32_t>(ctx.colors.weight.size()) + 4;

  if (!ctx.emit) return p;

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

  const MatmulScratch buf{{P[0], P[1]}, bbuf, b32, tmp, table};
  for (std::uint32_t s = 0; s < G; ++s) {
    place_on_row(p, l, s,
                 matmul_row_program(ctx, m, buf, {}, s, fmt::format("{}.{}.r{}", m.layer, to_string(m.phase), s)));
  }
  return p;
}

}  // namespace wafersim::models::compiler
