#include "models/compiler/elementwise.h"

#include <cmath>
#include <stdexcept>

#include "hw/numerics/elementary.h"
#include "hw/numerics/softfloat.h"

namespace wafersim::models::compiler {
using hw::isa::Op;

namespace {

// Builds programs with named buffers and constants.
class Ew {
 public:
  Ew(std::vector<std::string> in, std::vector<std::string> out) {
    p_.inputs = static_cast<std::uint32_t>(in.size());
    p_.outputs = static_cast<std::uint32_t>(out.size());
    for (auto& n : in) p_.buffers.push_back(n);
    for (auto& n : out) p_.buffers.push_back(n);
  }
  int buf(const std::string& name) {
    for (std::size_t i = 0; i < p_.buffers.size(); ++i)
      if (p_.buffers[i] == name) return static_cast<int>(i);
    p_.buffers.push_back(name);
    return static_cast<int>(p_.buffers.size() - 1);
  }
  int k(double v) {
    for (std::size_t i = 0; i < p_.consts.size(); ++i)
      if (p_.consts[i] == v) return -1 - static_cast<int>(i);
    p_.consts.push_back(v);
    return -static_cast<int>(p_.consts.size());
  }
  void op(Op o, int d, int a, int b = 0, int c = 0) { p_.ops.push_back({o, d, a, b, c}); }
  EwProgram done() { return p_; }

 private:
  EwProgram p_;
};

constexpr double kGelu1 = 1.5957691216057308;  // 2 sqrt(2 / pi)
constexpr double kGelu3 = 0.044715;

// r = sigmoid(x) = 1 / (1 + exp(-x)) into buffer r (x a buffer).
void sigmoid(Ew& e, int r, int x) {
  e.op(Op::FNeg, r, x);
  e.op(Op::FExp, r, r);
  e.op(Op::FAdd, r, r, e.k(1.0));
  e.op(Op::FRecip, r, r);
}

// r = sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) (the tanh approximation of GELU: gelu = x r).
void gelu_gate(Ew& e, int r, int x) {
  e.op(Op::FMul, r, x, x);
  e.op(Op::FMac, r, e.k(-kGelu1), r, e.k(-kGelu1 * kGelu3));
  e.op(Op::FMul, r, r, x);
  e.op(Op::FExp, r, r);
  e.op(Op::FAdd, r, r, e.k(1.0));
  e.op(Op::FRecip, r, r);
}

// d = d + a b when accumulating into d, else d = a b.
void product_out(Ew& e, int d, int a, int b, bool accumulate) {
  if (accumulate)
    e.op(Op::FMac, d, d, a, b);
  else
    e.op(Op::FMul, d, a, b);
}

}  // namespace

EwProgram elementwise_forward(LayerKind kind) {
  switch (kind) {
    case LayerKind::Add: {
      Ew e({"a", "b"}, {"y"});
      e.op(Op::FAdd, 2, 0, 1);
      return e.done();
    }
    case LayerKind::Mul: {
      Ew e({"a", "b"}, {"y"});
      e.op(Op::FMul, 2, 0, 1);
      return e.done();
    }
    case LayerKind::Relu: {
      Ew e({"x"}, {"y"});
      e.op(Op::FMax, 1, 0, e.k(0.0));
      return e.done();
    }
    case LayerKind::Gelu: {
      Ew e({"x"}, {"y"});
      gelu_gate(e, 1, 0);
      e.op(Op::FMul, 1, 0, 1);
      return e.done();
    }
    case LayerKind::Silu: {
      Ew e({"x"}, {"y"});
      sigmoid(e, 1, 0);
      e.op(Op::FMul, 1, 0, 1);
      return e.done();
    }
    case LayerKind::Swiglu: {
      Ew e({"gate", "up"}, {"y"});
      sigmoid(e, 2, 0);
      e.op(Op::FMul, 2, 0, 2);
      e.op(Op::FMul, 2, 2, 1);
      return e.done();
    }
    default:
      throw std::logic_error("elementwise_forward: not an elementwise kind");
  }
}

EwProgram elementwise_backward(LayerKind kind, const std::vector<bool>& acc) {
  auto accumulate = [&](std::size_t i) { return i < acc.size() && acc[i]; };
  switch (kind) {
    case LayerKind::Add: {  // da = db = dy
      Ew e({"dy"}, {"da", "db"});
      for (int o = 1; o <= 2; ++o) {
        if (accumulate(static_cast<std::size_t>(o - 1)))
          e.op(Op::FAdd, o, o, 0);
        else
          e.op(Op::FMov, o, 0);
      }
      return e.done();
    }
    case LayerKind::Mul: {  // da = dy b, db = dy a
      Ew e({"dy", "a", "b"}, {"da", "db"});
      product_out(e, 3, 0, 2, accumulate(0));
      product_out(e, 4, 0, 1, accumulate(1));
      return e.done();
    }
    case LayerKind::Relu: {  // dx = dy step(x): step from saturating multiplies, exactly 0 or 1
      Ew e({"dy", "x"}, {"dx"});
      const int m = e.buf("mask");
      e.op(Op::FMul, m, 1, e.k(kLargestPowerOfTwo));
      e.op(Op::FMax, m, m, e.k(0.0));
      e.op(Op::FMul, m, m, e.k(kLargestPowerOfTwo));
      e.op(Op::FMin, m, m, e.k(1.0));
      product_out(e, 2, 0, m, accumulate(0));
      return e.done();
    }
    case LayerKind::Gelu: {  // d/dx x r(x) = r + x r (1 - r) (k1 + 3 k3 k1 x^2)
      Ew e({"dy", "x"}, {"dx"});
      const int r = e.buf("r"), u = e.buf("u"), w = e.buf("w");
      gelu_gate(e, r, 1);
      e.op(Op::FMul, u, 1, 1);
      e.op(Op::FMac, u, e.k(kGelu1), u, e.k(3 * kGelu1 * kGelu3));
      e.op(Op::FSub, w, e.k(1.0), r);
      e.op(Op::FMul, w, w, 1);
      e.op(Op::FMul, w, w, r);
      e.op(Op::FMac, w, r, w, u);
      product_out(e, 2, 0, w, accumulate(0));
      return e.done();
    }
    case LayerKind::Silu: {  // d/dx x s(x) = s (1 + x (1 - s))
      Ew e({"dy", "x"}, {"dx"});
      const int r = e.buf("r"), w = e.buf("w");
      sigmoid(e, r, 1);
      e.op(Op::FSub, w, e.k(1.0), r);
      e.op(Op::FMul, w, w, 1);
      e.op(Op::FAdd, w, w, e.k(1.0));
      e.op(Op::FMul, w, w, r);
      product_out(e, 2, 0, w, accumulate(0));
      return e.done();
    }
    case LayerKind::Swiglu: {  // y = silu(g) u: du = dy silu(g), dg = dy u silu'(g)
      Ew e({"dy", "gate", "up"}, {"dgate", "dup"});
      const int r = e.buf("r"), s = e.buf("s"), w = e.buf("w");
      // dgate before dup: when both are one tensor (swiglu [a, a]) the second adds into the first.
      sigmoid(e, r, 1);
      e.op(Op::FMul, s, 1, r);
      e.op(Op::FSub, w, e.k(1.0), r);
      e.op(Op::FMul, w, w, 1);
      e.op(Op::FAdd, w, w, e.k(1.0));
      e.op(Op::FMul, w, w, r);
      e.op(Op::FMul, w, w, 2);
      product_out(e, 3, 0, w, accumulate(0));
      product_out(e, 4, 0, s, accumulate(1));
      return e.done();
    }
    default:
      throw std::logic_error("elementwise_backward: not an elementwise kind");
  }
}

std::uint32_t constant_bits(hw::DType t, double v) {
  namespace nm = hw::numerics;
  if (v == kLargestPowerOfTwo) return nm::from_double(t, t == hw::DType::F16 ? 32768.0 : std::ldexp(1.0, 127));
  return nm::from_double(t, v);
}

void run_elementwise(const EwProgram& p, hw::DType t, std::vector<std::vector<std::uint32_t>*> buffers) {
  namespace nm = hw::numerics;
  std::vector<std::uint32_t> k;
  for (double c : p.consts) k.push_back(constant_bits(t, c));
  const std::size_t n = buffers.at(0)->size();
  for (auto* b : buffers)
    if (b->size() != n) b->assign(n, 0);
  auto get = [&](int id, std::size_t i) {
    return id >= 0 ? (*buffers[static_cast<std::size_t>(id)])[i] : k[static_cast<std::size_t>(-1 - id)];
  };
  for (const auto& o : p.ops)
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t r = 0;
      switch (o.op) {
        case Op::FMov:
          r = get(o.a, i);
          break;
        case Op::FAdd:
          r = nm::add(t, get(o.a, i), get(o.b, i));
          break;
        case Op::FSub:
          r = nm::sub(t, get(o.a, i), get(o.b, i));
          break;
        case Op::FMul:
          r = nm::mul(t, get(o.a, i), get(o.b, i));
          break;
        case Op::FMac:
          r = nm::fma(t, get(o.b, i), get(o.c, i), get(o.a, i));
          break;
        case Op::FMax:
          r = nm::max(t, get(o.a, i), get(o.b, i));
          break;
        case Op::FMin:
          r = nm::min(t, get(o.a, i), get(o.b, i));
          break;
        case Op::FNeg:
          r = nm::neg(t, get(o.a, i));
          break;
        case Op::FExp:
          r = nm::exp(t, get(o.a, i));
          break;
        case Op::FRecip:
          r = nm::recip(t, get(o.a, i));
          break;
        default:
          throw std::logic_error("run_elementwise: unsupported op");
      }
      (*buffers[static_cast<std::size_t>(o.d)])[i] = r;
    }
}

}  // namespace wafersim::models::compiler
