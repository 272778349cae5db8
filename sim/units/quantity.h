#pragma once
// Physical quantities read from configuration, each in one base unit.

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/types.h"

namespace wafersim::units {

// The kind of a quantity; decides which units a configuration value may carry.
enum class Dimension { Frequency, DataSize, Bandwidth, Duration, Cycles, ParamRate, Energy, Power };

// Every dimension, in declaration order (for readers that accept any quantity).
inline constexpr Dimension kDimensions[] = {Dimension::Frequency, Dimension::DataSize, Dimension::Bandwidth,
                                            Dimension::Duration,  Dimension::Cycles,   Dimension::ParamRate,
                                            Dimension::Energy,    Dimension::Power};

const char* to_string(Dimension d);
// An example spelling shown in diagnostics, e.g. "1.1 GHz".
const char* example(Dimension d);

// Clock or event frequency in hertz.
struct Frequency {
  double hz = 0;
  [[nodiscard]] double period_seconds() const { return 1.0 / hz; }
  friend bool operator==(Frequency a, Frequency b) { return a.hz == b.hz; }
};

// An amount of data, kept in bits so that bits and bytes never mix silently.
struct DataSize {
  std::uint64_t bits = 0;
  static constexpr DataSize from_bytes(std::uint64_t bytes) { return DataSize{bytes * 8}; }
  [[nodiscard]] constexpr std::uint64_t bytes() const { return bits / 8; }
  friend bool operator==(DataSize a, DataSize b) { return a.bits == b.bits; }
};

// A data rate in bits per second.
struct Bandwidth {
  double bits_per_s = 0;
  [[nodiscard]] double bytes_per_s() const { return bits_per_s / 8.0; }
  friend bool operator==(Bandwidth a, Bandwidth b) { return a.bits_per_s == b.bits_per_s; }
};

// A span of wall-clock (simulated) time in seconds.
struct Duration {
  double seconds = 0;
  friend bool operator==(Duration a, Duration b) { return a.seconds == b.seconds; }
};

// A processing rate in parameters per second (optimizer throughput).
struct ParamRate {
  double per_s = 0;
  friend bool operator==(ParamRate a, ParamRate b) { return a.per_s == b.per_s; }
};

// An amount of energy in joules (per-event coefficients: "0.4 pJ").
struct Energy {
  double joules = 0;
  friend bool operator==(Energy a, Energy b) { return a.joules == b.joules; }
};

// A power in watts (static power: "2 mW", system power: "3 kW").
struct Power {
  double watts = 0;
  friend bool operator==(Power a, Power b) { return a.watts == b.watts; }
};

// The outcome of parsing one quantity: a value in base units (bits, bits/s, Hz,
// seconds, cycles, params/s, joules, watts) or an error with the 0-based column inside the text.
struct ParseResult {
  bool ok = false;
  double value = 0;  // base units; DataSize and Cycles are whole numbers
  std::string error;
  std::size_t column = 0;
};

// Parses text such as "1.1 GHz", "48 KiB", "100 Gb/s", "3 us", "2 cycles", "0.4 pJ", "2 mW".
// A bare number, an unknown or ambiguous unit, or a unit of another dimension is an error.
ParseResult parse(std::string_view text, Dimension dim);

// Formats a value in base units with the largest prefix that keeps it exact, so that
// parse(format(v)) == v. Data sizes prefer IEC prefixes when they divide evenly.
std::string format(double value, Dimension dim);

std::string format(Frequency f);
std::string format(DataSize s);
std::string format(Bandwidth b);
std::string format(Duration d);
std::string format(sim::Cycle c);
std::string format(ParamRate r);
std::string format(Energy e);
std::string format(Power p);
// The unit symbol of a dimension's base unit ("Hz", "b", "b/s", "s", "cycles", "param/s", "J", "W").
const char* base_unit(Dimension d);
// Whether values of the dimension take the prefixes below one (m, u, n, p, f).
bool takes_small_prefixes(Dimension d);

// Human-readable engineering notation for reports, e.g. 6.63e15 FLOP/s -> "6.63 PFLOP/s".
std::string pretty(double value, std::string_view unit, int digits = 3);

}  // namespace wafersim::units
