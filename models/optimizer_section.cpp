#include "models/optimizer_section.h"

#include <utility>

namespace wafersim::models {

memoryx::OptimizerConfig read_optimizer(sim::config::Section root) {
  // The defaults of memoryx::OptimizerConfig, as the decimals a user writes.
  memoryx::OptimizerConfig c;
  auto s = root.section("optimizer", "the optimizer MemoryX runs when this model is trained (wafersim train)");
  const double big = 1e30;
  c.kind = memoryx::parse_optimizer_kind(
      s.choice("kind", "adam", {"sgd", "momentum", "adam", "adamw"}, "the update rule (docs/memoryx.md)"));
  c.learning_rate = static_cast<float>(s.real("learning_rate", 1e-3, 0, big, "the base learning rate"));
  c.weight_decay = static_cast<float>(
      s.real("weight_decay", 0, 0, big, "weight decay: added to the gradient (L2), decoupled with adamw"));
  c.momentum = static_cast<float>(s.real("momentum", 0.9, 0, 1, "momentum: the velocity's decay"));
  c.beta1 = static_cast<float>(s.real("beta1", 0.9, 0, 1, "adam, adamw: the first moment's decay"));
  c.beta2 = static_cast<float>(s.real("beta2", 0.999, 0, 1, "adam, adamw: the second moment's decay"));
  c.epsilon = static_cast<float>(s.real("epsilon", 1e-8, 0, 1, "adam, adamw: added to the denominator"));
  const std::pair<const char*, float> below_one[] = {{"momentum", c.momentum}, {"beta1", c.beta1}, {"beta2", c.beta2}};
  for (const auto& [key, value] : below_one)
    if (value >= 1) s.error(key, "expected a value below 1");
  if (s.has("epsilon") && c.epsilon <= 0) s.error("epsilon", "expected a value above 0");

  auto sch = s.section("schedule", "the learning rate over the run's updates (one update per step)");
  c.schedule.decay = memoryx::parse_lr_decay(sch.choice("decay", "constant", {"constant", "linear", "cosine"},
                                                        "after the warm-up: constant, linear or cosine decay"));
  c.schedule.warmup_updates = static_cast<std::uint32_t>(
      sch.integer("warmup_steps", 0, 0, 1 << 30, "steps whose rate ramps linearly up to learning_rate"));
  c.schedule.total_updates = static_cast<std::uint32_t>(sch.integer(
      "steps", 0, 0, 1 << 30, "the step at which the decay reaches min_learning_rate (0: the run's steps)"));
  c.schedule.min_learning_rate =
      static_cast<float>(sch.real("min_learning_rate", 0, 0, big, "the rate the decay ends at"));
  if (c.schedule.min_learning_rate > c.learning_rate)
    sch.error("min_learning_rate", "expected a value no larger than optimizer.learning_rate");
  return c;
}

}  // namespace wafersim::models
