// Softmax forward and backward in the weight-streaming placement: docs/compiler.md,
// "Softmax". A token's features lie down its column, so each reduction over them (max, sum
// of exponentials, and backward the sum of dy y) is one fp32 chain in feature order: the
// first used row starts it, sends the t partials south, every following row continues the
// chain it receives, and the last row broadcasts the result (or its reciprocal) north. The
// order is the reference's (models/reference softmax), so results match it bit for bit.

#include <fmt/format.h>

#include <algorithm>

#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"

namespace wafersim::models::compiler {
using hw::DType;
using hw::isa::Cond;
using hw::isa::Op;
using V = VOperand;

namespace {

// One row's reduction step over its features, shared by the three chains: start from the
// row above (or from `start` bits on the first row), apply `body` per feature, then pass the
// t values south, or on the last row finish them with `last` and broadcast them north.
struct Chain {
  ProgramBuilder& b;
  unsigned acc, s_in, s_out, bn_out;
  bool first, last;

  template <class Body, class Last>
  void run(std::uint32_t start_bits, std::uint32_t features, Body body, Last finish) {
    if (first) {
      b.movf(3, DType::F32, start_bits);
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(acc), V::r(3));
    } else {
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(acc), V::d(s_in));
    }
    if (features > 0) {
      b.mov(1, features);
      const unsigned loop = b.label();
      b.bind(loop);
      body();
      b.alu(Op::Sub, 1, 1, 1);
      b.branch(Cond::Ne, 1, 0, loop);
    }
    if (!last) {
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(s_out), V::d(acc));
      return;
    }
    finish();
    VectorOptions o;
    o.async = true;
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(bn_out), V::d(acc), {}, {}, o);
  }
};

}  // namespace

LayerProgram lower_softmax(KernelContext& ctx, const SoftmaxArgs& a) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe;
  const DType dt = ctx.dtype;
  const bool fwd = a.phase == Phase::Forward;
  const Tensor& y = ctx.tensors.at(fwd ? a.x : a.y);
  const FeatureMap& map = shared_map(
      ctx, a.layer, fwd ? std::vector<std::uint32_t>{a.x, a.out} : std::vector<std::uint32_t>{a.y, a.dy, a.dx}, true);
  const std::uint64_t cmax = map.max_count();
  const auto& lat = ctx.target.wafer.pe.latency;
  const std::uint64_t exp_c = lat.exp.count(), recip_c = lat.recip.count();

  LayerProgram p;
  p.layer = a.layer;
  p.kind = LayerKind::Softmax;
  p.phase = a.phase;
  p.operands = fwd ? std::vector<std::uint32_t>{a.x, a.out} : std::vector<std::uint32_t>{a.y, a.dy, a.dx};
  const std::uint32_t acc = ctx.scratch("acc", std::uint64_t{t} * 4);
  const std::uint32_t stat = ctx.scratch("stat", std::uint64_t{t} * 4);
  // Forward: the features in fp32 (then their exponentials); backward: two token rows.
  const std::uint64_t big = fwd ? cmax * t * 4 : 2 * std::uint64_t{t} * 4 + std::uint64_t{t} * hw::size_of(dt);
  const std::uint32_t work = ctx.scratch("work", big);
  const std::uint64_t scratch = 2 * std::uint64_t{t} * 4 + big;

  const std::uint32_t lanes32 = ctx.target.lanes(DType::F32);
  const std::uint64_t tok_steps = ceil_div(t, lanes32);
  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t c = map.count(s);
    const bool last = s + 1 == G;
    sram[s] = (fwd ? 2 : 3) * c * t * hw::size_of(dt) + scratch;
    Work k;
    const std::uint32_t chains = fwd ? 2 : 1;
    if (fwd) {
      // widen, max, subtract, exp (iterative), sum, scale, narrow; 1/sum on the last row.
      k.datapath_steps = ceil_div(c * t, lanes32) + 5 * c * tok_steps + c * t * exp_c + (last ? t * recip_c : 0);
      k.issue = 18 * c;
    } else {
      // the dy y chain, then per feature widen twice, subtract, multiply, narrow.
      k.datapath_steps = 6 * c * tok_steps;
      k.issue = 16 * c;
    }
    k.ramp_in = chains * ((s > 0 ? t : 0) + t);
    k.ramp_out = chains * t;
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.issue = std::max(w.issue, k.issue);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.ramp_out = std::max(w.ramp_out, k.ramp_out);
  }
  w.flops = (fwd ? 5 : 4) * l.tokens * y.features;
  finish_layer(ctx, p, sram);
  p.colors = 3;
  if (!ctx.emit) return p;

  for (std::uint32_t s = 0; s < G; ++s) {
    const auto c = static_cast<std::uint32_t>(map.count(s));
    ProgramBuilder b(fmt::format("{}.{}.r{}", a.layer, fwd ? "forward" : "backward", s));
    const unsigned accd = b.mem("acc", DType::F32, acc, t);
    const unsigned statd = b.mem("stat", DType::F32, stat, t);
    const unsigned s_in = b.fabin("s_in", DType::F32, ctx.colors.south[(s + 1) % 2], t);
    const unsigned s_out = b.fabout("s_out", DType::F32, ctx.colors.south[s % 2], t);
    const unsigned bn_in = b.fabin("bn_in", DType::F32, ctx.colors.bcast_north, t);
    const unsigned bn_out = b.fabout("bn_out", DType::F32, ctx.colors.bcast_north, t);
    const std::uint8_t main = b.task("main");
    b.entry(main);
    Chain ch{b, accd, s_in, s_out, bn_out, s == 0, s + 1 == G};
    // Every row (the last one too: the broadcast comes back to its own ramp) takes the result.
    auto take = [&] { b.vop(Op::FMov, DType::F32, DType::F32, V::d(statd), V::d(bn_in)); };
    if (fwd) {
      const Tensor& out = ctx.tensors.at(a.out);
      const unsigned eall = b.mem("e32", DType::F32, work, std::max(c * t, 1u));
      const unsigned xall = b.mem("x", dt, y.addr, std::max(c * t, 1u));
      const unsigned ecol = b.mem("ecol", DType::F32, work, t);
      const unsigned ycol = b.mem("ycol", dt, out.addr, t);
      if (c > 0) b.vop(Op::FCvt, DType::F32, dt, V::d(eall), V::d(xall));
      // m = max over features (from -inf: the same as starting from the first feature).
      ch.run(
          0xFF800000u, c,
          [&] {
            b.vop(Op::FMax, DType::F32, DType::F32, V::d(accd), V::d(accd), V::d(ecol));
            b.dsd(Op::DsdAdd, ecol, t);
          },
          [] {});
      take();
      if (c > 0) {
        b.dsd(Op::DsdBase, ecol, work);
        b.mov(1, c);
        const unsigned loop = b.label();
        b.bind(loop);
        b.vop(Op::FSub, DType::F32, DType::F32, V::d(ecol), V::d(ecol), V::d(statd));
        b.dsd(Op::DsdAdd, ecol, t);
        b.alu(Op::Sub, 1, 1, 1);
        b.branch(Cond::Ne, 1, 0, loop);
        b.vop(Op::FExp, DType::F32, DType::F32, V::d(eall), V::d(eall));
        b.dsd(Op::DsdBase, ecol, work);
      }
      // l = chain over features of e from +0; the last row takes 1/l.
      ch.run(
          0, c,
          [&] {
            b.vop(Op::FAdd, DType::F32, DType::F32, V::d(accd), V::d(accd), V::d(ecol));
            b.dsd(Op::DsdAdd, ecol, t);
          },
          [&] { b.vop(Op::FRecip, DType::F32, DType::F32, V::d(accd), V::d(accd)); });
      take();
      if (c > 0) {
        b.dsd(Op::DsdBase, ecol, work);
        b.mov(1, c);
        const unsigned loop = b.label();
        b.bind(loop);
        b.vop(Op::FMul, DType::F32, DType::F32, V::d(ecol), V::d(ecol), V::d(statd));
        b.vop(Op::FCvt, dt, DType::F32, V::d(ycol), V::d(ecol));
        b.dsd(Op::DsdAdd, ecol, t);
        b.dsd(Op::DsdAdd, ycol, t);
        b.alu(Op::Sub, 1, 1, 1);
        b.branch(Cond::Ne, 1, 0, loop);
      }
    } else {
      const Tensor& dy = ctx.tensors.at(a.dy);
      const Tensor& dx = ctx.tensors.at(a.dx);
      const unsigned ycol = b.mem("ycol", dt, y.addr, t);
      const unsigned gcol = b.mem("dycol", dt, dy.addr, t);
      const unsigned xcol = b.mem("dxcol", dt, dx.addr, t);
      const unsigned ta = b.mem("ta", DType::F32, work, t);
      const unsigned tb = b.mem("tb", DType::F32, work + t * 4, t);
      const unsigned tn = b.mem("tn", dt, work + t * 8, t);
      // c = chain over features of dy y (fused, from +0).
      ch.run(
          0, c,
          [&] {
            b.vop(Op::FMac, DType::F32, dt, V::d(accd), V::d(accd), V::d(gcol), V::d(ycol));
            b.dsd(Op::DsdAdd, gcol, t);
            b.dsd(Op::DsdAdd, ycol, t);
          },
          [] {});
      take();
      if (c > 0) {
        b.dsd(Op::DsdBase, gcol, dy.addr);
        b.dsd(Op::DsdBase, ycol, y.addr);
        b.mov(1, c);
        const unsigned loop = b.label();
        b.bind(loop);
        // dx = R(y (dy - c)), added in the storage format to a gradient already there.
        b.vop(Op::FCvt, DType::F32, dt, V::d(ta), V::d(gcol));
        b.vop(Op::FSub, DType::F32, DType::F32, V::d(ta), V::d(ta), V::d(statd));
        b.vop(Op::FCvt, DType::F32, dt, V::d(tb), V::d(ycol));
        b.vop(Op::FMul, DType::F32, DType::F32, V::d(ta), V::d(tb), V::d(ta));
        if (a.accumulate) {
          b.vop(Op::FCvt, dt, DType::F32, V::d(tn), V::d(ta));
          b.vop(Op::FAdd, dt, dt, V::d(xcol), V::d(xcol), V::d(tn));
        } else {
          b.vop(Op::FCvt, dt, DType::F32, V::d(xcol), V::d(ta));
        }
        b.dsd(Op::DsdAdd, gcol, t);
        b.dsd(Op::DsdAdd, ycol, t);
        b.dsd(Op::DsdAdd, xcol, t);
        b.alu(Op::Sub, 1, 1, 1);
        b.branch(Cond::Ne, 1, 0, loop);
      }
    }
    b.ret();
    place_on_row(p, l, s, b.finish());
  }
  return p;
}

}  // namespace wafersim::models::compiler
