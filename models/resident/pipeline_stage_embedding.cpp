// Embedding stages (the first stage): row y keeps its features of every row of the table (and
// of the position table, with learned positions); per token it points a descriptor at the
// token's row and copies it into its outputs, or adds the position's row in the model's format:
// models/reference embedding_forward's.

#include <algorithm>
#include <utility>
#include <vector>

#include "models/compiler/sizes.h"
#include "models/resident/pipeline_lowering.h"
#include "models/resident/resident_program.h"

namespace wafersim::models::resident {
using compiler::ceil_div;
using hw::isa::Op;
using V = compiler::VOperand;

namespace {

// 5 issues, or one vector instruction's steps over its features.
std::uint64_t embedding_latency(PipelineCut cut, const PipelineStage& s, std::uint32_t y, std::uint32_t lanes) {
  return std::max<std::uint64_t>(5, ceil_div(row_outputs(cut, s, y).size(), lanes));
}

void place_embedding(compiler::ProgramBuilder& b, const StageRow& r) {
  if (!r.place) return;
  const PipelineStage& s = r.s;
  // The row's features of every row of a table (`count` rows of f_out).
  auto features = [&](const PipeBits& table, std::uint64_t count) {
    std::vector<std::uint8_t> out;
    for (std::uint64_t v = 0; v < count; ++v)
      for (std::uint64_t k = r.o.lo; k < r.o.hi; ++k) append_bits(out, table[v * s.f_out + k], r.esz);
    return out;
  };
  if (s.positions) b.data(r.fr.w2, features(s.weight2, s.capacity));
  std::vector<std::uint8_t> w = features(s.weight, s.vocabulary);
  if (!w.empty()) b.data(r.fr.w, std::move(w));
}

// The token's id at r6 (its position after it): the table's row, a copy of the row's features
// or their sum with the position's row.
void lower_embedding(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors& d) {
  const hw::DType dt = r.dt;
  const auto row_bytes = std::int64_t{r.c} * r.esz;
  const unsigned row = b.mem("row", dt, r.fr.w, r.c);
  b.ld(2, 0, 4, 6);
  b.alu(Op::Mul, 2, 2, row_bytes);
  b.alu(Op::Add, 2, 2, r.fr.w);
  b.dsdr(Op::DsdBase, row, 2);
  if (!r.s.positions) {
    b.vop(Op::FMov, dt, dt, V::d(d.yd), V::d(row));
    return;
  }
  const unsigned prow = b.mem("prow", dt, r.fr.w2, r.c);
  b.ld(3, 4, 4, 6);
  b.alu(Op::Mul, 3, 3, row_bytes);
  b.alu(Op::Add, 3, 3, r.fr.w2);
  b.dsdr(Op::DsdBase, prow, 3);
  b.vop(Op::FAdd, dt, dt, V::d(d.yd), V::d(row), V::d(prow));
}

}  // namespace

StageLowering embedding_lowering() { return {embedding_latency, place_embedding, lower_embedding}; }

}  // namespace wafersim::models::resident
