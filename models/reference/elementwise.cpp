#include "models/reference/elementwise.h"

#include "models/reference/checks.h"

namespace wafersim::models::reference {
namespace {

// The GELU constants as literals (the doubles nearest to these decimals), rounded once to the
// accumulation format: 0.044715, 3 x 0.044715, 2 sqrt(2 / pi).
constexpr double kGeluCubic = 0.044715;
constexpr double kGeluCubic3 = 0.134145;
constexpr double kGeluScale2 = 1.5957691216057308;

void require_alike(const Tensor& a, const Tensor& b, const char* kernel) {
  detail::require_format(b, a.format(), kernel, "the second operand");
  detail::require_shape(b, a.shape(), kernel, "the second operand");
}

// The activation's value (in the accumulation format) and, when `derivative`, f'(x) instead.
struct Unary {
  Arith A;
  Bits one, cubic, cubic3, scale2;
  explicit Unary(Format a)
      : A(a), one(A.of(1.0)), cubic(A.of(kGeluCubic)), cubic3(A.of(kGeluCubic3)), scale2(A.of(kGeluScale2)) {}

  // gelu(x) = x sigmoid(z), z = 2 sqrt(2/pi) (x + 0.044715 x^3): the tanh form, as
  // 0.5 (1 + tanh(z / 2)) = sigmoid(z).
  [[nodiscard]] Bits gelu(Bits x, bool derivative) const {
    const Bits x2 = A.mul(x, x);
    const Bits x3 = A.mul(x2, x);
    const Bits z = A.mul(scale2, A.fma(cubic, x3, x));
    const Bits s = A.sigmoid(z);
    if (!derivative) return A.mul(x, s);
    const Bits dz = A.mul(scale2, A.fma(cubic3, x2, one));
    const Bits sp = A.mul(s, A.sub(one, s));
    return A.fma(A.mul(x, sp), dz, s);
  }
  [[nodiscard]] Bits silu(Bits x, bool derivative) const {
    const Bits s = A.sigmoid(x);
    if (!derivative) return A.mul(x, s);
    return A.fma(x, A.mul(s, A.sub(one, s)), s);
  }
};

}  // namespace

const char* to_string(Activation f) {
  switch (f) {
    case Activation::Gelu:
      return "gelu";
    case Activation::Silu:
      return "silu";
    case Activation::Relu:
      return "relu";
  }
  return "?";
}

Tensor add_forward(const Tensor& a, const Tensor& b) {
  require_alike(a, b, "add");
  const Arith S(a.format());
  Tensor y(a.format(), a.shape());
  for (std::size_t i = 0; i < y.size(); ++i) y.set_bits(i, S.add(a.bits(i), b.bits(i)));
  return y;
}

Tensor mul_forward(const Tensor& a, const Tensor& b) {
  require_alike(a, b, "mul");
  const Arith S(a.format());
  Tensor y(a.format(), a.shape());
  for (std::size_t i = 0; i < y.size(); ++i) y.set_bits(i, S.mul(a.bits(i), b.bits(i)));
  return y;
}

PairGrads add_backward(const Tensor& dy) { return {dy, dy}; }

PairGrads mul_backward(const Tensor& a, const Tensor& b, const Tensor& dy) {
  require_alike(a, b, "mul backward");
  require_alike(a, dy, "mul backward");
  return {mul_forward(dy, b), mul_forward(dy, a)};
}

Tensor activation_forward(Activation f, const Tensor& x) {
  const Format s = x.format(), a = accumulation_of(s);
  const Arith S(s);
  const Unary u(a);
  Tensor y(s, x.shape());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const Bits v = x.bits(i);
    switch (f) {
      case Activation::Relu:
        y.set_bits(i, S.max(v, Arith::kZero));
        break;
      case Activation::Gelu:
        y.set_bits(i, S.from(a, u.gelu(u.A.from(s, v), false)));
        break;
      case Activation::Silu:
        y.set_bits(i, S.from(a, u.silu(u.A.from(s, v), false)));
        break;
    }
  }
  return y;
}

Tensor activation_backward(Activation f, const Tensor& x, const Tensor& dy) {
  require_alike(x, dy, "activation backward");
  const Format s = x.format(), a = accumulation_of(s);
  const Arith S(s);
  const Unary u(a);
  Tensor dx(s, x.shape());
  for (std::size_t i = 0; i < dx.size(); ++i) {
    const Bits v = x.bits(i);
    if (f == Activation::Relu) {
      dx.set_bits(i, S.greater(v, Arith::kZero) ? dy.bits(i) : Arith::kZero);
      continue;
    }
    const Bits xa = u.A.from(s, v);
    const Bits d = f == Activation::Gelu ? u.gelu(xa, true) : u.silu(xa, true);
    dx.set_bits(i, S.from(a, u.A.mul(u.A.from(s, dy.bits(i)), d)));
  }
  return dx;
}

Tensor swiglu_forward(const Tensor& gate, const Tensor& up) {
  require_alike(gate, up, "swiglu");
  const Format s = gate.format(), a = accumulation_of(s);
  const Arith S(s);
  const Unary u(a);
  Tensor y(s, gate.shape());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const Bits act = u.silu(u.A.from(s, gate.bits(i)), false);
    y.set_bits(i, S.from(a, u.A.mul(act, u.A.from(s, up.bits(i)))));
  }
  return y;
}

PairGrads swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy) {
  require_alike(gate, up, "swiglu backward");
  require_alike(gate, dy, "swiglu backward");
  const Format s = gate.format(), a = accumulation_of(s);
  const Arith S(s);
  const Unary u(a);
  const Arith& A = u.A;
  PairGrads g{Tensor(s, gate.shape()), Tensor(s, gate.shape())};
  for (std::size_t i = 0; i < gate.size(); ++i) {
    const Bits x = A.from(s, gate.bits(i)), w = A.from(s, up.bits(i)), d = A.from(s, dy.bits(i));
    g.db.set_bits(i, S.from(a, A.mul(d, u.silu(x, false))));
    g.da.set_bits(i, S.from(a, A.mul(A.mul(d, w), u.silu(x, true))));
  }
  return g;
}

}  // namespace wafersim::models::reference
