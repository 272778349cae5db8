// RMSNorm backward in the weight-streaming placement: docs/compiler.md, "RMSNorm backward".
// Both steps first recompute rstd exactly as the forward does (the sum of squares chained
// down the column in feature order, rstd on the last row, broadcast up). The data gradient
// then chains sum_gx = sum of g_j xhat_j down the column the same way, the last row scales
// it by 1/d and broadcasts it up, and every row forms dx. The gamma gradient chains each
// feature's sum over the tokens in row order: through a PE's tokens, then west to east along
// the row, and the last column sends it out through its band's east channel.

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

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// x widened to fp32 (fcvt, or a copy when the model is fp32).
void widen(ProgramBuilder& b, DType dt, unsigned d, unsigned a) {
  if (dt == DType::F32)
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(d), V::d(a));
  else
    b.vop(Op::FCvt, DType::F32, dt, V::d(d), V::d(a));
}
void narrow(ProgramBuilder& b, DType dt, unsigned d, unsigned a) {
  if (dt == DType::F32)
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(d), V::d(a));
  else
    b.vop(Op::FCvt, dt, DType::F32, V::d(d), V::d(a));
}

// Descriptors and registers the two steps share on one row.
struct RowCode {
  unsigned accd, rstdd, xcol, s_in, s_out, bn_in, bn_out;
};

// Takes this row's gamma (c values) from its weight stream into `g32` (fp32) when asked; the
// sum of squares chain down the column and rstd broadcast up, into `rstdd` (registers 1-15
// free after).
void gamma_and_rstd(ProgramBuilder& b, DType dt, const RowCode& r, unsigned w_in, unsigned gd, unsigned g32,
                    std::uint32_t c, std::uint32_t t, std::uint32_t acc_addr, std::uint32_t x_addr, bool first,
                    bool last, std::uint32_t inv_d, std::uint32_t eps, bool take_gamma) {
  if (c > 0 && take_gamma) {
    b.vop(Op::FMov, dt, dt, V::d(gd), V::d(w_in));
    widen(b, dt, g32, gd);
  }
  if (first) {
    b.mov(3, 0);
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.accd), V::r(3));
  } else {
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.accd), V::d(r.s_in));
  }
  if (c > 0) {
    b.dsd(Op::DsdBase, r.xcol, x_addr);
    b.mov(1, c);
    const unsigned loop = b.label();
    b.bind(loop);
    b.vop(Op::FMac, DType::F32, dt, V::d(r.accd), V::d(r.accd), V::d(r.xcol), V::d(r.xcol));
    b.dsd(Op::DsdAdd, r.xcol, t);
    b.alu(Op::Sub, 1, 1, 1);
    b.branch(Cond::Ne, 1, 0, loop);
  }
  if (!last) {
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.s_out), V::d(r.accd));
  } else {
    // rstd = rsqrt(sumsq x (1/d) + eps) per token, in place (docs/reference.md, "rsqrt").
    b.movf(13, DType::F32, inv_d);
    b.movf(14, DType::F32, eps);
    b.movf(15, DType::F32, 0x3F000000u);
    b.mov(6, acc_addr);
    b.mov(12, t);
    const unsigned tok = b.label();
    b.bind(tok);
    b.ld(4, 0, 4, 6);
    b.fscalar(Op::FMul, DType::F32, 4, 4, 13);
    b.fscalar(Op::FAdd, DType::F32, 4, 4, 14);
    b.alu(Op::Shr, 7, 4, 1);
    b.mov(5, 0x5F375A86);
    b.alur(Op::Sub, 5, 5, 7);
    b.fscalar(Op::FMul, DType::F32, 8, 4, 15);
    for (int i = 0; i < 3; ++i) {
      b.fscalar(Op::FMul, DType::F32, 9, 8, 5);
      b.fscalar(Op::FNeg, DType::F32, 9, 9);
      b.fmac_scalar(DType::F32, 10, 15, 9, 5);
      b.fmac_scalar(DType::F32, 5, 5, 5, 10);
    }
    b.st(0, 5, 4, 6);
    b.alu(Op::Add, 6, 6, 4);
    b.alu(Op::Sub, 12, 12, 1);
    b.branch(Cond::Ne, 12, 0, tok);
    VectorOptions o;
    o.async = true;
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.bn_out), V::d(r.accd), {}, {}, o);
  }
  b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.rstdd), V::d(r.bn_in));
}

// gamma: each slice's features on its band's west channel and weight color.
void gamma_streams(const KernelContext& ctx, const FeatureMap& map, std::uint32_t gamma, LayerProgram& p) {
  const StreamingLayout& l = ctx.layout;
  for (const auto& b : l.bands)
    for (std::uint32_t s : b.slices) {
      EdgeStream st;
      st.side = fabric::EdgeSide::West;
      st.channel = b.channel;
      st.color = ctx.colors.weight[l.position_of[s]];
      st.into_wafer = true;
      st.dtype = ctx.dtype;
      for (const Span& r : map.runs(s)) st.segments.push_back({gamma, r.lo, 1, r.size(), 0, 1});
      if (st.wavelets()) p.streams.push_back(std::move(st));
    }
}

}  // namespace

LayerProgram lower_rmsnorm_backward(KernelContext& ctx, const NormBackwardArgs& a) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe, C = l.columns;
  const DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const Tensor& x = ctx.tensors.at(a.x);
  const Tensor& dy = ctx.tensors.at(a.dy);
  const FeatureMap& map = x.map;
  const std::uint64_t cmax = map.max_count();
  const bool data = a.phase == Phase::BackwardData;

  LayerProgram p;
  p.layer = a.layer;
  p.kind = LayerKind::RmsNorm;
  p.phase = a.phase;
  p.operands = {a.x, a.dy};
  if (data) p.operands.push_back(a.dx);
  const std::uint32_t acc = ctx.scratch("acc", std::uint64_t{t} * 4);
  const std::uint32_t rstd = ctx.scratch("rstd", std::uint64_t{t} * 4);
  const std::uint32_t gam = ctx.scratch("gamma", cmax * esz);
  const std::uint32_t gam32 = ctx.scratch("gamma32", cmax * 4);
  // data: xhat, g, tmp and mean_gx per token (and the new gradient rounded, to accumulate);
  // gamma gradient: xhat and dy in fp32 for the whole block, and the c running sums.
  const std::uint64_t work_bytes =
      data ? 4 * std::uint64_t{t} * 4 + (a.accumulate ? std::uint64_t{t} * esz : 0) : 2 * cmax * t * 4 + cmax * 4;
  const std::uint32_t wk = ctx.scratch("work", work_bytes);
  const std::uint64_t scratch = 2 * std::uint64_t{t} * 4 + cmax * (esz + 4) + work_bytes;

  const std::uint32_t lanes16 = ctx.target.lanes(dt), lanes32 = ctx.target.lanes(DType::F32);
  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t c = map.count(s);
    sram[s] = (data ? 3 : 2) * c * t * esz + scratch;
    Work k;
    const std::uint64_t v32 = ceil_div(t, lanes32);
    // gamma; the sum-of-squares chain; then per feature the recomputed xhat and g and the
    // chain (data) or the widened block and the token chain (gamma gradient).
    k.datapath_steps =
        (data ? c : 0) + c * ceil_div(t, lanes16) + (data ? c * 7 * v32 : c * v32 + t * ceil_div(c, lanes32));
    k.ramp_in = (data ? c : 0) + (s > 0 ? t : 0) + t + (data ? (s > 0 ? t : 0) + t : 0);
    k.issue = 2 * c + (data ? 14 * c : 4 * c + 2 * t);
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.issue = std::max(w.issue, k.issue);
    w.link = std::max(w.link, C > 1 ? c : 0);
  }
  for (const auto& b : l.bands) {
    std::uint64_t e = 0;
    for (std::uint32_t s : b.slices) e += map.count(s);
    w.edge = std::max(w.edge, e);
    (data ? w.wavelets_in : w.wavelets_out) += e;
  }
  w.flops = (data ? 8 : 5) * l.tokens * x.features;
  finish_layer(ctx, p, sram);
  p.colors = static_cast<std::uint32_t>(ctx.colors.weight.size()) + (data ? 3 : 9);
  if (!ctx.emit) return p;

  if (data) gamma_streams(ctx, map, a.gamma, p);
  if (!data)
    for (const auto& band : l.bands) {  // the anchor's sums, then those above (nearest first), then below
      EdgeStream st;
      st.side = fabric::EdgeSide::East;
      st.channel = band.channel;
      st.color = ctx.colors.out;
      st.into_wafer = false;
      st.dtype = DType::F32;
      st.accumulate = true;
      std::vector<std::uint32_t> order{band.anchor};
      for (std::uint32_t s = band.anchor; s-- > band.slices.front();) order.push_back(s);
      for (std::uint32_t s = band.anchor + 1; s <= band.slices.back(); ++s) order.push_back(s);
      for (std::uint32_t s : order)
        for (const Span& r : map.runs(s))
          st.segments.push_back({static_cast<std::uint32_t>(a.gamma_grad), r.lo, 1, r.size(), 0, 1});
      if (st.wavelets()) p.streams.push_back(std::move(st));
    }

  const std::uint32_t inv_d = hw::numerics::from_double(DType::F32, 1.0 / static_cast<double>(x.features));
  const std::uint32_t eps = hw::numerics::from_double(DType::F32, a.epsilon);
  for (std::uint32_t s = 0; s < G; ++s) {
    const auto c = static_cast<std::uint32_t>(map.count(s));
    const bool first = s == 0, last = s + 1 == G;
    const Band& band = l.bands[l.band_of[s]];
    auto program_for = [&](std::uint32_t col) {
      const bool first_col = col == 0, last_col = col + 1 == C;
      ProgramBuilder b(fmt::format("{}.{}.r{}.c{}", a.layer, data ? "backward" : "gamma_grad", s, col));
      RowCode r{};
      const unsigned w_in = b.fabin("w_in", dt, ctx.colors.weight[l.position_of[s]], std::max(c, 1u));
      const unsigned gd = b.mem("gamma", dt, gam, std::max(c, 1u));
      const unsigned g32 = b.mem("gamma32", DType::F32, gam32, std::max(c, 1u));
      r.accd = b.mem("acc", DType::F32, acc, t);
      r.rstdd = b.mem("rstd", DType::F32, rstd, t);
      r.xcol = b.mem("xcol", dt, x.addr, t);
      r.s_in = b.fabin("s_in", DType::F32, ctx.colors.south[(s + 1) % 2], t);
      r.s_out = b.fabout("s_out", DType::F32, ctx.colors.south[s % 2], t);
      r.bn_in = b.fabin("bn_in", DType::F32, ctx.colors.bcast_north, t);
      r.bn_out = b.fabout("bn_out", DType::F32, ctx.colors.bcast_north, t);
      const unsigned dycol = b.mem("dycol", dt, dy.addr, t);
      const std::uint8_t main = b.task("main");
      b.entry(main);
      gamma_and_rstd(b, dt, r, w_in, gd, g32, c, t, acc, x.addr, first, last, inv_d, eps, data);
      if (data) {
        const Tensor& dx = ctx.tensors.at(a.dx);
        const unsigned xh = b.mem("xhat", DType::F32, wk, t);
        const unsigned gg = b.mem("g", DType::F32, wk + t * 4, t);
        const unsigned tmp = b.mem("tmp", DType::F32, wk + 2 * t * 4, t);
        const unsigned mg = b.mem("mean_gx", DType::F32, wk + 3 * t * 4, t);
        const unsigned rnd = b.mem("rounded", dt, wk + 4 * t * 4, t);
        const unsigned dxcol = b.mem("dxcol", dt, dx.addr, t);
        // xhat_f and g_f of feature f (register 2 walks gamma32; gamma_f in register 5).
        auto xhat_and_g = [&]() {
          widen(b, dt, xh, r.xcol);
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(xh), V::d(xh), V::d(r.rstdd));
          b.ld(5, 0, 4, 2);
          widen(b, dt, gg, dycol);
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(gg), V::d(gg), V::r(5));
        };
        auto feature_loop = [&](auto&& body) {
          if (c == 0) return;
          b.dsd(Op::DsdBase, r.xcol, x.addr);
          b.dsd(Op::DsdBase, dycol, dy.addr);
          b.dsd(Op::DsdBase, dxcol, dx.addr);
          b.mov(1, c);
          b.mov(2, gam32);
          const unsigned loop = b.label();
          b.bind(loop);
          xhat_and_g();
          body();
          b.dsd(Op::DsdAdd, r.xcol, t);
          b.dsd(Op::DsdAdd, dycol, t);
          b.dsd(Op::DsdAdd, dxcol, t);
          b.alu(Op::Add, 2, 2, 4);
          b.alu(Op::Sub, 1, 1, 1);
          b.branch(Cond::Ne, 1, 0, loop);
        };
        // sum_gx: the chain down the column in feature order.
        if (first) {
          b.mov(3, 0);
          b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.accd), V::r(3));
        } else {
          b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.accd), V::d(r.s_in));
        }
        feature_loop([&] { b.vop(Op::FMac, DType::F32, DType::F32, V::d(r.accd), V::d(r.accd), V::d(gg), V::d(xh)); });
        if (!last) {
          b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.s_out), V::d(r.accd));
        } else {
          b.movf(13, DType::F32, inv_d);
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(r.accd), V::d(r.accd), V::r(13));
          VectorOptions o;
          o.async = true;
          b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.bn_out), V::d(r.accd), {}, {}, o);
        }
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(mg), V::d(r.bn_in));
        // dx = R((g - xhat mean_gx) rstd), added to the gradient already there when asked.
        feature_loop([&] {
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(tmp), V::d(xh), V::d(mg));
          b.vop(Op::FSub, DType::F32, DType::F32, V::d(tmp), V::d(gg), V::d(tmp));
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(tmp), V::d(tmp), V::d(r.rstdd));
          if (!a.accumulate) {
            narrow(b, dt, dxcol, tmp);
          } else {
            narrow(b, dt, rnd, tmp);
            widen(b, dt, tmp, rnd);
            widen(b, dt, xh, dxcol);
            b.vop(Op::FAdd, DType::F32, DType::F32, V::d(tmp), V::d(xh), V::d(tmp));
            narrow(b, dt, dxcol, tmp);
          }
        });
      } else {
        // xhat and dy in fp32, feature-major, then per token (in order) every feature's chain.
        const std::uint32_t xh_addr = wk, dy_addr = wk + static_cast<std::uint32_t>(cmax * t * 4);
        const std::uint32_t sums = wk + static_cast<std::uint32_t>(2 * cmax * t * 4);
        const unsigned xh = b.mem("xhat", DType::F32, xh_addr, t);
        const unsigned dyw = b.mem("dy32", DType::F32, dy_addr, t);
        const unsigned xh_t = b.mem("xhat_tok", DType::F32, xh_addr, std::max(c, 1u), static_cast<std::int32_t>(t));
        const unsigned dy_t = b.mem("dy_tok", DType::F32, dy_addr, std::max(c, 1u), static_cast<std::int32_t>(t));
        const unsigned sd = b.mem("sums", DType::F32, sums, std::max(c, 1u));
        const unsigned e_in = b.fabin("e_in", DType::F32, ctx.colors.east[(col + 1) % 2], std::max(c, 1u));
        const unsigned e_out = b.fabout("e_out", DType::F32, ctx.colors.east[col % 2], std::max(c, 1u));
        if (c > 0) {
          b.dsd(Op::DsdBase, r.xcol, x.addr);
          b.mov(1, c);
          const unsigned loop = b.label();
          b.bind(loop);
          widen(b, dt, xh, r.xcol);
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(xh), V::d(xh), V::d(r.rstdd));
          widen(b, dt, dyw, dycol);
          b.dsd(Op::DsdAdd, r.xcol, t);
          b.dsd(Op::DsdAdd, dycol, t);
          b.dsd(Op::DsdAdd, xh, t);
          b.dsd(Op::DsdAdd, dyw, t);
          b.alu(Op::Sub, 1, 1, 1);
          b.branch(Cond::Ne, 1, 0, loop);
          if (first_col) {
            b.mov(3, 0);
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(sd), V::r(3));
          } else {
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(sd), V::d(e_in));
          }
          b.mov(1, t);
          const unsigned tok = b.label();
          b.bind(tok);
          b.vop(Op::FMac, DType::F32, DType::F32, V::d(sd), V::d(sd), V::d(dy_t), V::d(xh_t));
          b.dsd(Op::DsdAdd, xh_t, 1);
          b.dsd(Op::DsdAdd, dy_t, 1);
          b.alu(Op::Sub, 1, 1, 1);
          b.branch(Cond::Ne, 1, 0, tok);
        }
        if (!last_col) {
          if (c > 0) b.vop(Op::FMov, DType::F32, DType::F32, V::d(e_out), V::d(sd));
        } else {
          // Out through the band's anchor row, as the weight gradient does (one block per row).
          std::uint64_t above = 0, below = 0;
          for (std::uint32_t u = band.slices.front(); u < s; ++u) above += map.count(u);
          for (std::uint32_t u = s + 1; u <= band.slices.back(); ++u) below += map.count(u);
          const unsigned n_in = b.fabin("n_in", DType::F32, ctx.colors.north[(s + 1) % 2], 1);
          const unsigned n_out = b.fabout("n_out", DType::F32, ctx.colors.north[s % 2], 1);
          const unsigned outd = b.fabout("out", DType::F32, ctx.colors.out, 1);
          auto send = [&](unsigned out_d, int in_d, std::uint64_t len) {
            if (len == 0) return;
            b.dsd(Op::DsdLen, out_d, static_cast<std::int64_t>(len));
            if (in_d < 0) {
              b.vop(Op::FMov, DType::F32, DType::F32, V::d(out_d), V::d(sd));
            } else {
              b.dsd(Op::DsdLen, static_cast<unsigned>(in_d), static_cast<std::int64_t>(len));
              b.vop(Op::FMov, DType::F32, DType::F32, V::d(out_d), V::d(static_cast<unsigned>(in_d)));
            }
          };
          if (s < band.anchor) {
            send(r.s_out, -1, c);
            send(r.s_out, static_cast<int>(r.s_in), above);
          } else if (s > band.anchor) {
            send(n_out, -1, c);
            send(n_out, static_cast<int>(n_in), below);
          } else {
            send(outd, -1, c);
            send(outd, static_cast<int>(r.s_in), above);
            send(outd, static_cast<int>(n_in), below);
          }
        }
      }
      b.ret();
      return b.finish();
    };
    // One program per column class: the data gradient is the same everywhere; the gamma
    // gradient differs for the first and last columns and by column parity.
    std::shared_ptr<const hw::isa::Program> programs[4];
    for (std::uint32_t col = 0; col < C; ++col) {
      const std::uint32_t cls = data ? 0 : col + 1 == C ? 3 : col == 0 ? 0 : 1 + col % 2;
      if (!programs[cls]) programs[cls] = program_for(data ? 0 : col);
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
