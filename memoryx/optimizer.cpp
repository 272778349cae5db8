#include "memoryx/optimizer.h"

#include <fmt/format.h>

#include <cmath>

#include "sim/errors.h"

namespace wafersim::memoryx {

const char* to_string(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::Sgd:
      return "sgd";
    case OptimizerKind::Momentum:
      return "momentum";
    case OptimizerKind::Adam:
      return "adam";
    case OptimizerKind::AdamW:
      return "adamw";
  }
  return "?";
}

OptimizerKind parse_optimizer_kind(std::string_view text) {
  for (auto k : {OptimizerKind::Sgd, OptimizerKind::Momentum, OptimizerKind::Adam, OptimizerKind::AdamW})
    if (text == to_string(k)) return k;
  throw sim::InputError(fmt::format("optimizer: expected one of sgd, momentum, adam, adamw, found '{}'", text));
}

void OptimizerConfig::validate() const {
  auto check = [](bool ok, const char* what, float v, const char* expected) {
    if (!ok) throw sim::InputError(fmt::format("optimizer.{}: expected {}, found {}", what, expected, v));
  };
  check(std::isfinite(learning_rate) && learning_rate >= 0, "learning_rate", learning_rate, "a finite value >= 0");
  check(std::isfinite(weight_decay) && weight_decay >= 0, "weight_decay", weight_decay, "a finite value >= 0");
  check(momentum >= 0 && momentum < 1, "momentum", momentum, "a value in [0, 1)");
  check(beta1 >= 0 && beta1 < 1, "beta1", beta1, "a value in [0, 1)");
  check(beta2 >= 0 && beta2 < 1, "beta2", beta2, "a value in [0, 1)");
  check(std::isfinite(epsilon) && epsilon > 0, "epsilon", epsilon, "a finite value > 0");
  check(std::isfinite(gradient_scale), "gradient_scale", gradient_scale, "a finite value");
  check(std::isfinite(schedule.min_learning_rate) && schedule.min_learning_rate >= 0 &&
            schedule.min_learning_rate <= learning_rate,
        "schedule.min_learning_rate", schedule.min_learning_rate, "a value in [0, learning_rate]");
}

std::uint32_t moment_count(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::Sgd:
      return 0;
    case OptimizerKind::Momentum:
      return 1;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW:
      return 2;
  }
  return 0;
}

BiasCorrection bias_correction(const OptimizerConfig& c, std::uint32_t t) {
  float b1t = 1.0F;
  float b2t = 1.0F;
  for (std::uint32_t i = 0; i < t; ++i) {
    b1t *= c.beta1;
    b2t *= c.beta2;
  }
  return BiasCorrection{1.0F - b1t, 1.0F - b2t};
}

void engine_update(const OptimizerConfig& c, std::uint32_t t, float* w, float* m, float* v, const float* g,
                   std::size_t n) {
  const float lr = c.learning_rate_at(t);
  const float wd = c.weight_decay;
  const float scale = c.gradient_scale;
  switch (c.kind) {
    case OptimizerKind::Sgd:
      for (std::size_t i = 0; i < n; ++i) {
        float gi = g[i] * scale;
        if (wd != 0.0F) gi = gi + wd * w[i];
        w[i] = w[i] - lr * gi;
      }
      return;
    case OptimizerKind::Momentum:
      for (std::size_t i = 0; i < n; ++i) {
        float gi = g[i] * scale;
        if (wd != 0.0F) gi = gi + wd * w[i];
        m[i] = c.momentum * m[i] + gi;
        w[i] = w[i] - lr * m[i];
      }
      return;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: {
      const bool decoupled = c.kind == OptimizerKind::AdamW;
      const BiasCorrection bc = bias_correction(c, t);
      const float one_minus_b1 = 1.0F - c.beta1;
      const float one_minus_b2 = 1.0F - c.beta2;
      const float decay = 1.0F - lr * wd;
      for (std::size_t i = 0; i < n; ++i) {
        float gi = g[i] * scale;
        if (wd != 0.0F && !decoupled) gi = gi + wd * w[i];
        if (wd != 0.0F && decoupled) w[i] = w[i] * decay;
        m[i] = c.beta1 * m[i] + one_minus_b1 * gi;
        v[i] = c.beta2 * v[i] + one_minus_b2 * (gi * gi);
        const float m_hat = m[i] / bc.one_minus_beta1_t;
        const float v_hat = v[i] / bc.one_minus_beta2_t;
        w[i] = w[i] - lr * (m_hat / (std::sqrt(v_hat) + c.epsilon));
      }
      return;
    }
  }
}

}  // namespace wafersim::memoryx
