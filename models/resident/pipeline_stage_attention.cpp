// Attention stages: row y keeps, per sequence of its band, the keys (model's format) and values
// (fp32) of the kv heads its output features read, `capacity` positions each (element (d, j)
// at d x capacity + j); per token it appends the token's keys and values at its position, then
// per head the scores over the sequence's cached keys, the softmax and its features' weighted
// sums of the values: models/reference attention_forward's order.

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "hw/numerics/softfloat.h"
#include "models/resident/pipeline_lowering.h"
#include "models/resident/resident_program.h"

namespace wafersim::models::resident {
using hw::DType;
using hw::isa::Op;
using V = compiler::VOperand;
namespace nm = hw::numerics;

namespace {

// At least (the first key only): the token's entry, the appends, per head the first key's
// score and the softmax, and its features' sums.
std::uint64_t attention_latency(PipelineCut cut, const PipelineStage& s, std::uint32_t y, std::uint32_t) {
  const compiler::Span o = row_outputs(cut, s, y);
  const std::uint64_t c = o.size();
  const std::uint64_t row_heads = c ? (o.hi - 1) / s.head_dim - o.lo / s.head_dim + 1 : 0;
  return 7 + 12 * kv_groups(s, y).size() + 23 * row_heads + 4 * c;
}

// The token table (every phase's own): per token its sequence's key and value blocks, its
// position and the keys it sees.
void place_attention(compiler::ProgramBuilder& b, const StageRow& r) {
  const Frame& fr = r.fr;
  std::vector<std::uint8_t> tb;
  const std::uint64_t per = fr.groups * r.s.head_dim * r.s.capacity;
  for (const std::uint64_t m : r.tokens) {
    const std::uint64_t seq = m / r.p.positions / r.p.replicas, pos = m % r.p.positions;  // seq: the band's
    append_bits(tb, static_cast<std::uint32_t>(fr.kc + seq * per * r.esz), 4);
    append_bits(tb, static_cast<std::uint32_t>(fr.vc + seq * per * 4), 4);
    append_bits(tb, static_cast<std::uint32_t>(pos), 4);
    append_bits(tb, static_cast<std::uint32_t>(pos + 1), 4);
  }
  b.data(fr.table, std::move(tb));
}

// r11: the token's table entry; r12, r14: its sequence's key and value blocks; r2: its
// position; r4: the keys it sees. Then the token's keys (as they are) and values (widened)
// appended at its position.
void emit_append(compiler::ProgramBuilder& b, const StageRow& r) {
  const PipelineStage& s = r.s;
  const DType dt = r.dt;
  const std::uint32_t esz = r.esz;
  const std::uint64_t hd = s.head_dim, C = s.capacity;
  const auto hdn = static_cast<std::uint32_t>(hd);
  const compiler::Span groups = kv_groups(s, r.y);
  b.mov(11, static_cast<std::int64_t>(r.tokens.size()));
  b.alur(Op::Sub, 11, 11, 15);
  b.alu(Op::Mul, 11, 11, 16);
  b.alu(Op::Add, 11, 11, r.fr.table);
  b.ld(12, 0, 4, 11);
  b.ld(14, 4, 4, 11);
  b.ld(2, 8, 4, 11);
  b.ld(4, 12, 4, 11);
  const unsigned kdst = b.mem("kdst", dt, r.fr.kc, hdn, static_cast<std::int32_t>(C));
  const unsigned vdst = b.mem("vdst", DType::F32, r.fr.vc, hdn, static_cast<std::int32_t>(C));
  const unsigned ksrc = b.mem("ksrc", dt, r.fr.x, hdn), vsrc = b.mem("vsrc", dt, r.fr.x, hdn);
  for (std::uint64_t g = groups.lo; g < groups.hi; ++g) {
    const std::uint64_t lg = g - groups.lo;
    b.alu(Op::Mul, 7, 2, esz);
    b.alur(Op::Add, 7, 7, 12);
    b.alu(Op::Add, 7, 7, static_cast<std::int64_t>(lg * hd * C * esz));
    b.dsdr(Op::DsdBase, kdst, 7);
    b.alu(Op::Add, 8, 6, static_cast<std::int64_t>((s.heads * hd + g * hd) * esz));
    b.dsdr(Op::DsdBase, ksrc, 8);
    b.vop(Op::FMov, dt, dt, V::d(kdst), V::d(ksrc));
    b.alu(Op::Mul, 7, 2, 4);
    b.alur(Op::Add, 7, 7, 14);
    b.alu(Op::Add, 7, 7, static_cast<std::int64_t>(lg * hd * C * 4));
    b.dsdr(Op::DsdBase, vdst, 7);
    b.alu(Op::Add, 8, 6, static_cast<std::int64_t>((s.heads * hd + s.kv_heads * hd + g * hd) * esz));
    b.dsdr(Op::DsdBase, vsrc, 8);
    if (dt == DType::F32)
      b.vop(Op::FMov, DType::F32, DType::F32, V::d(vdst), V::d(vsrc));
    else
      b.vop(Op::FCvt, DType::F32, dt, V::d(vdst), V::d(vsrc));
  }
}

// Per head of the row's features: the scores, the softmax in place, the features' sums.
void emit_heads(compiler::ProgramBuilder& b, const StageRow& r) {
  const PipelineStage& s = r.s;
  const DType dt = r.dt;
  const std::uint64_t hd = s.head_dim, C = s.capacity, group = s.heads / s.kv_heads;
  const auto hdn = static_cast<std::uint32_t>(hd);
  const compiler::Span o = r.o, groups = kv_groups(s, r.y);
  const unsigned qv = b.mem("q", dt, r.fr.x, hdn);
  const unsigned kv = b.mem("k", dt, r.fr.kc, hdn, static_cast<std::int32_t>(C));
  const unsigned scd = b.mem("scores", DType::F32, r.fr.sc, 1);
  const unsigned vv = b.mem("v", DType::F32, r.fr.vc, 1);
  b.dsdr(Op::DsdLen, scd, 4);
  b.dsdr(Op::DsdLen, vv, 4);
  b.movf(3, DType::F32, nm::from_double(DType::F32, 1.0 / std::sqrt(static_cast<double>(hd))));
  for (std::uint64_t h = r.c ? o.lo / hd : 1, hl = r.c ? (o.hi - 1) / hd : 0; h <= hl; ++h) {
    const std::uint64_t lg = h / group - groups.lo;
    // s_j = (q . k_j) x scale over the sequence's cached keys, in key order.
    b.alu(Op::Add, 8, 6, static_cast<std::int64_t>(h * hd * r.esz));
    b.dsdr(Op::DsdBase, qv, 8);
    b.alu(Op::Add, 7, 12, static_cast<std::int64_t>(lg * hd * C * r.esz));
    b.dsdr(Op::DsdBase, kv, 7);
    b.mov(7, r.fr.sc);
    b.movr(1, 4);
    const unsigned keys = b.label();
    b.bind(keys);
    b.mov(5, 0);
    b.reduce(Op::FDot, DType::F32, dt, 5, V::d(qv), V::d(kv));
    b.fscalar(Op::FMul, DType::F32, 5, 5, 3);
    b.st(0, 5, 4, 7);
    b.alu(Op::Add, 7, 7, 4);
    b.dsd(Op::DsdAdd, kv, 1);
    b.alu(Op::Sub, 1, 1, 1);
    b.branch(hw::isa::Cond::Ne, 1, 0, keys);
    // p = exp(s - max) x 1/(the sum in key order).
    b.movf(8, DType::F32, 0xFF800000u);
    b.reduce(Op::FRMax, DType::F32, DType::F32, 8, V::d(scd));
    b.vop(Op::FSub, DType::F32, DType::F32, V::d(scd), V::d(scd), V::r(8));
    b.vop(Op::FExp, DType::F32, DType::F32, V::d(scd), V::d(scd));
    b.mov(9, 0);
    b.reduce(Op::FSum, DType::F32, DType::F32, 9, V::d(scd));
    b.fscalar(Op::FRecip, DType::F32, 9, 9);
    b.vop(Op::FMul, DType::F32, DType::F32, V::d(scd), V::d(scd), V::r(9));
    // The row's features of this head: R(chain over keys of p_j v_j[d]).
    for (std::uint64_t f = std::max(o.lo, h * hd); f < std::min(o.hi, (h + 1) * hd); ++f) {
      b.alu(Op::Add, 7, 14, static_cast<std::int64_t>((lg * hd * C + (f - h * hd) * C) * 4));
      b.dsdr(Op::DsdBase, vv, 7);
      b.mov(9, 0);
      b.reduce(Op::FDot, DType::F32, DType::F32, 9, V::d(scd), V::d(vv));
      if (dt != DType::F32) b.fcvt_scalar(dt, DType::F32, 9, 9);
      b.st(static_cast<std::uint32_t>(r.fr.y + (f - o.lo) * r.esz), 9, r.esz);
    }
  }
}

void lower_attention(compiler::ProgramBuilder& b, const StageRow& r, const RowDescriptors&) {
  emit_append(b, r);
  emit_heads(b, r);
}

}  // namespace

StageLowering attention_lowering() { return {attention_latency, place_attention, lower_attention}; }

}  // namespace wafersim::models::resident
