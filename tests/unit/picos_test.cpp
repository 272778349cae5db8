// Exact picosecond arithmetic: the rounding rules every timing formula relies on.

#include <gtest/gtest.h>

#include "sim/errors.h"
#include "sim/picos.h"
#include "sim/units/quantity.h"

namespace wafersim::sim::picos_test {
namespace {

units::Bandwidth bw(const char* text) {
  return units::Bandwidth{units::parse(text, units::Dimension::Bandwidth).value};
}

TEST(Picos, TransferTimeRoundsUpToThePicosecond) {
  EXPECT_EQ(transfer_time(65536, bw("100 Gb/s")), Picos(5'242'880));  // exact
  EXPECT_EQ(transfer_time(65536, bw("600 Gb/s")), Picos(873'814));    // 873,813.33 rounds up
  EXPECT_EQ(transfer_time(1, bw("3 Gb/s")), Picos(2667));             // 2666.67
  EXPECT_EQ(transfer_time(0, bw("100 Gb/s")), Picos(0));
  EXPECT_EQ(transfer_time(4096, units::Bandwidth{0}), Picos(0));  // 0: infinitely fast
  // 1 PB at 1 Tb/s: the intermediate product (8e27) needs 128 bits; the result fits.
  EXPECT_EQ(transfer_time(1'000'000'000'000'000ULL, bw("1 Tb/s")), Picos(8'000'000'000'000'000ULL));
  // 1 PB at 1 Mb/s would take 8e21 ps: more than 64 bits of picoseconds.
  EXPECT_THROW(transfer_time(1'000'000'000'000'000ULL, bw("1 Mb/s")), SimulationError);
}

TEST(Picos, ParsedBandwidthsAreWholeBitsPerSecond) {
  EXPECT_EQ(bits_per_second(bw("1.6 Tb/s")), 1'600'000'000'000u);
  EXPECT_EQ(bits_per_second(bw("4.8 Tb/s")), 4'800'000'000'000u);
  EXPECT_EQ(bits_per_second(bw("19.2 Tb/s")), 19'200'000'000'000u);
}

TEST(Picos, DurationsAndParameterTimes) {
  EXPECT_EQ(to_picos(units::Duration{100e-9}), Picos(100'000));
  EXPECT_EQ(to_picos(units::Duration{1e-3}), Picos(1'000'000'000));
  EXPECT_EQ(param_time(393'216, units::ParamRate{200e9}), Picos(1'966'080));
  EXPECT_EQ(param_time(1, units::ParamRate{3e9}), Picos(334));  // 333.3 rounds up
  EXPECT_EQ(format(Picos(132'195'200)), "132.195200 us");
  EXPECT_EQ(format(Picos(999)), "999 ps");
}

}  // namespace
}  // namespace wafersim::sim::picos_test
