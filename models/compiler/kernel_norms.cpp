// LayerNorm forward and both norms' backward in the weight-streaming placement:
// docs/compiler.md, "Norms". Every step first computes the token statistics exactly as the
// reference does (LayerNorm's mean, then the sum of squares, each chained down the column in
// feature order; rstd on the last row; broadcast up). The data gradient then chains sum_g
// (LayerNorm) and sum_gx down the column the same way, the last row scales them by 1/d and
// broadcasts them up, and every row forms dx. The parameter gradients chain each feature's
// sums over the tokens in row order: through a PE's tokens, then west to east along the row;
// the last column sends them out through its band's east channel.

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

// Descriptors the steps share on one row.
struct RowCode {
  unsigned accd, meand, rstdd, tmpd, xcol, s_in, s_out, bn_in, bn_out;
};

// Starts a chain of `d`: from +0 on the first row, else from what the row above sent.
void chain_start(ProgramBuilder& b, unsigned d, unsigned s_in, bool first) {
  if (first) {
    b.mov(3, 0);
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(d), V::r(3));
  } else {
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(d), V::d(s_in));
  }
}

// Runs body() for each of the row's c features with xcol (and the descriptors in `more`,
// moved by t each) on feature f; register 2 walks the fp32 parameters from `params` (4 bytes
// a feature), register 1 counts.
template <typename F>
void feature_loop(ProgramBuilder& b, std::uint32_t c, std::uint32_t t, const RowCode& r, std::uint32_t x_addr,
                  const std::vector<std::pair<unsigned, std::uint32_t>>& more, std::uint32_t params, F&& body) {
  if (c == 0) return;
  b.dsd(Op::DsdBase, r.xcol, x_addr);
  for (const auto& [d, base] : more) b.dsd(Op::DsdBase, d, base);
  b.mov(1, c);
  b.mov(2, params);
  const unsigned loop = b.label();
  b.bind(loop);
  body();
  b.dsd(Op::DsdAdd, r.xcol, t);
  for (const auto& m : more) b.dsd(Op::DsdAdd, m.first, t);
  b.alu(Op::Add, 2, 2, 4);
  b.alu(Op::Sub, 1, 1, 1);
  b.branch(Cond::Ne, 1, 0, loop);
}

// The token statistics, exactly in the reference's order: LayerNorm's mean (the sum of the
// features chained down the column, times 1/d on the last row, broadcast up) into meand;
// the sum of squares (of x, or of x - mean) chained down the column, rstd on the last row
// (integer guess, three Newton steps) broadcast up into rstdd. Registers 1-15 free after.
void statistics(ProgramBuilder& b, DType dt, const RowCode& r, std::uint32_t c, std::uint32_t t, std::uint32_t acc_addr,
                std::uint32_t x_addr, bool first, bool last, std::uint32_t inv_d, std::uint32_t eps, bool ln) {
  VectorOptions async;
  async.async = true;
  if (ln) {
    chain_start(b, r.accd, r.s_in, first);
    feature_loop(b, c, t, r, x_addr, {}, 0, [&] {
      widen(b, dt, r.tmpd, r.xcol);
      b.vop(Op::FAdd, DType::F32, DType::F32, V::d(r.accd), V::d(r.accd), V::d(r.tmpd));
    });
    if (!last) {
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.s_out), V::d(r.accd));
    } else {
      b.movf(13, DType::F32, inv_d);
      b.vop(Op::FMul, DType::F32, DType::F32, V::d(r.accd), V::d(r.accd), V::r(13));
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.bn_out), V::d(r.accd), {}, {}, async);
    }
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.meand), V::d(r.bn_in));
  }
  chain_start(b, r.accd, r.s_in, first);
  feature_loop(b, c, t, r, x_addr, {}, 0, [&] {
    if (ln) {
      widen(b, dt, r.tmpd, r.xcol);
      b.vop(Op::FSub, DType::F32, DType::F32, V::d(r.tmpd), V::d(r.tmpd), V::d(r.meand));
      b.vop(Op::FMac, DType::F32, DType::F32, V::d(r.accd), V::d(r.accd), V::d(r.tmpd), V::d(r.tmpd));
    } else {
      b.vop(Op::FMac, DType::F32, dt, V::d(r.accd), V::d(r.accd), V::d(r.xcol), V::d(r.xcol));
    }
  });
  if (!last) {
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.s_out), V::d(r.accd));
  } else {
    emit_rstd_in_place(b, acc_addr, t, inv_d, eps);
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.bn_out), V::d(r.accd), {}, {}, async);
  }
  b.vop(Op::FMov, DType::F32, DType::F32, V::d(r.rstdd), V::d(r.bn_in));
}

// xhat of the feature xcol points at: (W(x) (- mean)) rstd.
void xhat(ProgramBuilder& b, DType dt, const RowCode& r, unsigned d, bool ln) {
  widen(b, dt, d, r.xcol);
  if (ln) b.vop(Op::FSub, DType::F32, DType::F32, V::d(d), V::d(d), V::d(r.meand));
  b.vop(Op::FMul, DType::F32, DType::F32, V::d(d), V::d(d), V::d(r.rstdd));
}

// The parameters (gamma, then beta): each slice's features on its band's west channel and
// weight color.
void param_streams(const KernelContext& ctx, const FeatureMap& map, const std::vector<std::uint32_t>& params,
                   LayerProgram& p) {
  const StreamingLayout& l = ctx.layout;
  for (const auto& b : l.bands)
    for (std::uint32_t s : b.slices) {
      EdgeStream st;
      st.side = fabric::EdgeSide::West;
      st.channel = b.channel;
      st.color = ctx.colors.weight[l.position_of[s]];
      st.into_wafer = true;
      st.dtype = ctx.dtype;
      for (std::uint32_t h : params)
        for (const Span& r : map.runs(s)) st.segments.push_back({h, r.lo, 1, r.size(), 0, 1});
      if (st.wavelets()) p.streams.push_back(std::move(st));
    }
}

}  // namespace

LayerProgram lower_norm(KernelContext& ctx, const NormStepArgs& a) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe, C = l.columns;
  const DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const bool ln = a.layernorm, fwd = a.phase == Phase::Forward, data = a.phase == Phase::BackwardData;
  const bool wgrad = a.phase == Phase::BackwardWeights;
  if (fwd && !ln) throw std::logic_error("lower_norm: RMSNorm forward is lower_rmsnorm_forward");
  const Tensor& x = ctx.tensors.at(a.x);
  std::vector<std::uint32_t> operands{a.x, fwd ? a.out : a.dy};
  if (data) operands.push_back(a.dx);
  const FeatureMap& map = shared_map(ctx, a.layer, operands, true);
  const std::uint64_t cmax = map.max_count();
  const std::uint32_t np = ln ? 2 : 1;         // parameters: gamma (and beta)
  const std::uint32_t nchain = data ? np : 1;  // tokens' sums chained in the data gradient

  LayerProgram p;
  p.layer = a.layer;
  p.kind = ln ? LayerKind::LayerNorm : LayerKind::RmsNorm;
  p.phase = a.phase;
  p.operands = operands;
  const std::uint32_t acc = ctx.scratch("acc", std::uint64_t{t} * 4 * nchain);
  const std::uint32_t mean = ctx.scratch("mean", std::uint64_t{t} * 4);
  const std::uint32_t rstd = ctx.scratch("rstd", std::uint64_t{t} * 4);
  const std::uint32_t tmp = ctx.scratch("tmp", std::uint64_t{t} * 4);
  const std::uint32_t par = ctx.scratch("params", np * cmax * esz);
  const std::uint32_t par32 = ctx.scratch("params32", np * cmax * 4);
  // data: xhat, g and the means of g and g xhat per token (and the new gradient rounded, to
  // accumulate); weight gradient: xhat and dy in fp32 for the whole block, and the sums.
  const std::uint64_t work_bytes = data    ? 4 * std::uint64_t{t} * 4 + (a.accumulate ? std::uint64_t{t} * esz : 0)
                                   : wgrad ? 2 * cmax * t * 4 + np * cmax * 4
                                           : 0;
  const std::uint32_t wk = work_bytes ? ctx.scratch("work", work_bytes) : 0;
  const std::uint64_t scratch = std::uint64_t{t} * 4 * (nchain + 3) + np * cmax * (esz + 4) + work_bytes;

  const std::uint32_t lanes16 = ctx.target.lanes(dt), lanes32 = ctx.target.lanes(DType::F32);
  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t c = map.count(s);
    sram[s] = (data ? 3 : 2) * c * t * esz + scratch;
    Work k;
    const std::uint64_t v32 = ceil_div(t, lanes32);
    // the sum-of-squares chain; then per feature the recomputed xhat and g and the chain
    // (data), the widened block and the token chain (weight gradient), or xhat gamma + beta.
    k.datapath_steps = c * ceil_div(t, lanes16) + (data    ? c * 7 * v32
                                                   : wgrad ? c * v32 + t * ceil_div(c, lanes32)
                                                           : c * 3 * v32);
    k.ramp_in = (wgrad ? 0 : np * c) + (s > 0 ? t : 0) + t + (data ? (s > 0 ? t : 0) + t : 0);
    k.issue = 2 * c + (data ? 14 * c : wgrad ? 4 * c + 2 * t : 8 * c);
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.issue = std::max(w.issue, k.issue);
    w.link = std::max(w.link, C > 1 ? c : 0);
  }
  for (const auto& b : l.bands) {
    std::uint64_t e = 0;
    for (std::uint32_t s : b.slices) e += np * map.count(s);
    w.edge = std::max(w.edge, e);
    (wgrad ? w.wavelets_out : w.wavelets_in) += e;
  }
  w.flops = (data ? 8 : 5) * l.tokens * x.features;
  finish_layer(ctx, p, sram);
  p.colors = static_cast<std::uint32_t>(ctx.colors.weight.size()) + (wgrad ? 9 : 3);
  if (!ctx.emit) return p;

  std::vector<std::uint32_t> params{a.gamma};
  if (ln) params.push_back(a.beta);
  if (!wgrad) param_streams(ctx, map, params, p);
  if (wgrad)
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
      std::vector<std::uint32_t> grads{static_cast<std::uint32_t>(a.gamma_grad)};
      if (ln) grads.push_back(static_cast<std::uint32_t>(a.beta_grad));
      for (std::uint32_t s : order)
        for (std::uint32_t h : grads)
          for (const Span& r : map.runs(s)) st.segments.push_back({h, r.lo, 1, r.size(), 0, 1});
      if (st.wavelets()) p.streams.push_back(std::move(st));
    }

  const std::uint32_t inv_d = hw::numerics::from_double(DType::F32, 1.0 / static_cast<double>(x.features));
  const std::uint32_t eps = hw::numerics::from_double(DType::F32, a.epsilon);
  VectorOptions async;
  async.async = true;
  for (std::uint32_t s = 0; s < G; ++s) {
    const auto c = static_cast<std::uint32_t>(map.count(s));
    const bool first = s == 0, last = s + 1 == G;
    const Band& band = l.bands[l.band_of[s]];
    auto program_for = [&](std::uint32_t col) {
      const bool first_col = col == 0, last_col = col + 1 == C;
      ProgramBuilder b(fmt::format("{}.{}.r{}.c{}", a.layer, to_string(a.phase), s, col));
      RowCode r{};
      r.accd = b.mem("acc", DType::F32, acc, t);
      r.meand = b.mem("mean", DType::F32, mean, t);
      r.rstdd = b.mem("rstd", DType::F32, rstd, t);
      r.tmpd = b.mem("tmp", DType::F32, tmp, t);
      r.xcol = b.mem("xcol", dt, x.addr, t);
      r.s_in = b.fabin("s_in", DType::F32, ctx.colors.south[(s + 1) % 2], t);
      r.s_out = b.fabout("s_out", DType::F32, ctx.colors.south[s % 2], t);
      r.bn_in = b.fabin("bn_in", DType::F32, ctx.colors.bcast_north, t);
      r.bn_out = b.fabout("bn_out", DType::F32, ctx.colors.bcast_north, t);
      const std::uint8_t main = b.task("main");
      b.entry(main);
      if (!wgrad && c > 0) {  // gamma (and beta) in, widened: gamma_f at par32 + 4f, beta_f 4c further
        const unsigned w_in = b.fabin("w_in", dt, ctx.colors.weight[l.position_of[s]], np * c);
        const unsigned pd = b.mem("params", dt, par, np * c);
        const unsigned p32 = b.mem("params32", DType::F32, par32, np * c);
        b.vop(Op::FMov, dt, dt, V::d(pd), V::d(w_in));
        widen(b, dt, p32, pd);
      }
      statistics(b, dt, r, c, t, acc, x.addr, first, last, inv_d, eps, ln);
      if (fwd) {
        // y = R(fma(xhat, gamma, beta)).
        const Tensor& y = ctx.tensors.at(a.out);
        const unsigned ycol = b.mem("ycol", dt, y.addr, t);
        feature_loop(b, c, t, r, x.addr, {{ycol, y.addr}}, par32, [&] {
          xhat(b, dt, r, r.tmpd, ln);
          b.ld(5, 0, 4, 2);
          b.ld(9, 4 * c, 4, 2);
          b.vop(Op::FMac, DType::F32, DType::F32, V::d(r.tmpd), V::r(9), V::d(r.tmpd), V::r(5));
          narrow(b, dt, ycol, r.tmpd);
        });
      } else if (data) {
        const Tensor& dy = ctx.tensors.at(a.dy);
        const Tensor& dx = ctx.tensors.at(a.dx);
        const unsigned dycol = b.mem("dycol", dt, dy.addr, t);
        const unsigned dxcol = b.mem("dxcol", dt, dx.addr, t);
        const unsigned xh = b.mem("xhat", DType::F32, wk, t);
        const unsigned gg = b.mem("g", DType::F32, wk + t * 4, t);
        const std::uint32_t means = wk + 2 * t * 4;  // mean_g, then mean_gx
        const unsigned mg = b.mem("mean_g", DType::F32, means, t);
        const unsigned mgx = b.mem("mean_gx", DType::F32, means + t * 4, t);
        const unsigned rnd = b.mem("rounded", dt, wk + 4 * t * 4, t);
        // The chained sums: (sum_g, sum_gx) for LayerNorm, sum_gx for RMSNorm, as one message.
        const unsigned chain = b.mem("chain", DType::F32, acc, nchain * t);
        const unsigned sum_g = b.mem("sum_g", DType::F32, acc, t);
        const unsigned sum_gx = b.mem("sum_gx", DType::F32, acc + (ln ? t * 4 : 0), t);
        const unsigned got = b.mem("means", DType::F32, ln ? means : means + t * 4, nchain * t);
        const unsigned s_in2 = b.fabin("s_in_sums", DType::F32, ctx.colors.south[(s + 1) % 2], nchain * t);
        const unsigned s_out2 = b.fabout("s_out_sums", DType::F32, ctx.colors.south[s % 2], nchain * t);
        const unsigned bn_in2 = b.fabin("bn_in_sums", DType::F32, ctx.colors.bcast_north, nchain * t);
        const unsigned bn_out2 = b.fabout("bn_out_sums", DType::F32, ctx.colors.bcast_north, nchain * t);
        const std::vector<std::pair<unsigned, std::uint32_t>> cols{{dycol, dy.addr}, {dxcol, dx.addr}};
        // g_f = W(dy_f) gamma_f (gamma_f in register 5) and xhat_f.
        auto xhat_and_g = [&] {
          xhat(b, dt, r, xh, ln);
          b.ld(5, 0, 4, 2);
          widen(b, dt, gg, dycol);
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(gg), V::d(gg), V::r(5));
        };
        chain_start(b, chain, s_in2, first);
        feature_loop(b, c, t, r, x.addr, cols, par32, [&] {
          xhat_and_g();
          if (ln) b.vop(Op::FAdd, DType::F32, DType::F32, V::d(sum_g), V::d(sum_g), V::d(gg));
          b.vop(Op::FMac, DType::F32, DType::F32, V::d(sum_gx), V::d(sum_gx), V::d(gg), V::d(xh));
        });
        if (!last) {
          b.vop(Op::FMov, DType::F32, DType::F32, V::d(s_out2), V::d(chain));
        } else {
          b.movf(13, DType::F32, inv_d);
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(chain), V::d(chain), V::r(13));
          b.vop(Op::FMov, DType::F32, DType::F32, V::d(bn_out2), V::d(chain), {}, {}, async);
        }
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(got), V::d(bn_in2));
        // dx = R(((g (- mean_g)) - xhat mean_gx) rstd), added to the gradient already there when asked.
        feature_loop(b, c, t, r, x.addr, cols, par32, [&] {
          xhat_and_g();
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(xh), V::d(xh), V::d(mgx));
          if (ln) b.vop(Op::FSub, DType::F32, DType::F32, V::d(gg), V::d(gg), V::d(mg));
          b.vop(Op::FSub, DType::F32, DType::F32, V::d(gg), V::d(gg), V::d(xh));
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(gg), V::d(gg), V::d(r.rstdd));
          if (!a.accumulate) {
            narrow(b, dt, dxcol, gg);
          } else {
            narrow(b, dt, rnd, gg);
            widen(b, dt, gg, rnd);
            widen(b, dt, xh, dxcol);
            b.vop(Op::FAdd, DType::F32, DType::F32, V::d(gg), V::d(xh), V::d(gg));
            narrow(b, dt, dxcol, gg);
          }
        });
      } else {
        // xhat and dy in fp32, feature-major, then per token (in order) every feature's chains.
        const Tensor& dy = ctx.tensors.at(a.dy);
        const unsigned dycol = b.mem("dycol", dt, dy.addr, t);
        const std::uint32_t xh_addr = wk, dy_addr = wk + static_cast<std::uint32_t>(cmax * t * 4);
        const std::uint32_t sums = wk + static_cast<std::uint32_t>(2 * cmax * t * 4);
        const std::uint32_t n = np * c;  // dgamma (and dbeta) of the row's features
        const unsigned xhd = b.mem("xhat", DType::F32, xh_addr, t);
        const unsigned dyw = b.mem("dy32", DType::F32, dy_addr, t);
        const unsigned xh_t = b.mem("xhat_tok", DType::F32, xh_addr, std::max(c, 1u), static_cast<std::int32_t>(t));
        const unsigned dy_t = b.mem("dy_tok", DType::F32, dy_addr, std::max(c, 1u), static_cast<std::int32_t>(t));
        const unsigned sd = b.mem("sums", DType::F32, sums, std::max(n, 1u));
        const unsigned dg = b.mem("dgamma", DType::F32, sums, std::max(c, 1u));
        const unsigned dbeta = b.mem("dbeta", DType::F32, sums + c * 4, std::max(c, 1u));
        const unsigned e_in = b.fabin("e_in", DType::F32, ctx.colors.east[(col + 1) % 2], std::max(n, 1u));
        const unsigned e_out = b.fabout("e_out", DType::F32, ctx.colors.east[col % 2], std::max(n, 1u));
        if (c > 0) {
          feature_loop(b, c, t, r, x.addr, {{dycol, dy.addr}, {xhd, xh_addr}, {dyw, dy_addr}}, 0, [&] {
            xhat(b, dt, r, xhd, ln);
            widen(b, dt, dyw, dycol);
          });
          if (first_col) {
            b.mov(3, 0);
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(sd), V::r(3));
          } else {
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(sd), V::d(e_in));
          }
          b.mov(1, t);
          const unsigned tok = b.label();
          b.bind(tok);
          b.vop(Op::FMac, DType::F32, DType::F32, V::d(dg), V::d(dg), V::d(dy_t), V::d(xh_t));
          if (ln) b.vop(Op::FAdd, DType::F32, DType::F32, V::d(dbeta), V::d(dbeta), V::d(dy_t));
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
          for (std::uint32_t u = band.slices.front(); u < s; ++u) above += np * map.count(u);
          for (std::uint32_t u = s + 1; u <= band.slices.back(); ++u) below += np * map.count(u);
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
            send(r.s_out, -1, n);
            send(r.s_out, static_cast<int>(r.s_in), above);
          } else if (s > band.anchor) {
            send(n_out, -1, n);
            send(n_out, static_cast<int>(n_in), below);
          } else {
            send(outd, -1, n);
            send(outd, static_cast<int>(r.s_in), above);
            send(outd, static_cast<int>(n_in), below);
          }
        }
      }
      b.ret();
      return b.finish();
    };
    // One program per column class: the weight gradient differs for the first and last
    // columns and by column parity; the other steps are the same everywhere.
    std::shared_ptr<const hw::isa::Program> programs[4];
    for (std::uint32_t col = 0; col < C; ++col) {
      const std::uint32_t cls = !wgrad ? 0 : col + 1 == C ? 3 : col == 0 ? 0 : 1 + col % 2;
      if (!programs[cls]) programs[cls] = program_for(!wgrad ? 0 : col);
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
