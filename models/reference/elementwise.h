#pragma once
// Elementwise layers: add, mul, GELU (tanh approximation), SiLU, ReLU and SwiGLU
// (docs/reference.md gives each one's operations and rounding points).

#include "models/reference/tensor.h"

namespace wafersim::models::reference {

// a + b, a x b: one operation in the storage format (fadd.T, fmul.T).
Tensor add_forward(const Tensor& a, const Tensor& b);
Tensor mul_forward(const Tensor& a, const Tensor& b);

struct PairGrads {
  Tensor da;  // gradient of the first input (swiglu: the gate)
  Tensor db;  // gradient of the second input (swiglu: up)
};
// da = db = dy (copies).
PairGrads add_backward(const Tensor& dy);
// da = dy x b, db = dy x a, each one fmul in the storage format.
PairGrads mul_backward(const Tensor& a, const Tensor& b, const Tensor& dy);

enum class Activation { Gelu, Silu, Relu };
const char* to_string(Activation f);

// Computed in the accumulation format from the widened input, rounded once to the storage
// format; relu is fmax(x, +0) in the storage format.
Tensor activation_forward(Activation f, const Tensor& x);
// dx = dy x f'(x) with f'(x) in the accumulation format, rounded once; relu: dy where x > 0, else +0.
Tensor activation_backward(Activation f, const Tensor& x, const Tensor& dy);

// silu(gate) x up.
Tensor swiglu_forward(const Tensor& gate, const Tensor& up);
PairGrads swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy);

}  // namespace wafersim::models::reference
