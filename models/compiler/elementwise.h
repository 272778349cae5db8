#pragma once
// Elementwise layers as short sequences of vector operations over a PE's whole buffer, all in
// the model's number format: one description drives both the PE code and the host's
// computation in the same order (docs/compiler.md, "Elementwise").

#include <cstdint>
#include <string>
#include <vector>

#include "hw/isa/opcodes.h"
#include "hw/numerics/dtype.h"
#include "models/model_spec.h"

namespace wafersim::models::compiler {

// An operand: a buffer (index >= 0) or a constant (-1 - index into consts).
struct EwOp {
  hw::isa::Op op;  // FAdd FSub FMul FMac FMax FMin FNeg FExp FRecip FMov
  int d = 0, a = 0, b = 0, c = 0;
};

struct EwProgram {
  std::vector<std::string> buffers;  // names; inputs first, then outputs, then temporaries
  std::uint32_t inputs = 0, outputs = 0;
  std::vector<double> consts;  // rounded once to the number format
  std::vector<EwOp> ops;
  // Outputs that add into a gradient another consumer already wrote (the last op's result
  // is added with one more fadd, or fused into an fmac where the sequence says so).
  [[nodiscard]] std::uint32_t temporaries() const {
    return static_cast<std::uint32_t>(buffers.size()) - inputs - outputs;
  }
};

// A constant that stands for the format's largest finite power of two (2^15 for fp16, 2^127
// for bf16 and fp32): two multiplications by it take every positive value to at least 1.
inline constexpr double kLargestPowerOfTwo = 1.7976931348623157e308;
std::uint32_t constant_bits(hw::DType t, double v);

// The forward program of an elementwise kind: inputs (x) or (a, b), output y.
EwProgram elementwise_forward(LayerKind kind);
// The backward program: inputs (dy, saved inputs...), outputs the input gradients; an
// output marked in `accumulate` adds into its current value.
EwProgram elementwise_backward(LayerKind kind, const std::vector<bool>& accumulate);

// The host's computation of a program element by element (bits in format t).
void run_elementwise(const EwProgram& p, hw::DType t, std::vector<std::vector<std::uint32_t>*> buffers);

}  // namespace wafersim::models::compiler
