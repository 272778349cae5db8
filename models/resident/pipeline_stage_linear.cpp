// Linear, gated and q/k/v stages: row y keeps its block of W (by the cut and the form) and of
// the bias widened to fp32, and per token computes acc = bias (or +0, or the sums of the row
// above), then fma(x[f], w[f][k], acc) over its inputs f in order in fp32, rounded once; a
// gated stage does so for the gate and then for up.

#include <algorithm>
#include <utility>
#include <vector>

#include "hw/numerics/softfloat.h"
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

std::uint64_t linear_latency(PipelineCut cut, const PipelineStage& s, std::uint32_t y, std::uint32_t lanes) {
  const std::uint64_t c = row_outputs(cut, s, y).size(), a = row_inputs(cut, s, y).size();
  const bool dot = s.form == LinearForm::Dot;
  const std::uint64_t issue = dot ? 5 * c : 3 * a;
  const std::uint64_t steps = dot ? c * ceil_div(a, lanes) : (a + 1) * ceil_div(c, lanes);
  return std::max(issue, steps) * (s.kind == StageKind::Gated ? 2 : 1);
}

// The row's block of W (f_in x f_out): by output (W's columns, the dot form) or by input.
std::vector<std::uint8_t> block(const StageRow& r, const PipeBits& w) {
  std::vector<std::uint8_t> out;
  const std::uint64_t f_out = r.s.f_out;
  if (r.s.form == LinearForm::Dot) {
    for (std::uint64_t k = r.o.lo; k < r.o.hi; ++k)
      for (std::uint64_t f = r.a.lo; f < r.a.hi; ++f) append_bits(out, w[f * f_out + k], r.esz);
  } else {
    for (std::uint64_t f = r.a.lo; f < r.a.hi; ++f)
      for (std::uint64_t k = r.o.lo; k < r.o.hi; ++k) append_bits(out, w[f * f_out + k], r.esz);
  }
  return out;
}

// The bias of the row's outputs widened to fp32.
std::vector<std::uint8_t> widened(const StageRow& r, const PipeBits& bias) {
  std::vector<std::uint8_t> out;
  for (std::uint64_t k = r.o.lo; k < r.o.hi; ++k)
    append_bits(out, r.dt == DType::F32 ? bias[k] : nm::convert(DType::F32, r.dt, bias[k]), 4);
  return out;
}

void place_linear(compiler::ProgramBuilder& b, const StageRow& r) {
  if (!r.place) return;
  const PipelineStage& s = r.s;
  std::vector<std::uint8_t> w = block(r, s.weight);
  if (!w.empty()) b.data(r.fr.w, std::move(w));
  if (s.bias && !r.sums_in) b.data(r.fr.bias, widened(r, s.bias_values));
  if (s.kind != StageKind::Gated) return;
  b.data(r.fr.w2, block(r, s.weight2));  // up's block and bias, in the gate's order
  if (s.bias2) b.data(r.fr.bias2, widened(r, s.bias_values2));
}

// One product over the input: W at w_addr, the bias (fp32) at bias_addr, the rounded outputs
// at y_addr (descriptor ydsd).
struct Pass {
  std::uint32_t w_addr = 0, bias_addr = 0;
  bool bias = false;
  std::uint32_t y_addr = 0;
  unsigned ydsd = 0;
};

// Per output k: r2 = bias (or +0), then fdot over the inputs in order, rounded and stored.
void emit_dot_pass(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d, const Pass& q) {
  b.dsdr(Op::DsdBase, d.xvec, 6);
  b.dsd(Op::DsdBase, d.wcol, q.w_addr);
  for (std::uint32_t k = 0; k < r.c; ++k) {
    if (q.bias)
      b.ld(2, q.bias_addr + 4 * k, 4);
    else
      b.mov(2, 0);
    b.reduce(Op::FDot, DType::F32, r.dt, 2, V::d(d.xvec), V::d(d.wcol));
    b.dsd(Op::DsdAdd, d.wcol, static_cast<std::int64_t>(r.s.f_in));
    if (r.dt != DType::F32) b.fcvt_scalar(r.dt, DType::F32, 2, 2);
    b.st(q.y_addr + k * r.esz, 2, r.esz);
  }
}

// acc = the sums from above, the bias or +0; then per input (unrolled) the input element as
// the scalar and the weight row as the vector; the sums passed down, or rounded.
void emit_fmac_pass(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d, const Pass& q) {
  const DType dt = r.dt;
  const bool other_bias = q.bias_addr != r.fr.bias;
  b.mov(3, 0);
  if (other_bias) b.dsd(Op::DsdBase, d.biasd, q.bias_addr);
  b.vop(Op::FMov, DType::F32, DType::F32, V::d(d.acc), r.sums_in ? V::d(d.sin) : q.bias ? V::d(d.biasd) : V::r(3));
  b.dsd(Op::DsdBase, d.wvec, q.w_addr);
  for (std::uint64_t f = r.a.lo; f < r.a.hi; ++f) {
    b.ld(1, static_cast<std::uint32_t>(f * r.esz), r.esz, 6);
    b.vop(Op::FMac, DType::F32, dt, V::d(d.acc), V::d(d.acc), V::d(d.wvec), V::r(1));
    b.dsd(Op::DsdAdd, d.wvec, r.c);
  }
  if (r.sums_out) b.vop(Op::FMov, DType::F32, DType::F32, V::d(d.sout), V::d(d.acc));
  if (r.round && dt == DType::F32) b.vop(Op::FMov, DType::F32, DType::F32, V::d(q.ydsd), V::d(d.acc));
  if (r.round && dt != DType::F32) b.vop(Op::FCvt, dt, DType::F32, V::d(q.ydsd), V::d(d.acc));
  if (other_bias) b.dsd(Op::DsdBase, d.biasd, r.fr.bias);
}

void lower_linear(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d) {
  auto pass = [&](const Pass& q) {
    if (r.s.form == LinearForm::Dot)
      emit_dot_pass(b, r, d, q);
    else
      emit_fmac_pass(b, r, d, q);
  };
  pass({r.fr.w, r.fr.bias, r.s.bias, r.fr.y, d.yd});
  if (r.s.kind == StageKind::Gated) pass({r.fr.w2, r.fr.bias2, r.s.bias2, r.fr.y2, d.yd2});
}

}  // namespace

StageLowering linear_lowering() { return {linear_latency, place_linear, lower_linear}; }

}  // namespace wafersim::models::resident
