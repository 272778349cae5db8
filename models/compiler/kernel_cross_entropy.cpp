// Cross-entropy in the weight-streaming placement: docs/compiler.md, "Cross-entropy".
// Forward: per token, the maximum of the logits (a column chain of fmax, exact in any order),
// broadcast up; the sum of exp(x - max) as one fp32 chain down the column in feature order
// (the reference's order); the label's logit from the row that holds it. The last row
// broadcasts (max, sum, label logit) up to every row: the layer's per-token output. The PE
// has no logarithm, so the host takes log(sum) when it reads the loss (docs/reference.md,
// "log"). Backward: every row recomputes exp(x - max) / sum from that output, subtracts 1 at
// the label and scales by 1/R.

#include <fmt/format.h>

#include <algorithm>

#include "hw/numerics/softfloat.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "sim/errors.h"

namespace wafersim::models::compiler {
using hw::DType;
using hw::isa::Cond;
using hw::isa::Op;
using V = VOperand;

LayerProgram lower_cross_entropy(KernelContext& ctx, const CrossEntropyArgs& a) {
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe;
  const DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const Tensor& x = ctx.tensors.at(a.logits);
  const Tensor& labels = ctx.tensors.at(a.labels);
  const Tensor& loss = ctx.tensors.at(a.loss);
  const bool fwd = a.phase == Phase::Forward;
  const FeatureMap& map = shared_map(
      ctx, a.layer, fwd ? std::vector<std::uint32_t>{a.logits} : std::vector<std::uint32_t>{a.logits, a.dlogits}, true);
  const std::uint64_t cmax = map.max_count();
  if (loss.width != 3) throw std::logic_error("cross-entropy: the per-token output holds (max, sum, label logit)");
  if (a.accumulate)
    throw sim::InputError(
        fmt::format("layer '{}': code generation needs the logits to be read by the cross-entropy only (their gradient "
                    "is not summed)",
                    a.layer));

  LayerProgram p;
  p.layer = a.layer;
  p.kind = LayerKind::CrossEntropy;
  p.phase = a.phase;
  p.operands = {a.logits, a.labels, a.loss};
  if (!fwd) p.operands.push_back(a.dlogits);
  const std::uint32_t mx = ctx.scratch("max", std::uint64_t{t} * 4);
  const std::uint32_t acc = ctx.scratch("sum", std::uint64_t{t} * 4);
  const std::uint32_t tmp = ctx.scratch("tmp", std::uint64_t{t} * 4);
  const std::uint32_t sel = ctx.scratch("label_logit", std::uint64_t{t} * esz);
  const std::uint32_t res = ctx.scratch("result", std::uint64_t{t} * 12);
  const std::uint64_t block = fwd ? 0 : cmax * t * 4;
  const std::uint32_t pb = fwd ? 0 : ctx.scratch("probabilities", block);
  const std::uint64_t scratch = std::uint64_t{t} * (24 + esz) + block;

  const std::uint32_t lanes32 = ctx.target.lanes(DType::F32);
  const auto& lat = ctx.target.wafer.pe.latency;
  std::vector<std::uint64_t> sram(G);
  Work& w = p.work;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t c = map.count(s);
    sram[s] = c * t * esz * (fwd ? 1 : 2) + 3 * std::uint64_t{t} * 4 + std::uint64_t{t} * 4 + scratch;
    Work k;
    const std::uint64_t v32 = ceil_div(t, lanes32);
    // exp is iterative: one element per exp latency.
    k.datapath_steps = c * t * lat.exp.count() + c * (fwd ? 3 : 2) * v32;
    k.issue = c ? (fwd ? 8 : 6) * c + 6 * t : 0;
    k.ramp_in = fwd ? (s > 0 ? 2 * t + std::uint64_t{t} * esz / 4 : 0) + t + 3 * t : 0;
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.issue = std::max(w.issue, k.issue);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
  }
  w.flops = 4 * l.tokens * x.features;
  finish_layer(ctx, p, sram);
  p.colors = fwd ? 3 : 0;
  if (!ctx.emit) return p;

  const std::uint32_t neg_inf = 0xFF800000u, one = hw::numerics::from_double(DType::F32, 1.0);
  const std::uint32_t inv_rows = hw::numerics::from_double(DType::F32, 1.0 / static_cast<double>(l.tokens));
  for (std::uint32_t s = 0; s < G; ++s) {
    const auto c = static_cast<std::uint32_t>(map.count(s));
    const std::uint64_t lo = c ? map.runs(s)[0].lo : 0;
    const bool first = s == 0, last = s + 1 == G;
    ProgramBuilder b(fmt::format("{}.{}.r{}", a.layer, to_string(a.phase), s));
    const unsigned xcol = b.mem("xcol", dt, x.addr, t);
    const unsigned mxd = b.mem("max", DType::F32, mx, t);
    const unsigned accd = b.mem("sum", DType::F32, acc, t);
    const unsigned tmpd = b.mem("tmp", DType::F32, tmp, t);
    const unsigned seld = b.mem("label_logit", dt, sel, t);
    const unsigned s_in32 = b.fabin("s_in", DType::F32, ctx.colors.south[(s + 1) % 2], t);
    const unsigned s_out32 = b.fabout("s_out", DType::F32, ctx.colors.south[s % 2], t);
    const unsigned s_in16 = b.fabin("s_in_x", dt, ctx.colors.south[(s + 1) % 2], t);
    const unsigned s_out16 = b.fabout("s_out_x", dt, ctx.colors.south[s % 2], t);
    const unsigned bn_in = b.fabin("bn_in", DType::F32, ctx.colors.bcast_north, t);
    const unsigned bn_out = b.fabout("bn_out", DType::F32, ctx.colors.bcast_north, t);
    const unsigned lossd = b.mem("loss", DType::F32, loss.addr, 3 * t);
    const unsigned res_k = b.mem("result_k", DType::F32, res, t, 3);
    const unsigned loss_k = b.mem("loss_k", DType::F32, loss.addr, t, 3);
    const unsigned resd = b.mem("result", DType::F32, res, 3 * t);
    const std::uint8_t main = b.task("main");
    b.entry(main);
    VectorOptions async;
    async.async = true;
    // exp(W(x_f) - max) into tmp, for the feature xcol points at.
    auto exp_term = [&] {
      widen(b, dt, tmpd, xcol);
      b.vop(Op::FSub, DType::F32, DType::F32, V::d(tmpd), V::d(tmpd), V::d(mxd));
      b.vop(Op::FExp, DType::F32, DType::F32, V::d(tmpd), V::d(tmpd));
    };
    auto feature_loop = [&](auto&& body) {
      if (c == 0) return;
      b.dsd(Op::DsdBase, xcol, x.addr);
      b.mov(1, c);
      const unsigned loop = b.label();
      b.bind(loop);
      body();
      b.dsd(Op::DsdAdd, xcol, t);
      b.alu(Op::Sub, 1, 1, 1);
      b.branch(Cond::Ne, 1, 0, loop);
    };
    // For each token whose label this row holds (register 3: label - lo), body(register 4:
    // the byte offset (label - lo) t + i of its element, register 5: i).
    auto label_loop = [&](std::uint32_t elem_size, auto&& body) {
      if (c == 0) return;
      b.mov(5, 0);
      const unsigned tok = b.label(), skip = b.label();
      b.bind(tok);
      b.alu(Op::Shl, 6, 5, 2);
      b.ld(3, labels.addr, 4, 6);
      b.alu(Op::Sub, 3, 3, static_cast<std::int64_t>(lo));
      b.branch(Cond::Geu, 3, c, skip);
      b.alu(Op::Mul, 4, 3, t);
      b.alur(Op::Add, 4, 4, 5);
      b.alu(Op::Mul, 4, 4, elem_size);
      body();
      b.bind(skip);
      b.alu(Op::Add, 5, 5, 1);
      b.branch(Cond::Ne, 5, t, tok);
    };
    if (fwd) {
      // 1. max: this row's features, then the chain down the column, broadcast up.
      b.movf(7, DType::F32, neg_inf);
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(mxd), V::r(7));
      feature_loop([&] {
        widen(b, dt, tmpd, xcol);
        b.vop(Op::FMax, DType::F32, DType::F32, V::d(mxd), V::d(mxd), V::d(tmpd));
      });
      if (!first) b.vop(Op::FMax, DType::F32, DType::F32, V::d(mxd), V::d(mxd), V::d(s_in32));
      if (!last) {
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(s_out32), V::d(mxd));
      } else {
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(bn_out), V::d(mxd), {}, {}, async);
      }
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(mxd), V::d(bn_in));
      // 2. the sum of exponentials: one chain in feature order.
      if (first) {
        b.mov(7, 0);
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(accd), V::r(7));
      } else {
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(accd), V::d(s_in32));
      }
      feature_loop([&] {
        exp_term();
        b.vop(Op::FAdd, DType::F32, DType::F32, V::d(accd), V::d(accd), V::d(tmpd));
      });
      if (!last) b.vop(Op::FMov, DType::F32, DType::F32, V::d(s_out32), V::d(accd));
      // 3. the label's logit (storage format) from the row that holds it, passed down.
      if (first) {
        b.mov(7, 0);
        b.vop(Op::FMov, dt, dt, V::d(seld), V::r(7));
      } else {
        b.vop(Op::FMov, dt, dt, V::d(seld), V::d(s_in16));
      }
      label_loop(esz, [&] {
        b.ld(7, x.addr, esz, 4);
        b.alu(Op::Mul, 6, 5, esz);
        b.st(sel, 7, esz, 6);
      });
      if (!last) {
        b.vop(Op::FMov, dt, dt, V::d(s_out16), V::d(seld));
      } else {
        // 4. (max, sum, label logit) per token, up to every row.
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(res_k), V::d(mxd));
        b.dsd(Op::DsdBase, res_k, res + 4);
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(res_k), V::d(accd));
        b.dsd(Op::DsdBase, res_k, res + 8);
        widen(b, dt, res_k, seld);
        b.dsd(Op::DsdLen, bn_out, 3 * t);
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(bn_out), V::d(resd), {}, {}, async);
      }
      b.dsd(Op::DsdLen, bn_in, 3 * t);
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(lossd), V::d(bn_in));
    } else {
      // dx = R((exp(W(x) - max) recip(sum) - [label]) (1/R)), from the forward's output.
      const Tensor& dx = ctx.tensors.at(a.dlogits);
      const std::uint32_t n = c * t;
      if (n > 0) {
        b.vop(Op::FMov, DType::F32, DType::F32, V::d(mxd), V::d(loss_k));
        b.dsd(Op::DsdBase, loss_k, loss.addr + 4);
        b.vop(Op::FRecip, DType::F32, DType::F32, V::d(accd), V::d(loss_k));
        const unsigned pcol = b.mem("pcol", DType::F32, pb, t);
        const unsigned pall = b.mem("p", DType::F32, pb, n);
        const unsigned dxall = b.mem("dx", dt, dx.addr, n);
        b.dsd(Op::DsdBase, pcol, pb);
        feature_loop([&] {
          exp_term();
          b.vop(Op::FMul, DType::F32, DType::F32, V::d(pcol), V::d(tmpd), V::d(accd));
          b.dsd(Op::DsdAdd, pcol, t);
        });
        b.movf(8, DType::F32, one);
        label_loop(4, [&] {
          b.ld(7, pb, 4, 4);
          b.fscalar(Op::FSub, DType::F32, 7, 7, 8);
          b.st(pb, 7, 4, 4);
        });
        b.movf(8, DType::F32, inv_rows);
        b.vop(Op::FMul, DType::F32, DType::F32, V::d(pall), V::d(pall), V::r(8));
        narrow(b, dt, dxall, pall);
      }
    }
    b.ret();
    place_on_row(p, l, s, b.finish());
  }
  return p;
}

}  // namespace wafersim::models::compiler
