#include "hw/isa/opcodes.h"

#include <stdexcept>

#include "hw/isa/descriptor.h"

namespace wafersim::hw::isa {
namespace {

using L = LatencyClass;
constexpr OpInfo kInfo[] = {
    {Op::Nop, "nop", L::Scalar, 0, false, false},
    {Op::Mov, "mov", L::Scalar, 0, false, false},
    {Op::Add, "add", L::Scalar, 0, false, false},
    {Op::Sub, "sub", L::Scalar, 0, false, false},
    {Op::Mul, "mul", L::Scalar, 0, false, false},
    {Op::And, "and", L::Scalar, 0, false, false},
    {Op::Or, "or", L::Scalar, 0, false, false},
    {Op::Xor, "xor", L::Scalar, 0, false, false},
    {Op::Shl, "shl", L::Scalar, 0, false, false},
    {Op::Shr, "shr", L::Scalar, 0, false, false},
    {Op::Sra, "sra", L::Scalar, 0, false, false},
    {Op::Cmp, "cmp", L::Scalar, 0, false, false},
    {Op::Branch, "b", L::Scalar, 0, false, false},
    {Op::Jmp, "jmp", L::Scalar, 0, false, false},
    {Op::Ld, "ld", L::Scalar, 0, false, false},
    {Op::St, "st", L::Scalar, 0, false, false},
    {Op::Tsc, "tsc", L::Scalar, 0, false, false},
    {Op::Send, "send", L::Scalar, 0, false, false},
    {Op::Recv, "recv", L::Scalar, 0, false, false},
    {Op::Activate, "activate", L::Scalar, 0, false, false},
    {Op::Block, "block", L::Scalar, 0, false, false},
    {Op::Unblock, "unblock", L::Scalar, 0, false, false},
    {Op::Ret, "ret", L::Scalar, 0, false, false},
    {Op::DsdBase, "dsd.base", L::Scalar, 0, false, false},
    {Op::DsdLen, "dsd.len", L::Scalar, 0, false, false},
    {Op::DsdAdd, "dsd.add", L::Scalar, 0, false, false},
    {Op::DsdStride, "dsd.stride", L::Scalar, 0, false, false},
    {Op::DsdColor, "dsd.color", L::Scalar, 0, false, false},
    {Op::FMov, "fmov", L::Mov, 0, false, false},
    {Op::FAdd, "fadd", L::Add, 1, true, false},
    {Op::FSub, "fsub", L::Add, 1, true, false},
    {Op::FMul, "fmul", L::Mul, 1, true, false},
    {Op::FMac, "fmac", L::Fmac, 2, true, false},
    {Op::FMax, "fmax", L::Add, 1, true, false},
    {Op::FMin, "fmin", L::Add, 1, true, false},
    {Op::FNeg, "fneg", L::Add, 1, true, false},
    {Op::FExp, "fexp", L::Exp, 1, false, true},
    {Op::FRecip, "frecip", L::Recip, 1, false, true},
    {Op::FCvt, "fcvt", L::Add, 0, true, false},
    {Op::FCmp, "fcmp", L::Add, 0, false, false},
    {Op::FSum, "fsum", L::Add, 1, true, false},
    {Op::FDot, "fdot", L::Fmac, 2, true, false},
    {Op::FRMax, "frmax", L::Add, 1, true, false},
    {Op::FRMin, "frmin", L::Add, 1, true, false},
};
constexpr std::size_t kOps = sizeof(kInfo) / sizeof(kInfo[0]);
static_assert(kOps == static_cast<std::size_t>(Op::FRMin) + 1, "one entry per opcode, in enum order");

}  // namespace

const OpInfo& info(Op op) {
  const auto i = static_cast<std::size_t>(op);
  if (i >= kOps || kInfo[i].op != op) throw std::logic_error("isa::info: opcode table out of order");
  return kInfo[i];
}

std::string_view cond_name(Cond c) {
  static constexpr std::string_view kNames[] = {"eq", "ne", "lt", "le", "gt", "ge", "ltu", "leu", "gtu", "geu"};
  return kNames[static_cast<int>(c)];
}

bool is_float_op(Op op) { return op >= Op::FMov; }
bool is_reduction(Op op) { return op >= Op::FSum; }
bool is_register_only(Op op) { return op <= Op::Jmp || (op >= Op::DsdBase && op <= Op::DsdColor); }

const char* kind_name(Descriptor::Kind k) {
  switch (k) {
    case Descriptor::Kind::Mem:
      return "mem";
    case Descriptor::Kind::Circ:
      return "circ";
    case Descriptor::Kind::FabIn:
      return "fabin";
    case Descriptor::Kind::FabOut:
      return "fabout";
  }
  return "?";
}

}  // namespace wafersim::hw::isa
