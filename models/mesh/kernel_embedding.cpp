// The embedding of one token on the mesh (docs/compiler.md, "Mesh placement"): row r holds
// table rows split(V, R, r) of every column's features; the row holding the token widens its
// row's features to fp32, every other row contributes -0 (which adds nothing), and an
// allreduce along the columns leaves x (across columns) on every PE, exactly the table's row.

#include <fmt/format.h>

#include "models/compiler/compiled_model.h"
#include "models/compiler/program_builder.h"
#include "models/mesh/kernel_common.h"
#include "models/mesh/kernels.h"

namespace wafersim::models::mesh {
using compiler::ProgramBuilder;
using compiler::VOperand;
using hw::DType;
using hw::isa::Op;

MeshStep embedding_step(const MeshLayout& l, const compiler::Target& t, std::uint64_t token, bool code) {
  if (!l.embedding()) throw std::logic_error("embedding_step: the layout holds no embedding");
  if (token >= l.shape().vocabulary) throw std::logic_error("embedding_step: a token beyond the vocabulary");
  const Addrs& a = l.addrs();
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const LineFamily& f = l.columns();
  MeshStep step;
  step.name = "embed";
  step.kernel = "embedding";
  auto owner = [&](std::uint32_t r) {
    const compiler::Span v = l.row_vocab(r);
    return token >= v.lo && token < v.hi;
  };
  auto features = [&](std::uint32_t c) { return static_cast<std::uint32_t>(l.col_features(c).size()); };
  build_programs(
      step, l.region().rows, l.region().columns,
      [&](std::uint32_t r) { return fmt::format("{}{}", owner(r) ? "o" : "", role_key(f.role(r))); },
      [&](std::uint32_t c) { return fmt::format("k{}", features(c)); },
      [&](std::uint32_t r, std::uint32_t c) {
        const std::uint32_t k = features(c);
        ProgramBuilder b(fmt::format("embed[{},{}]", r, c));
        b.entry(b.task("main"));
        const unsigned acc = b.mem("acc", DType::F32, a.acc, k);
        if (owner(r)) {
          const std::uint64_t row = token - l.row_vocab(r).lo;
          const unsigned e = b.mem("row", dt, static_cast<std::uint32_t>(a.emb + row * l.kc_max * l.esize()), k);
          b.vop(Op::FCvt, DType::F32, dt, VOperand::d(acc), VOperand::d(e));
        } else {
          b.movf(14, DType::F32, 0x80000000u);
          b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(acc), VOperand::r(14));
        }
        if (k) {
          const LineRole role = f.role(r);
          emit_reduce(b, f, role, a.acc, k, Op::FAdd, "ar");
          if (role.root()) b.vop(Op::FCvt, dt, DType::F32, VOperand::d(b.mem("x", dt, a.x, k)), VOperand::d(acc));
          emit_broadcast(b, f, role, a.x, k, dt, "x");
        }
        b.ret();
        return b.finish();
      },
      code);
  std::uint64_t latency = 0;
  add_vector(step.work, t, l.kc_max, 4, 1, t.lanes(DType::BF16));
  add_allreduce(step.work, latency, f, l.kc_max, t);
  add_vector(step.work, t, l.kc_max, 4, 1, t.lanes(DType::BF16));
  step.bound = bound_of(step.work, latency, t);
  return step;
}

}  // namespace wafersim::models::mesh
