#include "memoryx/lr_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/errors.h"

namespace wafersim::memoryx {

const char* to_string(LrDecay d) {
  switch (d) {
    case LrDecay::Constant:
      return "constant";
    case LrDecay::Linear:
      return "linear";
    case LrDecay::Cosine:
      return "cosine";
  }
  return "?";
}

LrDecay parse_lr_decay(std::string_view text) {
  for (auto d : {LrDecay::Constant, LrDecay::Linear, LrDecay::Cosine})
    if (text == to_string(d)) return d;
  throw sim::InputError(fmt::format("schedule: expected one of constant, linear, cosine, found '{}'", text));
}

float LrSchedule::rate(float base, std::uint32_t t) const {
  if (is_constant()) return base;
  const double b = base;
  if (warmup_updates > 0 && t <= warmup_updates)
    return static_cast<float>(b * static_cast<double>(t) / static_cast<double>(warmup_updates));
  if (decay == LrDecay::Constant || total_updates <= warmup_updates) return base;
  const double span = static_cast<double>(total_updates - warmup_updates);
  const double done = std::min(1.0, static_cast<double>(t - warmup_updates) / span);
  const double floor = min_learning_rate;
  const double shape = decay == LrDecay::Linear ? 1.0 - done : 0.5 * (1.0 + std::cos(M_PI * done));
  return static_cast<float>(floor + (b - floor) * shape);
}

}  // namespace wafersim::memoryx
