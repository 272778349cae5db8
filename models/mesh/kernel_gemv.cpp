// MeshGEMV (docs/compiler.md, "Mesh placement"): every PE multiplies its slice of the input
// with its tile of the weight (one fp32-accumulating FMAC per input element, on one ordered
// microthread), the partial sums of each line are reduced to its root (line_tree.h), which
// rounds them, adds the residual or applies SwiGLU and broadcasts the outputs back.

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
using compiler::VectorOptions;
using compiler::VOperand;
using hw::DType;
using hw::isa::Op;

const char* to_string(Gemv g) {
  switch (g) {
    case Gemv::Qkv:
      return "qkv";
    case Gemv::O:
      return "o";
    case Gemv::GateUp:
      return "gate_up";
    case Gemv::Down:
      return "down";
    case Gemv::Head:
      return "head";
  }
  return "?";
}

GemvShape gemv_shape(const DecoderShape& s, Gemv g) {
  const std::uint64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  switch (g) {
    case Gemv::Qkv:
      return {s.d, q + 2 * kv};
    case Gemv::O:
      return {q, s.d};
    case Gemv::GateUp:
      return {s.d, 2 * s.ff};
    case Gemv::Down:
      return {s.ff, s.d};
    case Gemv::Head:
      return {s.d, s.vocabulary};
  }
  return {};
}

namespace {

enum class Epilogue : std::uint8_t { Round, Residual, Swiglu };

// What one kind of product reads, writes and reduces along.
struct Spec {
  Axis axis = Axis::Row;  // the lines its partial sums are reduced along
  std::uint32_t in = 0, w = 0, w_stride = 0, out = 0, residual = 0;
  Epilogue epilogue = Epilogue::Round;
};

Spec spec_of(const MeshLayout& l, Gemv g, std::uint32_t layer) {
  const Addrs& a = l.addrs();
  Spec s;
  switch (g) {
    case Gemv::Qkv:
      s = {Axis::Row, a.xn, a.layers[layer].wqkv, l.nqkv_max, a.qkv, 0, Epilogue::Round};
      break;
    case Gemv::O:
      s = {Axis::Column, a.att, a.layers[layer].wo, l.kc_max, a.x1, a.x, Epilogue::Residual};
      break;
    case Gemv::GateUp:
      s = {Axis::Row, a.xn, a.layers[layer].wgu, 2 * l.nf_max, a.z, 0, Epilogue::Swiglu};
      break;
    case Gemv::Down:
      s = {Axis::Column, a.z, a.layers[layer].wd, l.kc_max, a.x, a.x1, Epilogue::Residual};
      break;
    case Gemv::Head:
      s = {Axis::Row, a.xn, a.head, l.nv_max, a.logits, 0, Epilogue::Round};
      break;
  }
  return s;
}

void emit_epilogue(ProgramBuilder& b, const MeshLayout& l, const Spec& s, std::uint32_t n) {
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  const unsigned acc = b.mem("sum", DType::F32, l.addrs().acc, n);
  switch (s.epilogue) {
    case Epilogue::Round: {
      const unsigned out = b.mem("out", dt, s.out, n);
      b.vop(Op::FCvt, dt, DType::F32, VOperand::d(out), VOperand::d(acc));
      return;
    }
    case Epilogue::Residual: {
      // h = R(sum), then out = residual + h in the model's format (the residual add).
      const unsigned out = b.mem("out", dt, s.out, n), res = b.mem("residual", dt, s.residual, n);
      b.vop(Op::FCvt, dt, DType::F32, VOperand::d(out), VOperand::d(acc));
      b.vop(Op::FAdd, dt, dt, VOperand::d(out), VOperand::d(res), VOperand::d(out));
      return;
    }
    case Epilogue::Swiglu: {
      const std::uint32_t f = n / 2;
      const unsigned gu = b.mem("gate_up", dt, l.addrs().gu, n);
      b.vop(Op::FCvt, dt, DType::F32, VOperand::d(gu), VOperand::d(acc));
      const unsigned gate = b.mem("gate", dt, l.addrs().gu, f);
      const unsigned up = b.mem("up", dt, l.addrs().gu + f * l.esize(), f);
      const unsigned z = b.mem("z", dt, s.out, f);
      compiler::emit_ew_ops(b, dt, compiler::elementwise_forward(LayerKind::Swiglu), {gate, up, z});
      return;
    }
  }
}

// The root's epilogue between the reduction and the broadcast: its vector operations in the
// bound's terms, and its datapath cycles, which lie on the collectives' path (`latency`).
void add_epilogue(compiler::Work& w, std::uint64_t& latency, const compiler::Target& t, const Spec& s, std::uint32_t n,
                  DType dt) {
  const std::uint64_t before = w.datapath_steps;
  const std::uint32_t lanes = t.lanes(dt), esize = hw::size_of(dt);
  add_vector(w, t, n, 4, 1, lanes);  // the rounding of the sums
  if (s.epilogue == Epilogue::Residual) add_vector(w, t, n, esize, 2, lanes);
  if (s.epilogue == Epilogue::Swiglu)
    for (const compiler::EwOp& op : compiler::elementwise_forward(LayerKind::Swiglu).ops) {
      const bool exp = op.op == Op::FExp, recip = op.op == Op::FRecip;
      const auto iterative = static_cast<std::uint32_t>(exp     ? t.wafer.pe.latency.exp.count()
                                                        : recip ? t.wafer.pe.latency.recip.count()
                                                                : 0);
      const bool unary = op.op == Op::FNeg || op.op == Op::FMov || exp || recip;
      const auto sources = static_cast<std::uint32_t>((op.a >= 0) + (!unary && op.b >= 0));
      add_vector(w, t, n / 2, esize, sources, iterative ? 1 : lanes, iterative);
    }
  latency += w.datapath_steps - before;
}

}  // namespace

ProductIo product_io(const MeshLayout& l, Gemv g, std::uint32_t layer) {
  const Spec s = spec_of(l, g, layer);
  return ProductIo{s.in, s.out, s.residual, s.epilogue == Epilogue::Swiglu};
}

void emit_product_finish(ProgramBuilder& b, const MeshLayout& l, Gemv g, std::uint32_t layer, std::uint32_t n) {
  const Spec s = spec_of(l, g, layer);
  emit_epilogue(b, l, s, n);
}

std::uint64_t add_product_finish(compiler::Work& w, const compiler::Target& t, const MeshLayout& l, Gemv g,
                                 std::uint32_t layer, std::uint32_t n) {
  std::uint64_t cycles = 0;
  add_epilogue(w, cycles, t, spec_of(l, g, layer), n, compiler::hw_dtype(l.shape().dtype));
  return cycles;
}

namespace {

std::shared_ptr<const hw::isa::Program> build(const MeshLayout& l, const std::string& name, const Spec& s,
                                              const LineFamily& family, const LineRole& role, std::uint32_t k,
                                              std::uint32_t n) {
  const DType dt = compiler::hw_dtype(l.shape().dtype);
  ProgramBuilder b(name);
  const std::uint8_t main = b.task("main");
  b.entry(main);
  const std::uint8_t reduce = b.declare_task("reduce");
  if (n == 0) {  // the whole line has no outputs
    b.ret();
    b.start(reduce);
    b.ret();
    return b.finish();
  }
  const unsigned acc = b.mem("acc", DType::F32, l.addrs().acc, n);
  const unsigned w = b.mem("w", dt, s.w, n);
  b.movf(15, DType::F32, 0);
  b.vop(Op::FMov, DType::F32, DType::F32, VOperand::d(acc), VOperand::r(15));
  for (std::uint32_t i = 0; i < k; ++i) {
    b.ld(1, s.in + i * l.esize(), l.esize());
    VectorOptions o;
    o.async = true;
    o.ut = 0;
    if (i + 1 == k) {
      o.on_done = hw::isa::OnDone::Activate;
      o.task = reduce;
    }
    b.vop(Op::FMac, DType::F32, dt, VOperand::d(acc), VOperand::d(acc), VOperand::d(w), VOperand::r(1), o);
    if (i + 1 < k) b.dsd(Op::DsdAdd, w, s.w_stride);
  }
  if (k == 0) b.activate(reduce);
  b.ret();
  b.start(reduce);
  // The line's root finishes the outputs (rounds them, adds the residual or applies SwiGLU)
  // and broadcasts them in the model's format.
  emit_reduce(b, family, role, l.addrs().acc, n, Op::FAdd, "ar");
  if (role.root()) emit_epilogue(b, l, s, n);
  emit_broadcast(b, family, role, s.out, s.epilogue == Epilogue::Swiglu ? n / 2 : n, dt, "out");
  b.ret();
  return b.finish();
}

}  // namespace

MeshStep gemv_step(const MeshLayout& l, const compiler::Target& t, Gemv g, std::uint32_t layer, bool code) {
  const Spec s = spec_of(l, g, layer);
  const Region& reg = l.region();
  MeshStep step;
  step.layer = layer;
  step.name = g == Gemv::Head ? "head" : fmt::format("h{}.{}", layer, to_string(g));
  step.kernel = "gemv";
  const LineFamily& family = s.axis == Axis::Row ? l.rows() : l.columns();
  // A Row product's line is a row (its role by column); its outputs depend on the row.
  const bool by_row = s.axis == Axis::Row;
  auto row_key = [&](std::uint32_t r) {
    return by_row ? fmt::format("n{}", gemm_outputs(l, g, r, 0))
                  : fmt::format("k{}{}", gemm_inputs(l, g, r, 0), role_key(family.role(r)));
  };
  auto col_key = [&](std::uint32_t c) {
    return by_row ? fmt::format("k{}{}", gemm_inputs(l, g, 0, c), role_key(family.role(c)))
                  : fmt::format("n{}", gemm_outputs(l, g, 0, c));
  };
  build_programs(
      step, reg.rows, reg.columns, row_key, col_key,
      [&](std::uint32_t r, std::uint32_t c) {
        return build(l, fmt::format("{}[{},{}]", step.name, r, c), s, family, family.role(by_row ? c : r),
                     gemm_inputs(l, g, r, c), gemm_outputs(l, g, r, c));
      },
      code);
  // The busiest PE: the most inputs and outputs.
  std::uint32_t k = 0, n = 0;
  for (std::uint32_t r = 0; r < reg.rows; ++r) {
    k = std::max(k, gemm_inputs(l, g, r, 0));
    n = std::max(n, gemm_outputs(l, g, r, 0));
  }
  for (std::uint32_t c = 0; c < reg.columns; ++c) {
    k = std::max(k, gemm_inputs(l, g, 0, c));
    n = std::max(n, gemm_outputs(l, g, 0, c));
  }
  std::uint64_t latency = 0;
  add_fmacs(step.work, t, k, n);
  add_allreduce(step.work, latency, family, n, t);
  add_epilogue(step.work, latency, t, s, n, compiler::hw_dtype(l.shape().dtype));
  const GemvShape shape = gemv_shape(l.shape(), g);
  step.work.flops = 2 * shape.in * shape.out;
  step.bound = bound_of(step.work, latency, t);
  return step;
}

}  // namespace wafersim::models::mesh
