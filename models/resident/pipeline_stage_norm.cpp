// RMSNorm and LayerNorm stages: every row receives the whole input (the broadcast), so each
// takes the statistics over all of it in models/reference's order, then normalises its own
// features with gamma (and beta) of those features widened to fp32, kept in SRAM.

#include <algorithm>
#include <vector>

#include "hw/numerics/softfloat.h"
#include "models/compiler/kernels.h"
#include "models/compiler/sizes.h"
#include "models/resident/pipeline_lowering.h"
#include "models/resident/resident_program.h"

namespace wafersim::models::resident {
using compiler::ceil_div;
using hw::DType;
using hw::isa::Op;
using V = compiler::VOperand;
namespace nm = hw::numerics;

namespace {

// RMSNorm: 12 issues, or the sum of squares' steps and four vector instructions over its
// features; LayerNorm: 18, or four over the input and four over its features.
std::uint64_t norm_latency(PipelineCut cut, const PipelineStage& s, std::uint32_t y, std::uint32_t lanes) {
  const std::uint64_t c = row_outputs(cut, s, y).size();
  if (s.kind == StageKind::LayerNorm)
    return std::max<std::uint64_t>(18, 4 * ceil_div(s.f_in, lanes) + 4 * ceil_div(c, lanes));
  return std::max<std::uint64_t>(12, ceil_div(s.f_in, lanes) + 4 * ceil_div(c, lanes));
}

void place_norm(compiler::ProgramBuilder& b, const StageRow& r) {
  if (!r.place) return;
  auto widened = [&](const PipeBits& v) {
    std::vector<std::uint8_t> out;
    for (std::uint64_t k = r.o.lo; k < r.o.hi; ++k)
      append_bits(out, r.dt == DType::F32 ? v[k] : nm::convert(DType::F32, r.dt, v[k]), 4);
    return out;
  };
  b.data(r.fr.bias, widened(r.s.weight));  // gamma
  if (r.s.kind == StageKind::LayerNorm) b.data(r.fr.beta, widened(r.s.weight2));
}

// The sum at r2 stored as the statistic, rstd = rsqrt(stat x 1/d + eps) in place in the
// reference's steps (emit_rstd_in_place uses r4 to r15: the token task's r6, r10, r13 and r15
// saved around it).
void emit_rstd(compiler::ProgramBuilder& b, const StageRow& r) {
  const Frame& fr = r.fr;
  b.st(fr.stat, 2, 4);
  const unsigned saved[] = {6, 10, 13, 15};
  for (unsigned k = 0; k < 4; ++k) b.st(fr.save + 4 * k, saved[k], 4);
  compiler::emit_rstd_in_place(b, fr.stat, 1, nm::from_double(DType::F32, 1.0 / static_cast<double>(r.s.f_in)),
                               nm::from_double(DType::F32, r.s.epsilon));
  for (unsigned k = 0; k < 4; ++k) b.ld(saved[k], fr.save + 4 * k, 4);
}

// sum of x[f]^2 over every input in order from +0 (fdot), rstd, then the row's features
// R(widen(x[k]) x rstd x gamma[k]).
void emit_rmsnorm(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d) {
  const DType dt = r.dt;
  b.dsdr(Op::DsdBase, d.xvec, 6);
  b.mov(2, 0);
  b.reduce(Op::FDot, DType::F32, dt, 2, V::d(d.xvec), V::d(d.xvec));
  emit_rstd(b, r);
  const unsigned xs = b.mem("xslice", dt, r.fr.x, r.c);
  b.alu(Op::Add, 7, 6, static_cast<std::int64_t>(r.o.lo * r.esz));
  b.dsdr(Op::DsdBase, xs, 7);
  b.vop(Op::FCvt, DType::F32, dt, V::d(d.acc), V::d(xs));
  b.ld(5, r.fr.stat, 4);
  b.vop(Op::FMul, DType::F32, DType::F32, V::d(d.acc), V::d(d.acc), V::r(5));
  b.vop(Op::FMul, DType::F32, DType::F32, V::d(d.acc), V::d(d.acc), V::d(d.biasd));
}

// sum = chain of widen(x[f]) from +0, mean = sum x 1/d; c[f] = widen(x[f]) - mean; sq = fma
// chain of c[f]^2 from +0; rstd; then the row's features R(fma(c[k] x rstd, gamma[k], beta[k])).
void emit_layernorm(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d) {
  const DType dt = r.dt;
  const Frame& fr = r.fr;
  const unsigned wide = b.mem("wide", DType::F32, fr.wide, static_cast<std::uint32_t>(r.s.f_in));
  b.dsdr(Op::DsdBase, d.xvec, 6);
  if (dt == DType::F32)
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(wide), V::d(d.xvec));
  else
    b.vop(Op::FCvt, DType::F32, dt, V::d(wide), V::d(d.xvec));
  b.mov(2, 0);
  b.reduce(Op::FSum, DType::F32, DType::F32, 2, V::d(wide));
  b.movf(3, DType::F32, nm::from_double(DType::F32, 1.0 / static_cast<double>(r.s.f_in)));
  b.fscalar(Op::FMul, DType::F32, 2, 2, 3);
  b.vop(Op::FSub, DType::F32, DType::F32, V::d(wide), V::d(wide), V::r(2));
  b.mov(2, 0);
  b.reduce(Op::FDot, DType::F32, DType::F32, 2, V::d(wide), V::d(wide));
  emit_rstd(b, r);
  const unsigned cs = b.mem("cslice", DType::F32, static_cast<std::uint32_t>(fr.wide + r.o.lo * 4), r.c);
  const unsigned betad = b.mem("beta", DType::F32, fr.beta, r.c);
  b.ld(5, fr.stat, 4);
  b.vop(Op::FMul, DType::F32, DType::F32, V::d(d.acc), V::d(cs), V::r(5));
  b.vop(Op::FMac, DType::F32, DType::F32, V::d(d.acc), V::d(betad), V::d(d.acc), V::d(d.biasd));
}

void lower_norm(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d) {
  if (r.s.kind == StageKind::LayerNorm)
    emit_layernorm(b, r, d);
  else
    emit_rmsnorm(b, r, d);
  // Rounded to the model's format.
  if (r.dt == DType::F32)
    b.vop(Op::FMov, DType::F32, DType::F32, V::d(d.yd), V::d(d.acc));
  else
    b.vop(Op::FCvt, r.dt, DType::F32, V::d(d.yd), V::d(d.acc));
}

}  // namespace

StageLowering norm_lowering() { return {norm_latency, place_norm, lower_norm}; }

}  // namespace wafersim::models::resident
