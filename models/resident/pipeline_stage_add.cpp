// Residual add stages: the input is the previous stage's outputs followed by the carried skip;
// each row adds its features of the two in the model's format (the elementwise program's
// order). No parameters.

#include <algorithm>

#include "models/compiler/sizes.h"
#include "models/resident/pipeline_lowering.h"

namespace wafersim::models::resident {
using compiler::ceil_div;
using hw::isa::Op;
using V = compiler::VOperand;

namespace {

// 6 issues, or one vector instruction's steps over its features.
std::uint64_t add_latency(PipelineCut cut, const PipelineStage& s, std::uint32_t y, std::uint32_t lanes) {
  return std::max<std::uint64_t>(6, ceil_div(row_outputs(cut, s, y).size(), lanes));
}

void place_add(compiler::ProgramBuilder&, const StageRow&) {}

// y[k] = x[k] + skip[k] over the row's features.
void lower_add(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d) {
  const hw::DType dt = r.dt;
  const unsigned xa = b.mem("xa", dt, r.fr.x, r.c), xb = b.mem("xb", dt, r.fr.x, r.c);
  b.alu(Op::Add, 7, 6, static_cast<std::int64_t>(r.o.lo * r.esz));
  b.dsdr(Op::DsdBase, xa, 7);
  b.alu(Op::Add, 8, 6, static_cast<std::int64_t>((r.s.f_in + r.o.lo) * r.esz));
  b.dsdr(Op::DsdBase, xb, 8);
  b.vop(Op::FAdd, dt, dt, V::d(d.yd), V::d(xa), V::d(xb));
}

}  // namespace

StageLowering add_lowering() { return {add_latency, place_add, lower_add}; }

}  // namespace wafersim::models::resident
