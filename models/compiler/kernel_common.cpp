// What all kernels share: scratch buffers, the layer's SRAM figures and its bound.

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/compiler/bound.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::models::compiler {

std::uint32_t KernelContext::scratch(const std::string& name, std::uint64_t bytes, std::uint32_t phase) {
  const std::uint64_t want = std::max<std::uint64_t>(8, (bytes + 7) / 8 * 8);
  auto a = want <= sram.capacity() ? sram.allocate(layer + "." + name, static_cast<std::uint32_t>(want), 32, phase)
                                   : std::nullopt;
  if (!a) throw_sram_error(*this, name, want);
  scratch_addrs.push_back(*a);
  return *a;
}

void KernelContext::release_scratch() {
  for (auto a : scratch_addrs) sram.release(a);
  scratch_addrs.clear();
}

[[noreturn]] void throw_sram_error(const KernelContext& ctx, const std::string& what, std::uint64_t bytes,
                                   const std::string& also) {
  const std::uint64_t need = ctx.sram.in_use() + bytes;
  std::string held;
  std::vector<SramArena::Block> live = ctx.sram.live();
  std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  for (std::size_t i = 0; i < live.size() && i < 4; ++i)
    held +=
        fmt::format("{}{} {}", i ? ", " : "", live[i].name, units::format(units::DataSize::from_bytes(live[i].bytes)));
  if (live.size() > 4) held += fmt::format(", and {} more", live.size() - 4);
  const hw::PeCoord pe{0, static_cast<std::uint16_t>(ctx.layout.rows.empty() ? 0 : ctx.layout.rows[0])};
  throw sim::InputError(fmt::format(
      "layer '{}' does not fit the SRAM: PE ({}, {}) needs {} B for '{}' on top of {} B already resident ({} B in "
      "all), but has {} B ({}): short by {} B. Resident: {}. Use fewer tokens (batch x sequence) per PE, a wider "
      "wafer, {}a platform with more SRAM per PE",
      ctx.layer, pe.x, pe.y, bytes, what, ctx.sram.in_use(), need, ctx.sram.capacity(),
      units::format(units::DataSize::from_bytes(ctx.sram.capacity())),
      need > ctx.sram.capacity() ? need - ctx.sram.capacity() : bytes, held.empty() ? "nothing" : held,
      also.empty() ? "or " : also + ", or "));
}

void widen(ProgramBuilder& b, hw::DType dt, unsigned d, unsigned a) {
  using V = VOperand;
  if (dt == hw::DType::F32)
    b.vop(hw::isa::Op::FMov, hw::DType::F32, hw::DType::F32, V::d(d), V::d(a));
  else
    b.vop(hw::isa::Op::FCvt, hw::DType::F32, dt, V::d(d), V::d(a));
}

void narrow(ProgramBuilder& b, hw::DType dt, unsigned d, unsigned a) {
  using V = VOperand;
  if (dt == hw::DType::F32)
    b.vop(hw::isa::Op::FMov, hw::DType::F32, hw::DType::F32, V::d(d), V::d(a));
  else
    b.vop(hw::isa::Op::FCvt, dt, hw::DType::F32, V::d(d), V::d(a));
}

void emit_rsqrt_registers(ProgramBuilder& b) {
  using hw::DType;
  using hw::isa::Op;
  b.fscalar(Op::FMul, DType::F32, 4, 4, 13);
  b.fscalar(Op::FAdd, DType::F32, 4, 4, 14);
  b.alu(Op::Shr, 7, 4, 1);
  b.mov(5, 0x5F375A86);
  b.alur(Op::Sub, 5, 5, 7);
  b.fscalar(Op::FMul, DType::F32, 8, 4, 15);
  for (int i = 0; i < 3; ++i) {
    b.fscalar(Op::FMul, DType::F32, 9, 8, 5);
    b.fscalar(Op::FNeg, DType::F32, 9, 9);
    b.fmac_scalar(DType::F32, 10, 15, 9, 5);
    b.fmac_scalar(DType::F32, 5, 5, 5, 10);
  }
}

void emit_rstd_in_place(ProgramBuilder& b, std::uint32_t acc_addr, std::uint64_t tokens, std::uint32_t inv_d,
                        std::uint32_t eps) {
  using hw::DType;
  using hw::isa::Cond;
  using hw::isa::Op;
  b.movf(13, DType::F32, inv_d);
  b.movf(14, DType::F32, eps);
  b.movf(15, DType::F32, 0x3F000000u);
  b.mov(6, acc_addr);
  b.mov(12, static_cast<std::int64_t>(tokens));
  const unsigned tok = b.label();
  b.bind(tok);
  b.ld(4, 0, 4, 6);
  emit_rsqrt_registers(b);
  b.st(0, 5, 4, 6);
  b.alu(Op::Add, 6, 6, 4);
  b.alu(Op::Sub, 12, 12, 1);
  b.branch(Cond::Ne, 12, 0, tok);
}

namespace {

const char* describe(const FeatureMap& m) {
  switch (m.kind) {
    case FeatureMap::Kind::Even:
      return "even slices";
    case FeatureMap::Kind::Heads:
      return "attention heads whole on rows";
    case FeatureMap::Kind::HeadParts:
      return "attention heads split by dimension over rows";
  }
  return "?";
}

}  // namespace

const FeatureMap& shared_map(const KernelContext& ctx, const std::string& layer, const std::vector<std::uint32_t>& ids,
                             bool in_order) {
  const Tensor* first = nullptr;
  for (auto id : ids) {
    if (id == kScratchTensor) continue;
    const Tensor& t = ctx.tensors.at(id);
    if (!first) {
      first = &t;
    } else if (t.map != first->map) {
      throw sim::InputError(fmt::format(
          "layer '{}': its tensors are laid out differently ({}: {}, {}: {}); code generation has no re-layout "
          "between them",
          layer, first->name, describe(first->map), t.name, describe(t.map)));
    }
  }
  if (!first) throw std::logic_error("shared_map: no tensor");
  if (in_order && !first->map.in_order())
    throw sim::InputError(
        fmt::format("layer '{}': its reductions chain down the column in feature order, but {} is "
                    "laid out with {} (a row holds dimensions of several heads)",
                    layer, first->name, describe(first->map)));
  return first->map;
}

void emit_ew_ops(ProgramBuilder& b, hw::DType dt, const EwProgram& prog, const std::vector<unsigned>& buffers) {
  using hw::isa::Op;
  using V = VOperand;
  for (std::size_t i = 0; i < prog.consts.size(); ++i)
    b.movf(static_cast<unsigned>(1 + i), dt, constant_bits(dt, prog.consts[i]));
  auto opnd = [&](int x) {
    return x >= 0 ? V::d(buffers[static_cast<std::size_t>(x)]) : V::r(static_cast<unsigned>(-x));
  };
  for (const auto& o : prog.ops) {
    switch (o.op) {
      case Op::FMac:
        b.vop(o.op, dt, dt, opnd(o.d), opnd(o.a), opnd(o.b), opnd(o.c));
        break;
      case Op::FAdd:
      case Op::FSub:
      case Op::FMul:
      case Op::FMax:
      case Op::FMin:
        b.vop(o.op, dt, dt, opnd(o.d), opnd(o.a), opnd(o.b));
        break;
      default:
        b.vop(o.op, dt, dt, opnd(o.d), opnd(o.a));
    }
  }
}

void place_on_row(LayerProgram& p, const StreamingLayout& l, std::uint32_t s,
                  std::shared_ptr<const hw::isa::Program> program) {
  hw::isa::Placement pl;
  pl.x0 = 0;
  pl.x1 = static_cast<std::uint16_t>(l.columns - 1);
  pl.y0 = pl.y1 = static_cast<std::uint16_t>(l.rows[s]);
  pl.program = std::move(program);
  p.code.push_back(std::move(pl));
}

void finish_layer(const KernelContext& ctx, LayerProgram& p, const std::vector<std::uint64_t>& sram_per_slice) {
  const StreamingLayout& l = ctx.layout;
  std::uint64_t max = 0, sum = 0;
  for (auto b : sram_per_slice) {
    max = std::max(max, b);
    sum += b;
  }
  p.sram.max_bytes = max;
  p.sram.mean_bytes = static_cast<double>(sum) * l.columns / (static_cast<double>(l.width) * l.height);
  p.rows = l.slices();
  p.columns = l.columns;
  p.bound = bound_of(p.work, ctx.target);
}

}  // namespace wafersim::models::compiler
