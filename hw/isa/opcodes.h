#pragma once
// The core's instruction set: opcodes and their static properties (see docs/isa.md).

#include <cstdint>
#include <string_view>

namespace wafersim::hw::isa {

enum class Op : std::uint8_t {
  // scalar integer, memory, control flow
  Nop,
  Mov,
  Add,
  Sub,
  Mul,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  Sra,
  Cmp,
  Branch,
  Jmp,
  Ld,
  St,
  Tsc,
  // fabric, tasks
  Send,
  Recv,
  Activate,
  Block,
  Unblock,
  Ret,
  // descriptor registers
  DsdBase,
  DsdLen,
  DsdAdd,
  DsdStride,
  DsdColor,
  // floating point: scalar on registers, vector when an operand is a descriptor
  FMov,
  FAdd,
  FSub,
  FMul,
  FMac,
  FMax,
  FMin,
  FNeg,
  FExp,
  FRecip,
  FCvt,
  FCmp,
  // reductions of a vector into a register
  FSum,
  FDot,
  FRMax,
  FRMin,
};

enum class Cond : std::uint8_t { Eq, Ne, Lt, Le, Gt, Ge, Ltu, Leu, Gtu, Geu };

// Which configured latency an instruction pays.
enum class LatencyClass : std::uint8_t { Scalar, Mov, Add, Mul, Fmac, Exp, Recip };

struct OpInfo {
  Op op;
  std::string_view mnemonic;
  LatencyClass latency;
  std::uint8_t flops;  // floating-point operations per element (vector) or per instruction (scalar)
  bool fpu;            // uses the pipelined vector datapath
  bool iterative;      // uses the iterative unit (one element per latency)
};

const OpInfo& info(Op op);
std::string_view cond_name(Cond c);
// Whether an instruction of this opcode may carry the `async` option.
bool is_float_op(Op op);
bool is_reduction(Op op);
// Whether a scalar instruction of this opcode reads and writes nothing but its thread's
// registers, descriptors and pc (integer arithmetic, compares, branches, descriptor updates).
bool is_register_only(Op op);

}  // namespace wafersim::hw::isa
