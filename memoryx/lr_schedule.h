#pragma once
// The learning rate of each optimizer update: constant, or a linear warm-up followed by a
// linear or cosine decay to a floor over a run's updates (docs/training.md).

#include <cstdint>
#include <string_view>

namespace wafersim::memoryx {

enum class LrDecay : std::uint8_t { Constant, Linear, Cosine };
const char* to_string(LrDecay d);
// "constant", "linear", "cosine"; throws sim::InputError naming the choices otherwise.
LrDecay parse_lr_decay(std::string_view text);

struct LrSchedule {
  LrDecay decay = LrDecay::Constant;
  std::uint32_t warmup_updates = 0;  // updates 1 .. W ramp linearly from base / W up to base
  std::uint32_t total_updates = 0;   // the decay reaches min_learning_rate here (0: no decay)
  float min_learning_rate = 0.0F;

  // The rate of update t (1 for the first) for a base rate `base`. Evaluated in double and
  // rounded once to float, so the engine and the host reference agree bit for bit. A
  // constant schedule without warm-up returns `base` itself.
  [[nodiscard]] float rate(float base, std::uint32_t t) const;
  [[nodiscard]] bool is_constant() const { return decay == LrDecay::Constant && warmup_updates == 0; }
};

}  // namespace wafersim::memoryx
