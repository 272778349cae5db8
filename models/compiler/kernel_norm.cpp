// RMSNorm forward in the weight-streaming placement: docs/compiler.md, "RMSNorm forward".
// The sum of squares of a token's features runs as one fp32 FMAC chain in feature order, down
// the column from the first used row to the last (each row continues the chain it receives),
// so the result is the reference's bit for bit; the last row computes rstd (the reference's
// integer guess and three Newton steps) and broadcasts it up the column.

#include <fmt/format.h>

#include <algorithm>

#include "hw/numerics/softfloat.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"

namespace wafersim::models::compiler {
using hw::DType;
using hw::isa::Cond;
using hw::isa::Op;
using V = VOperand;

LayerProgram lower_rmsnorm_forward(KernelContext& ctx, const NormArgs& a) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe;
  const DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const Tensor& in = ctx.tensors.at(a.in);
  const Tensor& out = ctx.tensors.at(a.out);
  const FeatureMap& map = shared_map(ctx, a.layer, {a.in, a.out}, true);
  const std::uint64_t cmax = map.max_count();

  LayerProgram p;
  p.layer = a.layer;
  p.kind = LayerKind::RmsNorm;
  p.phase = Phase::Forward;
  p.operands = {a.in, a.out};
  const std::uint32_t acc = ctx.scratch("sumsq", std::uint64_t{t} * 4);
  const std::uint32_t rstd = ctx.scratch("rstd", std::uint64_t{t} * 4);
  const std::uint32_t tmp = ctx.scratch("tmp32", std::uint64_t{t} * 4);
  const std::uint32_t gam = ctx.scratch("gamma", cmax * esz);
  const std::uint32_t gam32 = ctx.scratch("gamma32", cmax * 4);
  const std::uint64_t scratch = 3 * std::uint64_t{t} * 4 + cmax * (esz + 4);

  const std::uint32_t lanes16 = ctx.target.lanes(dt), lanes32 = ctx.target.lanes(DType::F32);
  std::vector<std::uint64_t> sram(G), stream_len(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t c = map.count(s);
    sram[s] = 2 * c * t * esz + scratch;
    stream_len[s] = c;
    Work k;
    // gamma in and widened; the FMAC chain; per feature: widen, x rstd, x gamma, narrow.
    k.datapath_steps =
        c + ceil_div(c, lanes32) + c * ceil_div(t, lanes16) + c * (2 * ceil_div(t, lanes16) + 2 * ceil_div(t, lanes32));
    k.ramp_in = c + (s > 0 ? t : 0) + t;
    k.ramp_out = (s + 1 < G ? t : 0) + (s + 1 == G ? t : 0);
    k.issue = 2 * c + 5 * c;
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.ramp_out = std::max(w.ramp_out, k.ramp_out);
    w.issue = std::max(w.issue, k.issue);
    w.link = std::max(w.link, l.columns > 1 ? c : 0);
  }
  for (const auto& b : l.bands) {
    std::uint64_t e = 0;
    for (std::uint32_t s : b.slices) e += stream_len[s];
    w.edge = std::max(w.edge, e);
    w.wavelets_in += e;
  }
  w.flops = 4 * l.tokens * in.features;
  finish_layer(ctx, p, sram);
  p.colors = static_cast<std::uint32_t>(ctx.colors.weight.size()) + 3;
  if (!ctx.emit) return p;

  // gamma: each slice's features on its band's west channel and weight color.
  for (const auto& b : l.bands)
    for (std::uint32_t s : b.slices) {
      EdgeStream st;
      st.side = fabric::EdgeSide::West;
      st.channel = b.channel;
      st.color = ctx.colors.weight[l.position_of[s]];
      st.into_wafer = true;
      st.dtype = dt;
      for (const Span& r : map.runs(s)) st.segments.push_back({a.gamma, r.lo, 1, r.size(), 0, 1});
      if (st.wavelets()) p.streams.push_back(std::move(st));
    }

  const std::uint32_t inv_d = hw::numerics::from_double(DType::F32, 1.0 / static_cast<double>(in.features));
  const std::uint32_t eps = hw::numerics::from_double(DType::F32, a.epsilon);
  for (std::uint32_t s = 0; s < G; ++s) {
    const auto c = static_cast<std::uint32_t>(map.count(s));
    const bool first = s == 0, last = s + 1 == G;
    ProgramBuilder b(fmt::format("{}.forward.r{}", a.layer, s));
    const unsigned w_in = b.fabin("w_in", dt, ctx.colors.weight[l.position_of[s]], std::max(c, 1u));
    const unsigned gd = b.mem("gamma", dt, gam, std::max(c, 1u));
    const unsigned g32 = b.mem("gamma32", DType::F32, gam32, std::max(c, 1u));
    const unsigned accd = b.mem("sumsq", DType::F32, acc, t);
    const unsigned rstdd = b.mem("rstd", DType::F32, rstd, t);
    const unsigned tmpd = b.mem("tmp32", DType::F32, tmp, t);
    const unsigned xcol = b.mem("xcol", dt, in.addr, t);
    const unsigned ycol = b.mem("ycol", dt, out.addr, t);
    const unsigned s_in = b.fabin("s_in", DType::F32, ctx.colors.south[(s + 1) % 2], t);
    const unsigned s_out = b.fabout("s_out", DType::F32, ctx.colors.south[s % 2], t);
    const unsigned bn_in = b.fabin("bn_in", DType::F32, ctx.colors.bcast_north, t);
    const unsigned bn_out = b.fabout("bn_out", DType::F32, ctx.colors.bcast_north, t);
    const std::uint8_t main = b.task("main");
    b.entry(main);
    if (c > 0) {
      b.vop(Op::FMov, dt, dt, V::d(gd), V::d(w_in));
      b.vop(Op::FCvt, DType::F32, dt, V::d(g32), V::d(gd));
    }
    // The chain: start from the row above's partial (or +0), add x[f]^2 in feature order.
    if (first) {
      b.mov(3, 0);
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(accd), V::r(3));
    } else {
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(accd), V::d(s_in));
    }
    if (c > 0) {
      b.mov(1, c);
      const unsigned loop = b.label();
      b.bind(loop);
      b.vop(Op::FMac, DType::F32, dt, V::d(accd), V::d(accd), V::d(xcol), V::d(xcol));
      b.dsd(Op::DsdAdd, xcol, t);
      b.alu(Op::Sub, 1, 1, 1);
      b.branch(Cond::Ne, 1, 0, loop);
    }
    if (!last) {
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(s_out), V::d(accd));
    } else {
      emit_rstd_in_place(b, acc, t, inv_d, eps);
      VectorOptions o;
      o.async = true;
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(bn_out), V::d(accd), {}, {}, o);
    }
    // Every row (the last one too: the broadcast comes back to its own ramp) takes rstd.
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(rstdd), V::d(bn_in));
    if (c > 0) {
      b.dsd(Op::DsdBase, xcol, in.addr);
      b.mov(1, c);
      b.mov(2, gam32);
      const unsigned loop = b.label();
      b.bind(loop);
      b.vop(Op::FCvt, DType::F32, dt, V::d(tmpd), V::d(xcol));
      b.vop(Op::FMul, DType::F32, DType::F32, V::d(tmpd), V::d(tmpd), V::d(rstdd));
      b.ld(5, 0, 4, 2);
      b.vop(Op::FMul, DType::F32, DType::F32, V::d(tmpd), V::d(tmpd), V::r(5));
      b.vop(Op::FCvt, dt, DType::F32, V::d(ycol), V::d(tmpd));
      b.dsd(Op::DsdAdd, xcol, t);
      b.dsd(Op::DsdAdd, ycol, t);
      b.alu(Op::Add, 2, 2, 4);
      b.alu(Op::Sub, 1, 1, 1);
      b.branch(Cond::Ne, 1, 0, loop);
    }
    b.ret();
    place_on_row(p, l, s, b.finish());
  }
  return p;
}

}  // namespace wafersim::models::compiler
