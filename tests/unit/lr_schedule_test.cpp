// The learning-rate schedule MemoryX's engine and the host reference share: exact rates.

#include <gtest/gtest.h>

#include "memoryx/lr_schedule.h"
#include "sim/errors.h"

namespace wafersim::memoryx::lr_schedule_test {
namespace {

TEST(LrSchedule, ConstantReturnsTheBaseItself) {
  const LrSchedule s;
  EXPECT_TRUE(s.is_constant());
  EXPECT_EQ(s.rate(1e-3F, 1), 1e-3F);
  EXPECT_EQ(s.rate(1e-3F, 1000), 1e-3F);
}

TEST(LrSchedule, WarmupThenLinearDecayToTheFloor) {
  LrSchedule s;
  s.decay = LrDecay::Linear;
  s.warmup_updates = 4;
  s.total_updates = 12;
  s.min_learning_rate = 0.25F;
  EXPECT_EQ(s.rate(1.0F, 1), 0.25F);
  EXPECT_EQ(s.rate(1.0F, 2), 0.5F);
  EXPECT_EQ(s.rate(1.0F, 4), 1.0F);
  EXPECT_EQ(s.rate(1.0F, 8), 0.625F);  // halfway from 1 down to 0.25
  EXPECT_EQ(s.rate(1.0F, 12), 0.25F);
  EXPECT_EQ(s.rate(1.0F, 20), 0.25F);  // past the end: the floor
}

TEST(LrSchedule, CosineDecayHalfwayIsTheMean) {
  LrSchedule s;
  s.decay = LrDecay::Cosine;
  s.total_updates = 10;
  EXPECT_EQ(s.rate(2.0F, 0), 2.0F);
  EXPECT_EQ(s.rate(2.0F, 5), 1.0F);
  EXPECT_EQ(s.rate(2.0F, 10), 0.0F);
}

TEST(LrSchedule, DecayNamesAreChecked) {
  EXPECT_EQ(parse_lr_decay("cosine"), LrDecay::Cosine);
  EXPECT_THROW(parse_lr_decay("exp"), sim::InputError);
}

}  // namespace
}  // namespace wafersim::memoryx::lr_schedule_test
