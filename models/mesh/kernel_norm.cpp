// RMSNorm of the residual stream on the mesh (docs/compiler.md, "Mesh placement"): each
// column's sum of squares of its features (one fp32 FMAC chain in feature order), reduced
// along the row to its root, which takes rstd with the reference's steps and broadcasts it;
// then y = R(x rstd gamma) per feature.

#include <fmt/format.h>

#include "hw/numerics/softfloat.h"
#include "models/compiler/compiled_model.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "models/mesh/kernel_common.h"
#include "models/mesh/kernels.h"

namespace wafersim::models::mesh {
using compiler::ProgramBuilder;
using compiler::VOperand;
using hw::DType;
using hw::isa::Op;

MeshStep rmsnorm_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, bool second, bool code) {
  const Addrs& a = l.addrs();
  const bool final = layer >= l.layers();
  const std::uint32_t in = second ? a.x1 : a.x;
  const std::uint32_t gamma = final ? a.gf : second ? a.layers[layer].g2 : a.layers[layer].g1;
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const std::uint32_t inv_d = hw::numerics::from_double(DType::F32, 1.0 / static_cast<double>(l.shape().d));
  const std::uint32_t eps = hw::numerics::from_double(DType::F32, l.shape().epsilon);
  MeshStep step;
  step.layer = layer;
  step.name = final ? "ln_f" : fmt::format("h{}.{}", layer, second ? "ln2" : "ln1");
  step.kernel = "rmsnorm";
  const LineFamily& f = l.rows();
  auto features = [&](std::uint32_t c) { return static_cast<std::uint32_t>(l.col_features(c).size()); };
  build_programs(
      step, l.region().rows, l.region().columns, [](std::uint32_t) { return std::string(); },
      [&](std::uint32_t c) { return fmt::format("k{}{}", features(c), role_key(f.role(c))); },
      [&](std::uint32_t, std::uint32_t c) {
        const std::uint32_t k = features(c);
        ProgramBuilder b(fmt::format("{}[{}]", step.name, c));
        b.entry(b.task("main"));
        const unsigned x = b.mem("x", dt, in, k), xw = b.mem("xw", DType::F32, a.xw, k);
        const unsigned g = b.mem("gamma", DType::F32, gamma, k), y = b.mem("y", dt, a.xn, k);
        const unsigned s = b.mem("sumsq", DType::F32, a.stat, 1);
        b.movf(2, DType::F32, 0);
        if (k) b.reduce(Op::FDot, DType::F32, dt, 2, VOperand::d(x), VOperand::d(x));
        b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(s), VOperand::r(2));
        // The row's root takes rstd and broadcasts it.
        const LineRole role = f.role(c);
        emit_reduce(b, f, role, a.stat, 1, Op::FAdd, "ar");
        if (role.root()) {
          b.ld(4, a.stat);
          emit_rstd(b, inv_d, eps);
          b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(s), VOperand::r(5));
        }
        emit_broadcast(b, f, role, a.stat, 1, DType::F32, "rstd");
        b.ld(5, a.stat);
        if (k) emit_rmsnorm_scale(b, dt, x, xw, g, y, 5);
        b.ret();
        return b.finish();
      },
      code);
  const std::uint32_t k = l.kc_max;
  std::uint64_t latency = 0;
  step.work.datapath_steps += k;  // the sum of squares, one element a step
  step.work.issue += 24;          // rstd's scalar steps
  add_allreduce(step.work, latency, f, 1, t);
  const std::uint32_t lanes = t.lanes(DType::BF16);
  add_vector(step.work, t, k, 4, 1, lanes);
  add_vector(step.work, t, k, 4, 1, t.lanes(DType::F32));
  add_vector(step.work, t, k, 4, 2, t.lanes(DType::F32));
  add_vector(step.work, t, k, 4, 1, lanes);
  step.work.flops = 4 * l.shape().d;
  step.bound = bound_of(step.work, latency + 24, t);
  return step;
}

}  // namespace wafersim::models::mesh
