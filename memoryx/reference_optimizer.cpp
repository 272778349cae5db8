#include "memoryx/reference_optimizer.h"

#include <cmath>
#include <stdexcept>

namespace wafersim::memoryx {
namespace {

using Tensor = std::vector<float>;

Tensor scaled(const Tensor& a, float k) {
  Tensor r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = a[i] * k;
  return r;
}

// a + k * b
Tensor axpy(const Tensor& a, float k, const Tensor& b) {
  Tensor r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = a[i] + k * b[i];
  return r;
}

// ka * a + kb * b
Tensor blend(float ka, const Tensor& a, float kb, const Tensor& b) {
  Tensor r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = ka * a[i] + kb * b[i];
  return r;
}

Tensor square(const Tensor& a) {
  Tensor r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) r[i] = a[i] * a[i];
  return r;
}

}  // namespace

ReferenceState ReferenceState::with_weights(std::vector<float> w, OptimizerKind kind) {
  ReferenceState s;
  const std::size_t n = w.size();
  s.weights = std::move(w);
  if (moment_count(kind) >= 1) s.m.assign(n, 0.0F);
  if (moment_count(kind) >= 2) s.v.assign(n, 0.0F);
  return s;
}

void reference_step(const OptimizerConfig& c, ReferenceState& s, const std::vector<float>& gradient_sum) {
  if (gradient_sum.size() != s.weights.size()) throw std::invalid_argument("reference_step: size mismatch");
  const float lr = c.learning_rate_at(s.updates + 1);
  const float wd = c.weight_decay;
  const bool coupled_decay = wd != 0.0F && c.kind != OptimizerKind::AdamW;
  Tensor g = scaled(gradient_sum, c.gradient_scale);
  if (coupled_decay) g = axpy(g, wd, s.weights);
  ++s.updates;

  switch (c.kind) {
    case OptimizerKind::Sgd:
      // w <- w - lr * g
      s.weights = blend(1.0F, s.weights, -lr, g);
      break;
    case OptimizerKind::Momentum:
      // m <- mu * m + g;  w <- w - lr * m
      s.m = blend(c.momentum, s.m, 1.0F, g);
      s.weights = blend(1.0F, s.weights, -lr, s.m);
      break;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      if (c.kind == OptimizerKind::AdamW && wd != 0.0F) s.weights = scaled(s.weights, 1.0F - lr * wd);
      s.m = blend(c.beta1, s.m, 1.0F - c.beta1, g);
      s.v = blend(c.beta2, s.v, 1.0F - c.beta2, square(g));
      float beta1_t = 1.0F;
      float beta2_t = 1.0F;
      for (std::uint32_t k = 0; k < s.updates; ++k) {
        beta1_t = beta1_t * c.beta1;
        beta2_t = beta2_t * c.beta2;
      }
      const float bc1 = 1.0F - beta1_t;
      const float bc2 = 1.0F - beta2_t;
      Tensor step(g.size());
      for (std::size_t i = 0; i < g.size(); ++i) {
        const float m_hat = s.m[i] / bc1;
        const float v_hat = s.v[i] / bc2;
        step[i] = m_hat / (std::sqrt(v_hat) + c.epsilon);
      }
      for (std::size_t i = 0; i < g.size(); ++i) s.weights[i] = s.weights[i] - lr * step[i];
      break;
    }
  }
}

std::vector<float> reference_sum(const std::vector<const std::vector<float>*>& in_order) {
  if (in_order.empty()) return {};
  std::vector<float> acc = *in_order.front();
  for (std::size_t k = 1; k < in_order.size(); ++k) {
    if (in_order[k]->size() != acc.size()) throw std::invalid_argument("reference_sum: size mismatch");
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = acc[i] + (*in_order[k])[i];
  }
  return acc;
}

}  // namespace wafersim::memoryx
