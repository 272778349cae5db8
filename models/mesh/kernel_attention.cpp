// Decode attention on the mesh (docs/compiler.md, "Mesh placement"). Row r holds dimensions
// of one key/value head and of its query heads; column c holds the KV cache of positions
// p = c, c + C, c + 2C, ... (dimension-major: keys in the model's format, values widened to
// fp32), so every PE's slice of the cache grows by one position every C tokens and no PE fills
// first. The token's key and value are appended on column position mod C; then every PE forms
// its partial scores (its dimensions, its positions, each query head of the group: fp32 FMACs
// over the positions on one ordered microthread), the rows of a key/value head reduce them to
// the segment's root row (a column segment), that row takes the softmax (its max and sum
// allreduced along the row, over the positions) and broadcasts the probabilities back, and
// every PE's weighted values are reduced along its row.

#include <fmt/format.h>

#include <cmath>

#include "hw/numerics/softfloat.h"
#include "models/compiler/compiled_model.h"
#include "models/compiler/program_builder.h"
#include "models/mesh/kernel_common.h"
#include "models/mesh/kernels.h"

namespace wafersim::models::mesh {
using compiler::ProgramBuilder;
using compiler::VectorOptions;
using compiler::VOperand;
using hw::DType;
using hw::isa::Op;

namespace {

struct Pe {
  std::uint32_t nd = 0, slots = 0;  // its dimensions, its cached positions (the new one included)
  bool append = false;              // the token's position is on its column
};

// On a segment's root row: the scores (scaled) of this column's positions, their softmax over
// every position of the row (max and sum allreduced along it): p in place of the scores.
void softmax(ProgramBuilder& b, const MeshLayout& l, std::uint32_t S, const LineRole& row_role) {
  const Addrs& a = l.addrs();
  const std::uint32_t hq = static_cast<std::uint32_t>(l.shape().group_heads());
  const std::uint32_t scale =
      hw::numerics::from_double(DType::F32, 1.0 / std::sqrt(static_cast<double>(l.shape().head_dim)));
  const std::uint32_t mx = a.stat, sum = a.stat + hq * 4;
  if (S) {
    b.movf(12, DType::F32, scale);
    b.vop(Op::FMul, DType::F32, DType::F32, VOperand::d(b.mem("scores", DType::F32, a.sc, hq * S)),
          VOperand::d(b.mem("sm_part", DType::F32, a.acc, hq * S)), VOperand::r(12));
  }
  for (std::uint32_t i = 0; i < hq; ++i) {
    b.movr(2, 13);
    if (S)
      b.reduce(Op::FRMax, DType::F32, DType::F32, 2,
               VOperand::d(b.mem(fmt::format("s{}", i), DType::F32, a.sc + i * S * 4, S)));
    b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(b.mem(fmt::format("m{}", i), DType::F32, mx + i * 4, 1)),
          VOperand::r(2));
  }
  emit_allreduce(b, l.rows(), row_role, mx, hq, Op::FMax, "max");
  for (std::uint32_t i = 0; i < hq; ++i) {
    b.movr(2, 14);
    if (S) {
      const unsigned si = b.mem(fmt::format("e{}", i), DType::F32, a.sc + i * S * 4, S);
      b.ld(3, mx + i * 4);
      b.vop(Op::FSub, DType::F32, DType::F32, VOperand::d(si), VOperand::d(si), VOperand::r(3));
      b.vop(Op::FExp, DType::F32, DType::F32, VOperand::d(si), VOperand::d(si));
      b.movr(2, 15);
      b.reduce(Op::FSum, DType::F32, DType::F32, 2, VOperand::d(si));
    }
    b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(b.mem(fmt::format("l{}", i), DType::F32, sum + i * 4, 1)),
          VOperand::r(2));
  }
  emit_allreduce(b, l.rows(), row_role, sum, hq, Op::FAdd, "sum");
  if (!S) return;
  for (std::uint32_t i = 0; i < hq; ++i) {
    const unsigned pi = b.mem(fmt::format("pr{}", i), DType::F32, a.sc + i * S * 4, S);
    b.ld(3, sum + i * 4);
    b.fscalar(Op::FRecip, DType::F32, 3, 3);
    b.vop(Op::FMul, DType::F32, DType::F32, VOperand::d(pi), VOperand::d(pi), VOperand::r(3));
  }
}

std::shared_ptr<const hw::isa::Program> build(const MeshLayout& l, const std::string& name, std::uint32_t layer,
                                              std::uint64_t position, const Pe& pe, const LineRole& seg_role,
                                              const LineRole& row_role) {
  const Addrs& a = l.addrs();
  const LayerAddrs& la = a.layers[layer];
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const std::uint32_t e = l.esize(), hq = static_cast<std::uint32_t>(l.shape().group_heads());
  const std::uint32_t nd = pe.nd, S = pe.slots, smax = l.slots_max, nq = hq * nd;
  ProgramBuilder b(name);
  b.entry(b.task("main"));
  const std::uint8_t scores = b.declare_task("scores");
  b.movf(15, DType::F32, 0);            // +0
  b.movf(14, DType::F32, 0x80000000u);  // -0: adds nothing
  b.movf(13, DType::F32, 0xFF800000u);  // -inf
  if (pe.append && nd) {
    const std::uint32_t slot = static_cast<std::uint32_t>(position / l.region().columns);
    const unsigned kc = b.mem("k_new", dt, la.kc + slot * e, nd, static_cast<std::int32_t>(smax));
    const unsigned vc = b.mem("v_new", DType::F32, la.vc + slot * 4, nd, static_cast<std::int32_t>(smax));
    b.vop(Op::FMov, dt, dt, VOperand::d(kc), VOperand::d(b.mem("k", dt, a.qkv + nq * e, nd)));
    b.vop(Op::FCvt, DType::F32, dt, VOperand::d(vc), VOperand::d(b.mem("v", dt, a.qkv + (nq + nd) * e, nd)));
  }
  const unsigned part = b.mem("part", DType::F32, a.acc, hq * S);
  if (S && nd) {
    b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(part), VOperand::r(15));
    const unsigned key = b.mem("key", dt, la.kc, S);
    for (std::uint32_t i = 0; i < hq; ++i) {
      const unsigned pi = b.mem(fmt::format("part{}", i), DType::F32, a.acc + i * S * 4, S);
      for (std::uint32_t d = 0; d < nd; ++d) {
        b.ld(1, a.qkv + (i * nd + d) * e, e);
        VectorOptions o;
        o.async = true;
        o.ut = 0;
        if (i + 1 == hq && d + 1 == nd) {
          o.on_done = hw::isa::OnDone::Activate;
          o.task = scores;
        }
        b.vop(Op::FMac, DType::F32, dt, VOperand::d(pi), VOperand::d(pi), VOperand::d(key), VOperand::r(1), o);
        b.dsd(Op::DsdAdd, key, d + 1 < nd ? smax : -static_cast<std::int32_t>((nd - 1) * smax));
      }
    }
  } else {
    if (S) b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(part), VOperand::r(14));
    b.activate(scores);
  }
  b.ret();
  b.start(scores);
  // The scores of this column's positions reach the segment's root row, which alone takes the
  // softmax (its max and sum allreduced along that row) and broadcasts the probabilities back
  // down the segment.
  if (S) emit_reduce(b, l.segments(), seg_role, a.acc, hq * S, Op::FAdd, "qk");
  if (seg_role.root()) softmax(b, l, S, row_role);
  if (S) emit_broadcast(b, l.segments(), seg_role, a.sc, hq * S, DType::F32, "p");
  // Each of the row's output features: the weighted values of this column's positions,
  // reduced along the row; its root rounds them and broadcasts them.
  const unsigned out = b.mem("out", DType::F32, a.acc, nq);
  for (std::uint32_t i = 0; i < hq; ++i) {
    const unsigned pi = b.mem(fmt::format("p{}", i), DType::F32, a.sc + i * S * 4, S);
    for (std::uint32_t d = 0; d < nd; ++d) {
      b.movr(2, S ? 15 : 14);
      if (S)
        b.reduce(Op::FDot, DType::F32, DType::F32, 2, VOperand::d(pi),
                 VOperand::d(b.mem(fmt::format("v{}_{}", i, d), DType::F32, la.vc + d * smax * 4, S)));
      b.vop(Op::FMov, DType::F32, DType::F32,
            VOperand::d(b.mem(fmt::format("o{}_{}", i, d), DType::F32, a.acc + (i * nd + d) * 4, 1)), VOperand::r(2));
    }
  }
  if (nq) {
    emit_reduce(b, l.rows(), row_role, a.acc, nq, Op::FAdd, "pv");
    if (row_role.root()) b.vop(Op::FCvt, dt, DType::F32, VOperand::d(b.mem("att", dt, a.att, nq)), VOperand::d(out));
    emit_broadcast(b, l.rows(), row_role, a.att, nq, dt, "att");
  }
  b.ret();
  return b.finish();
}

}  // namespace

MeshStep attention_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, std::uint64_t position,
                        bool code) {
  if (position >= l.shape().capacity)
    throw std::logic_error("attention_step: a position beyond the KV cache's capacity");
  const Region& reg = l.region();
  MeshStep step;
  step.layer = layer;
  step.name = fmt::format("h{}.attn", layer);
  step.kernel = "attention";
  auto pe_of = [&](std::uint32_t r, std::uint32_t c) {
    Pe p;
    p.nd = static_cast<std::uint32_t>(l.row_dims(r).size());
    p.slots = l.slots(c, position + 1);
    p.append = c == position % reg.columns;
    return p;
  };
  build_programs(
      step, reg.rows, reg.columns,
      [&](std::uint32_t r) { return fmt::format("d{}{}", l.row_dims(r).size(), role_key(l.segments().role(r))); },
      [&](std::uint32_t c) {
        return fmt::format("s{}{}{}", l.slots(c, position + 1), c == position % reg.columns ? "a" : "",
                           role_key(l.rows().role(c)));
      },
      [&](std::uint32_t r, std::uint32_t c) {
        return build(l, fmt::format("{}[{},{}]", step.name, r, c), layer, position, pe_of(r, c), l.segments().role(r),
                     l.rows().role(c));
      },
      code);
  const std::uint64_t hq = l.shape().group_heads(), S = l.slots(0, position + 1), nd = l.nd_max;
  std::uint64_t latency = 0;
  compiler::Work& w = step.work;
  add_fmacs(w, t, hq * nd, S);
  add_allreduce(w, latency, l.segments(), hq * S, t);
  add_vector(w, t, hq * S, 4, 1, t.lanes(DType::F32));
  for (std::uint64_t i = 0; i < hq; ++i) {
    w.datapath_steps += S;  // frmax
    add_vector(w, t, S, 4, 1, t.lanes(DType::F32));
    add_vector(w, t, S, 4, 1, 1, static_cast<std::uint32_t>(t.wafer.pe.latency.exp.count()));
    w.datapath_steps += S + t.wafer.pe.latency.recip.count();  // fsum, frecip
    add_vector(w, t, S, 4, 1, t.lanes(DType::F32));
    w.datapath_steps += nd * S;  // fdot
  }
  add_allreduce(w, latency, l.rows(), hq, t);
  add_allreduce(w, latency, l.rows(), hq, t);
  add_allreduce(w, latency, l.rows(), hq * nd, t);
  const std::uint64_t n = position + 1;
  step.work.flops = 4 * l.shape().heads * n * l.shape().head_dim + 5 * l.shape().heads * n;
  step.bound = bound_of(w, latency, t);
  return step;
}

}  // namespace wafersim::models::mesh
