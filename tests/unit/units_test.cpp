#include <gtest/gtest.h>

#include "sim/units/quantity.h"

namespace wafersim::units::units_test {
namespace {

double ok(const char* text, Dimension d) {
  auto r = parse(text, d);
  EXPECT_TRUE(r.ok) << text << ": " << r.error;
  return r.value;
}

std::string err(const char* text, Dimension d) {
  auto r = parse(text, d);
  EXPECT_FALSE(r.ok) << text << " parsed as " << r.value;
  return r.error;
}

TEST(Units, Frequency) {
  EXPECT_EQ(ok("1.1 GHz", Dimension::Frequency), 1.1e9);
  EXPECT_EQ(ok("850 MHz", Dimension::Frequency), 850e6);
  EXPECT_EQ(ok("850MHz", Dimension::Frequency), 850e6);
  EXPECT_EQ(ok("2e9 Hz", Dimension::Frequency), 2e9);
  EXPECT_EQ(ok("  3 kHz  ", Dimension::Frequency), 3e3);
}

TEST(Units, DataSizesKeepBitsAndBytesApart) {
  EXPECT_EQ(ok("48 KiB", Dimension::DataSize), 48.0 * 1024 * 8);
  EXPECT_EQ(ok("48 Kib", Dimension::DataSize), 48.0 * 1024);
  EXPECT_EQ(ok("40 GB", Dimension::DataSize), 40e9 * 8);
  EXPECT_EQ(ok("40 Gb", Dimension::DataSize), 40e9);
  EXPECT_EQ(ok("64 b", Dimension::DataSize), 64);
  EXPECT_EQ(ok("64 bits", Dimension::DataSize), 64);
  EXPECT_EQ(ok("2 bytes", Dimension::DataSize), 16);
  EXPECT_EQ(ok("1.5 KiB", Dimension::DataSize), 1536.0 * 8);
  EXPECT_EQ(ok("2.4 PB", Dimension::DataSize), 2.4e15 * 8);
  EXPECT_EQ(ok("1 GiB", Dimension::DataSize), 8.0 * (1ULL << 30));
}

TEST(Units, Bandwidth) {
  EXPECT_EQ(ok("100 Gb/s", Dimension::Bandwidth), 100e9);
  EXPECT_EQ(ok("1.2 Tb/s", Dimension::Bandwidth), 1.2e12);
  EXPECT_EQ(ok("20 PB/s", Dimension::Bandwidth), 20e15 * 8);
  EXPECT_EQ(ok("10 Gbps", Dimension::Bandwidth), 10e9);
  EXPECT_EQ(ok("1 GiB/s", Dimension::Bandwidth), 8.0 * (1ULL << 30));
}

TEST(Units, DurationCyclesRates) {
  EXPECT_DOUBLE_EQ(ok("3 us", Dimension::Duration), 3e-6);
  EXPECT_DOUBLE_EQ(ok("3 \xC2\xB5s", Dimension::Duration), 3e-6);
  EXPECT_DOUBLE_EQ(ok("100 ns", Dimension::Duration), 100e-9);
  EXPECT_DOUBLE_EQ(ok("1 ms", Dimension::Duration), 1e-3);
  EXPECT_EQ(ok("2 cycles", Dimension::Cycles), 2);
  EXPECT_EQ(ok("1 cycle", Dimension::Cycles), 1);
  EXPECT_EQ(ok("50 Gparam/s", Dimension::ParamRate), 50e9);
}

TEST(Units, BareNumberIsAnError) {
  EXPECT_NE(err("1100000000", Dimension::Frequency).find("bare number"), std::string::npos);
  EXPECT_NE(err("48", Dimension::DataSize).find("bare number"), std::string::npos);
  EXPECT_NE(err("2", Dimension::Cycles).find("bare number"), std::string::npos);
}

TEST(Units, AmbiguousAndMalformedUnits) {
  EXPECT_NE(err("48 KB", Dimension::DataSize).find("ambiguous prefix 'K'"), std::string::npos);
  EXPECT_NE(err("1 mb", Dimension::DataSize).find("ambiguous prefix 'm'"), std::string::npos);
  EXPECT_NE(err("1 GiHz", Dimension::Frequency).find("binary prefix"), std::string::npos);
  EXPECT_NE(err("1.1 ghz", Dimension::Frequency).find("unknown unit"), std::string::npos);
  EXPECT_NE(err("1.1 GB", Dimension::Frequency).find("unknown unit"), std::string::npos);
  EXPECT_NE(err("GHz", Dimension::Frequency).find("expected a frequency"), std::string::npos);
  EXPECT_NE(err("-1 GHz", Dimension::Frequency).find("non-negative"), std::string::npos);
  EXPECT_NE(err("0.1 b", Dimension::DataSize).find("whole number of bits"), std::string::npos);
  EXPECT_NE(err("1.5 cycles", Dimension::Cycles).find("whole number of cycles"), std::string::npos);
  EXPECT_NE(err("100 Gb", Dimension::Bandwidth).find("unknown unit"), std::string::npos);
  EXPECT_NE(err("3 ks", Dimension::Duration).find("unknown time unit"), std::string::npos);
  EXPECT_NE(err("1e999 Hz", Dimension::Frequency).find("out of range"), std::string::npos);
  err("1.1.1 GHz", Dimension::Frequency);
  err("", Dimension::Frequency);
}

TEST(Units, ErrorColumnPointsAtTheUnit) {
  auto r = parse("48 KB", Dimension::DataSize);
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.column, 3u);
}

TEST(Units, FormatRoundTrips) {
  EXPECT_EQ(format(Frequency{1.1e9}), "1.1 GHz");
  EXPECT_EQ(format(Frequency{850e6}), "850 MHz");
  EXPECT_EQ(format(DataSize::from_bytes(48 * 1024)), "48 KiB");
  EXPECT_EQ(format(DataSize::from_bytes(40'000'000'000ULL)), "40 GB");
  EXPECT_EQ(format(DataSize{32}), "4 B");
  EXPECT_EQ(format(DataSize{33}), "33 b");
  EXPECT_EQ(format(Bandwidth{100e9}), "100 Gb/s");
  EXPECT_EQ(format(Bandwidth{1.2e12}), "1.2 Tb/s");
  EXPECT_EQ(format(Duration{3e-6}), "3 us");
  EXPECT_EQ(format(sim::Cycle(2)), "2 cycles");
  EXPECT_EQ(format(sim::Cycle(1)), "1 cycle");
  for (double v : {1.1e9, 850e6, 123456789.0, 0.999e9, 1e3}) {
    auto r = parse(format(v, Dimension::Frequency), Dimension::Frequency);
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.value, v);
  }
  for (double v : {3e-6, 1.5e-9, 0.1, 7e-12, 1.0 / 3.0}) {
    auto r = parse(format(v, Dimension::Duration), Dimension::Duration);
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.value, v);
  }
}

TEST(Units, Pretty) {
  EXPECT_EQ(pretty(6.63e15, "FLOP/s"), "6.63 PFLOP/s");
  EXPECT_EQ(pretty(12, "B"), "12 B");
}

}  // namespace
}  // namespace wafersim::units::units_test
