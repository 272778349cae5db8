// The prefill's moves between the decode's vectors and MeshGEMM's blocks (docs/compiler.md,
// "Prefill"). A token's outputs rest on one PE of each line after the product; the others
// give -0 (which adds nothing, so the sum is that PE's value exactly) to the line's reduction,
// whose root finishes them as the decode's GEMV does and broadcasts them (unblock_step, the
// wafer's output). The residual stream of the prompt's tokens is kept in a block of its own,
// row t of the PE that starts q/k/v (and gate/up) with the token's block; o and down reduce it
// to the root beside their outputs. SwiGLU moves gate/up's outputs into down's blocks without
// leaving them (swiglu_blocks_step).

#include <fmt/format.h>

#include <stdexcept>

#include "models/compiler/compiled_model.h"
#include "models/compiler/elementwise.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "models/mesh/kernel_common.h"
#include "models/mesh/kernels.h"

namespace wafersim::models::mesh {
using compiler::ProgramBuilder;
using compiler::VOperand;
using hw::DType;
using hw::isa::Op;

namespace {

struct TokenAt {
  GemmAddrs a;
  std::uint32_t N = 1;
  std::uint64_t j = 0;  // its block
  std::uint32_t t = 0;  // its row in the block
};

TokenAt token_at(const MeshLayout& l, Gemv g, std::uint64_t tokens, std::uint64_t token, const char* what) {
  if (token >= tokens) throw std::logic_error(fmt::format("{}: a token beyond the prompt", what));
  if (g == Gemv::Head) throw std::logic_error(fmt::format("{}: the prefill has no head", what));
  TokenAt at;
  at.a = gemm_addrs(l, g, tokens, l.align());
  at.N = l.gemm_n();
  at.j = token / at.a.block;
  at.t = static_cast<std::uint32_t>(token % at.a.block);
  return at;
}

}  // namespace

MeshStep unblock_step(const MeshLayout& l, const compiler::Target& t, Gemv g, std::uint32_t layer, std::uint64_t tokens,
                      std::uint64_t token, bool code) {
  const TokenAt at = token_at(l, g, tokens, token, "unblock_step");
  const GemmAddrs& a = at.a;
  const Addrs& ad = l.addrs();
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const ProductIo io = product_io(l, g, layer);
  const bool along_rows = reduces_along_rows(g);
  const LineFamily& f = along_rows ? l.rows() : l.columns();
  // The PE whose residual block the column's reduction takes (in a unit of two along the
  // column both members keep it: its sender's counts).
  auto keeps = [&](std::uint32_t r, std::uint32_t c) { return starts_with(l, r, c, at.j) && l.column_ring().sends(r); };
  MeshStep step;
  step.layer = layer;
  step.name = fmt::format("prefill.h{}.{}.unblock", layer, to_string(g));
  step.kernel = "unblock";
  // A PE's code: its outputs, its role in its line, whether it holds the token's outputs and
  // its residual stream.
  build_programs_by_pe(
      step, l.region().rows, l.region().columns,
      [&](std::uint32_t r, std::uint32_t c) {
        return fmt::format("n{}|{}{}|{}", gemm_outputs(l, g, r, c), ends_with(l, g, r, c, at.j) ? 'o' : '-',
                           io.residual && keeps(r, c) ? 'r' : '-', role_key(f.role(along_rows ? c : r)));
      },
      [&](std::uint32_t r, std::uint32_t c) {
        const std::uint32_t n = gemm_outputs(l, g, r, c);
        const LineRole role = f.role(along_rows ? c : r);
        ProgramBuilder b(fmt::format("{}[{},{}]", step.name, r, c));
        b.entry(b.task("main"));
        if (!n) {
          b.ret();
          return b.finish();
        }
        b.movf(14, DType::F32, 0x80000000u);  // -0: adds nothing
        const unsigned sum = b.mem("sel", DType::F32, ad.acc, n);
        if (ends_with(l, g, r, c, at.j))
          b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(sum),
                VOperand::d(b.mem("gemm_out", DType::F32, a.acc[(at.N - 1) % 2] + at.t * a.nmax * 4, n)));
        else
          b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(sum), VOperand::r(14));
        if (io.residual) {  // o and down: n is the column's features
          const unsigned res = b.mem("res_sum", DType::F32, ad.xw, n);
          if (keeps(r, c))
            b.vop(Op::FCvt, DType::F32, dt, VOperand::d(res),
                  VOperand::d(b.mem("kept", dt, a.residual + at.t * l.kc_max * l.esize(), n)));
          else
            b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(res), VOperand::r(14));
        }
        emit_reduce(b, f, role, ad.acc, n, Op::FAdd, "ar");
        if (io.residual) emit_reduce(b, f, role, ad.xw, n, Op::FAdd, "rr");
        if (role.root()) {
          if (io.residual)
            b.vop(Op::FCvt, dt, DType::F32, VOperand::d(b.mem("res_out", dt, io.residual, n)),
                  VOperand::d(b.mem("rsum", DType::F32, ad.xw, n)));
          emit_product_finish(b, l, g, layer, n);
        }
        emit_broadcast(b, f, role, io.out, io.swiglu ? n / 2 : n, dt, "bc");
        b.ret();
        return b.finish();
      },
      code);
  std::uint64_t latency = 0;
  const std::uint64_t n = along_rows ? a.nmax : l.kc_max;
  const std::uint32_t lanes = t.lanes(DType::F32);
  add_vector(step.work, t, n, 4, 1, lanes);
  add_allreduce(step.work, latency, f, n, t);
  if (io.residual) {  // the residual's reduction follows the outputs' down the same tree
    std::uint64_t behind = 0;
    add_vector(step.work, t, n, 4, 1, lanes);
    add_allreduce(step.work, behind, f, n, t);
    latency += n;
  }
  add_vector(step.work, t, n, 4, 1, t.lanes(dt));
  step.bound = bound_of(step.work, latency, t);
  return step;
}

}  // namespace wafersim::models::mesh

namespace wafersim::models::mesh {

MeshStep swiglu_blocks_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, std::uint64_t tokens,
                            bool code) {
  const GemmAddrs gu = gemm_addrs(l, Gemv::GateUp, tokens, l.align());
  const GemmAddrs dn = gemm_addrs(l, Gemv::Down, tokens, l.align());
  const std::uint32_t N = l.gemm_n(), T = gu.block, e = l.esize();
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const Ring& ring = l.row_ring();  // down's inputs travel along the rows
  const std::uint32_t sums = gu.acc[(N - 1) % 2], out = dn.x[1], in = dn.x[0];
  MeshStep step;
  step.layer = layer;
  step.name = fmt::format("prefill.h{}.swiglu", layer);
  step.kernel = "swiglu_blocks";
  auto features = [&](std::uint32_t r) { return static_cast<std::uint32_t>(l.row_ff(r).size()); };
  build_programs(
      step, l.region().rows, l.region().columns, [&](std::uint32_t r) { return fmt::format("f{}", features(r)); },
      [&](std::uint32_t c) { return fmt::format("{}|{}|{}", ring.send_color(c), ring.recv_color(c), ring.sends(c)); },
      [&](std::uint32_t r, std::uint32_t c) {
        const std::uint32_t f = features(r);
        ProgramBuilder b(fmt::format("{}[{},{}]", step.name, r, c));
        b.entry(b.task("main"));
        const std::uint8_t done = b.declare_task("done");
        b.movf(15, DType::F32, 0);
        for (std::uint32_t k = 0; k < T; ++k) {
          const std::uint32_t row = out + k * dn.kmax * e;
          if (f) {
            // The decode root's finish of gate/up (emit_product_finish), into row k of the block.
            const unsigned g = b.mem(fmt::format("gu{}", k), dt, l.addrs().gu, 2 * f);
            b.vop(Op::FCvt, dt, DType::F32, VOperand::d(g),
                  VOperand::d(b.mem(fmt::format("sums{}", k), DType::F32, sums + k * gu.nmax * 4, 2 * f)));
            const unsigned gate = b.mem(fmt::format("gate{}", k), dt, l.addrs().gu, f);
            const unsigned up = b.mem(fmt::format("up{}", k), dt, l.addrs().gu + f * e, f);
            const unsigned z = b.mem(fmt::format("z{}", k), dt, row, f);
            compiler::emit_ew_ops(b, dt, compiler::elementwise_forward(LayerKind::Swiglu), {gate, up, z});
            b.movf(15, DType::F32, 0);
          }
          if (f < dn.kmax)
            b.vop(Op::FMov, dt, dt, VOperand::d(b.mem(fmt::format("pad{}", k), dt, row + f * e, dn.kmax - f)),
                  VOperand::r(15));
        }
        const std::uint32_t n = T * dn.kmax;
        if (ring.positions() == 1) {
          b.vop(Op::FMov, dt, dt, VOperand::d(b.mem("in", dt, in, n)), VOperand::d(b.mem("out", dt, out, n)));
          b.ret();
          b.start(done);
          b.ret();
          return b.finish();
        }
        // Down's block a + b from the successor, this one to the predecessor.
        // (In a unit of two along the row only the sender's sums were whole: it alone sends.)
        emit_ring_shift(b, dt, out, in, n, ring.send_color(c), ring.recv_color(c), done, "z", ring.sends(c));
        b.start(done);
        b.ret();
        return b.finish();
      },
      code);
  // The busiest PE: every token's finish, the padding, and the block sent and received.
  compiler::Work& w = step.work;
  for (std::uint32_t k = 0; k < T; ++k) add_product_finish(w, t, l, Gemv::GateUp, layer, 2 * l.nf_max);
  const std::uint64_t n = std::uint64_t{T} * dn.kmax;
  w.sram_reads += n;
  w.sram_writes += n;
  w.ramp_out += n;
  w.ramp_in += n;
  w.link += n;
  w.issue += 8ull * T + 6;
  step.bound = bound_of(w, ring.max_hops() * t.fabric.hop_latency.count(), t);
  return step;
}

}  // namespace wafersim::models::mesh
