// The matrix product with resident weights: the program of compiler::lower_matmul (forward),
// each weight loaded from SRAM (`ld` through a pointer register) where the streamed kernel
// receives it, or, with few tokens per PE, vector FMACs over the outputs with the weights as
// the vector operand; per element the same accumulation order, chains and rounding.

#include "models/resident/kernel_resident_matmul.h"

#include <fmt/format.h>

#include <algorithm>

#include "models/compiler/program_builder.h"
#include "sim/errors.h"

namespace wafersim::models::resident {
using compiler::KernelContext;
using compiler::LayerProgram;
using compiler::MatmulArgs;
using compiler::Span;
using compiler::VOperand;
using compiler::Work;
using hw::DType;
using hw::isa::OnDone;
using hw::isa::Op;
using V = VOperand;

namespace {
std::uint64_t cdiv(std::uint64_t a, std::uint64_t b) { return b ? (a + b - 1) / b : a; }
std::uint64_t words(std::uint64_t bytes) { return cdiv(bytes, 8); }
std::uint64_t align8(std::uint64_t b) { return (b + 7) / 8 * 8; }
}  // namespace

std::uint32_t resident_weight_bytes(const compiler::StreamingLayout& l, const compiler::FeatureMap& in,
                                    const compiler::FeatureMap& out, std::uint64_t f_out, bool bias, hw::DType dt) {
  const std::uint32_t esz = hw::size_of(dt);
  std::uint64_t most = 0;
  for (std::uint32_t s = 0; s < l.slices(); ++s) most = std::max(most, in.count(s));
  return static_cast<std::uint32_t>(align8(most * f_out * esz) + (bias ? align8(out.max_count() * esz) : 0));
}

SliceImage resident_slice_image(const MatmulArgs& m, const compiler::FeatureMap& Am, const compiler::FeatureMap& Om,
                                std::uint32_t G, std::uint32_t s) {
  SliceImage img;
  for (std::uint32_t j = 0; j < G; ++j)
    for (const Span& ra : Am.runs(s))
      for (const Span& ro : Om.runs(j))
        for (std::uint64_t f = ra.lo; f < ra.hi; ++f)
          for (std::uint64_t o = ro.lo; o < ro.hi; ++o)
            img.weights.push_back(m.weight_base + f * static_cast<std::uint64_t>(m.sf) +
                                  o * static_cast<std::uint64_t>(m.so));
  if (m.bias >= 0)
    for (const Span& o : Om.runs(s))
      for (std::uint64_t k = o.lo; k < o.hi; ++k) img.bias.push_back(k);
  return img;
}

LayerProgram lower_resident_matmul(KernelContext& ctx, const MatmulArgs& m, const ResidentWeights& rw) {
  const compiler::StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe;
  const DType dt = ctx.dtype;
  const DType acc = ctx.accumulate == compiler::Accumulate::Fp32 ? DType::F32 : dt;
  const std::uint32_t esz = hw::size_of(dt), asz = hw::size_of(acc);
  const compiler::FeatureMap& Am = ctx.tensors.at(m.in).map;
  const compiler::FeatureMap& Om = ctx.tensors.at(m.out).map;
  const std::uint64_t cmax = Om.max_count();
  const std::uint32_t lanes_dt = ctx.target.lanes(dt), lanes_acc = ctx.target.lanes(acc);
  const bool fp32_acc = acc != dt;
  const compiler::Tensor& in = ctx.tensors.at(m.in);
  const compiler::Tensor& out = ctx.tensors.at(m.out);
  if (m.phase != compiler::Phase::Forward || m.accumulate_out)
    throw std::logic_error("lower_resident_matmul: forward products only");

  LayerProgram p;
  p.layer = m.layer;
  p.kind = m.kind;
  p.phase = m.phase;
  p.reads = {m.in};
  p.writes = {m.out};

  // Few tokens per PE (decode, small batches): vectors over the outputs rather than the tokens.
  const bool gemv = 7 * std::uint64_t{t} < 3 * cmax;
  const std::uint64_t pbytes = std::uint64_t{t} * cmax * asz;
  const std::uint32_t P[2] = {ctx.scratch("partials0", pbytes, 16), ctx.scratch("partials1", pbytes, 16)};
  const bool bias = m.bias >= 0;
  const std::uint32_t bbuf = bias ? ctx.scratch("bias", cmax * esz) : 0;
  const std::uint32_t b32 = bias && fp32_acc ? ctx.scratch("bias32", cmax * 4) : 0;
  const std::uint64_t scratch_bytes = 2 * pbytes + (bias ? cmax * esz + (fp32_acc ? cmax * 4 : 0) : 0);

  std::vector<std::uint64_t> oc(G);
  for (std::uint32_t j = 0; j < G; ++j) oc[j] = Om.count(j);
  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t a = Am.count(s), cs = oc[s];
    sram[s] = (a + cs) * t * esz + scratch_bytes + rw.bytes;
    Work k;
    if (gemv) {
      // Per token and input feature, one vector FMAC over each output run of a chunk, the
      // input element loaded as the scalar.
      for (std::uint32_t j = 0; j < G; ++j)
        for (const Span& ro : Om.runs(j)) {
          const std::uint64_t n = ro.size();
          k.datapath_steps += std::uint64_t{t} * a * cdiv(n, lanes_dt);
          k.sram_reads += std::uint64_t{t} * a * (words(n * esz) + words(n * asz) + 1);
          k.sram_writes += std::uint64_t{t} * a * words(n * asz);
          k.issue += std::uint64_t{t} * a * 7 + 4;
        }
    } else {
      k.datapath_steps = a * m.f_out * cdiv(t, lanes_dt);
      // Every weight is one scalar load (a port access) besides the vector reads and writes.
      k.sram_reads = a * m.f_out * (words(std::uint64_t{t} * asz) + words(std::uint64_t{t} * esz) + 1);
      k.sram_writes = a * m.f_out * words(std::uint64_t{t} * asz);
      k.issue = 3 * a * m.f_out;
    }
    for (std::uint32_t j = 0; j < G; ++j) {
      const std::uint64_t cj = oc[j], n = std::uint64_t{t} * cj;
      if (cj == 0) continue;
      k.sram_writes += words(n * asz);
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
      if (bias) k.datapath_steps += cj * cdiv(t, lanes_acc);
      if (fp32_acc) k.datapath_steps += cdiv(n, lanes_dt);
      k.sram_writes += words(n * esz);
    }
    k.issue += 2 * G;
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.sram_reads = std::max(w.sram_reads, k.sram_reads);
    w.sram_writes = std::max(w.sram_writes, k.sram_writes);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.ramp_out = std::max(w.ramp_out, k.ramp_out);
    w.issue = std::max(w.issue, k.issue);
  }
  for (std::uint32_t s = 0; s + 1 < G; ++s) {
    std::uint64_t south = 0, north = 0;
    for (std::uint32_t j = 0; j < G; ++j) (j > s ? south : north) += std::uint64_t{t} * oc[j];
    w.link = std::max({w.link, south, north});
  }
  w.flops = 2 * l.tokens * m.f_in * m.f_out + (bias ? l.tokens * m.f_out : 0);
  compiler::finish_layer(ctx, p, sram);
  p.colors = 4;  // the column chains; no weight colors

  if (!ctx.emit) return p;
  if (G + 1 > hw::isa::kMaxTasks)
    throw sim::InputError(fmt::format("layer '{}': code generation supports at most {} rows, the layout uses {}",
                                      m.layer, hw::isa::kMaxTasks - 1, G));

  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint32_t cs = static_cast<std::uint32_t>(Om.count(s));
    compiler::ProgramBuilder b(fmt::format("{}.resident.r{}", m.layer, s));
    const unsigned acol = b.mem("acol", dt, in.addr, t);
    const unsigned pcol = b.mem("pcol", acc, P[0], t);
    const unsigned pall = b.mem("pall", acc, P[0], 0);
    const unsigned outd = b.mem("out", dt, out.addr, t * cs);
    const unsigned s_in = b.fabin("s_in", acc, ctx.colors.south[(s + 1) % 2], 0);
    const unsigned s_out = b.fabout("s_out", acc, ctx.colors.south[s % 2], 0);
    const unsigned n_in = b.fabin("n_in", acc, ctx.colors.north[(s + 1) % 2], 0);
    const unsigned n_out = b.fabout("n_out", acc, ctx.colors.north[s % 2], 0);
    const unsigned biasd = b.mem("bias", dt, bbuf, cs);
    const unsigned biasr = b.mem("bias_resident", dt, rw.bias_addr, cs);
    const unsigned bias32 = b.mem("bias32", DType::F32, b32, cs);
    const unsigned pvec = b.mem("pvec", acc, P[0], 0, static_cast<std::int32_t>(t));
    const unsigned wvec = b.mem("wvec", dt, rw.addr, 0);

    const std::uint8_t main = b.task("main");
    std::vector<std::uint8_t> chunk(G);
    for (std::uint32_t j = 0; j < G; ++j) chunk[j] = b.declare_task(fmt::format("chunk{}", j));
    b.entry(main);
    for (std::uint32_t j = 2; j < G; ++j) b.block(chunk[j]);
    b.mov(3, 0);
    if (bias && cs > 0) {
      b.vop(Op::FMov, dt, dt, V::d(biasd), V::d(biasr));
      if (fp32_acc) b.vop(Op::FCvt, DType::F32, dt, V::d(bias32), V::d(biasd));
    }
    b.activate(chunk[0]);
    b.ret();

    std::uint64_t wpos = 0;  // weights of this slice read before chunk j
    const std::uint64_t a_s = Am.count(s);
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
      std::uint64_t wp = rw.addr + wpos * esz;
      wpos += a_s * cj;
      std::uint32_t apos = 0;
      if (gemv) {
        // y[o][i] += x[f][i] w[f][o] as vectors over o, for each token i and input f in order
        // (per element the streaming kernel's order: the input runs, then f).
        for (const Span& ra : Am.runs(s)) {
          std::uint32_t opos = 0;
          for (const Span& ro : Om.runs(j)) {
            const auto len = static_cast<std::uint32_t>(ro.size());
            for (std::uint32_t i = 0; i < t; ++i) {
              b.dsd(Op::DsdBase, pvec, pb + (opos * t + i) * asz);
              b.dsd(Op::DsdLen, pvec, len);
              b.dsd(Op::DsdLen, wvec, len);
              b.mov(5, static_cast<std::int64_t>(wp));
              b.mov(6, static_cast<std::int64_t>(in.addr + (apos * t + i) * esz));
              b.mov(2, static_cast<std::int64_t>(ra.size()));
              const unsigned loop = b.label();
              b.bind(loop);
              b.ld(1, 0, esz, 6);
              b.dsdr(Op::DsdBase, wvec, 5);
              b.vop(Op::FMac, acc, dt, V::d(pvec), V::d(pvec), V::d(wvec), V::r(1));
              b.alu(Op::Add, 5, 5, len * esz);
              b.alu(Op::Add, 6, 6, t * esz);
              b.alu(Op::Sub, 2, 2, 1);
              b.branch(hw::isa::Cond::Ne, 2, 0, loop);
            }
            wp += ra.size() * len * esz;
            opos += len;
          }
          apos += static_cast<std::uint32_t>(ra.size());
        }
      }
      if (!gemv) b.mov(5, static_cast<std::int64_t>(wp));
      for (const Span& ra : gemv ? std::vector<Span>{} : Am.runs(s)) {
        std::uint32_t opos = 0;
        for (const Span& ro : Om.runs(j)) {
          b.dsd(Op::DsdBase, acol, in.addr + apos * t * esz);
          b.mov(2, static_cast<std::int64_t>(ra.size()));
          const unsigned loop = b.label();
          b.bind(loop);
          b.dsd(Op::DsdBase, pcol, pb + opos * t * asz);
          for (std::uint64_t o = 0; o < ro.size(); ++o) {
            b.ld(1, static_cast<std::uint32_t>(o * esz), esz, 5);
            b.vop(Op::FMac, acc, dt, V::d(pcol), V::d(pcol), V::d(acol), V::r(1));
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
      compiler::VectorOptions async{true, next2 ? OnDone::Unblock : OnDone::None,
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
          if (fp32_acc)
            b.vop(Op::FCvt, dt, DType::F32, V::d(outd), V::d(pall));
          else
            b.vop(Op::FMov, dt, dt, V::d(outd), V::d(pall));
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
            b.vop(Op::FMov, acc, acc, V::d(o_d), V::d(pall), {}, {}, async);
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

}  // namespace wafersim::models::resident
