#include "sim/units/quantity.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

namespace wafersim::units {
namespace {

struct Number {
  std::string mantissa;  // digits with an optional '.', as written
  int exponent = 0;      // written decimal exponent (e.g. from "1e9")
  std::size_t end = 0;   // index after the number
};

std::optional<Number> scan_number(std::string_view s, std::size_t pos) {
  Number n;
  std::size_t i = pos;
  bool digits = false;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) { n.mantissa += s[i++]; digits = true; }
  if (i < s.size() && s[i] == '.') {
    n.mantissa += s[i++];
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) { n.mantissa += s[i++]; digits = true; }
  }
  if (!digits) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    bool neg = false;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) neg = s[j++] == '-';
    int e = 0;
    bool edigits = false;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
      if (e < 10000) e = e * 10 + (s[j] - '0');
      ++j;
      edigits = true;
    }
    if (edigits) {
      n.exponent = neg ? -e : e;
      i = j;
    }
  }
  n.end = i;
  return n;
}

// mantissa x 10^exp10, correctly rounded by strtod.
double decimal_value(const Number& n, int extra_exp10) {
  std::string text = fmt::format("{}e{}", n.mantissa, n.exponent + extra_exp10);
  return std::strtod(text.c_str(), nullptr);
}

struct Prefix {
  std::string_view symbol;
  int exp10 = 0;  // decimal prefixes
  int exp2 = 0;   // binary prefixes (IEC)
};

constexpr std::array<Prefix, 6> kSiLarge{{{"k", 3, 0}, {"M", 6, 0}, {"G", 9, 0}, {"T", 12, 0}, {"P", 15, 0}, {"E", 18, 0}}};
constexpr std::array<Prefix, 6> kIec{{{"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60}}};

struct UnitMatch {
  Prefix prefix;
  double base_factor = 1;  // e.g. 8 for bytes -> bits
  bool ok = false;
  std::string error;
};

// Splits `unit` into prefix + one of `names`; binary prefixes only when allowed.
UnitMatch match_unit(std::string_view unit, const std::vector<std::pair<std::string_view, double>>& names,
                     bool allow_iec, bool allow_small, Dimension dim) {
  UnitMatch m;
  for (const auto& [name, factor] : names) {
    if (unit.size() < name.size() || unit.substr(unit.size() - name.size()) != name) continue;
    std::string_view p = unit.substr(0, unit.size() - name.size());
    if (p.empty()) {
      m.ok = true;
      m.base_factor = factor;
      return m;
    }
    for (const auto& pre : kSiLarge)
      if (p == pre.symbol) {
        m.ok = true; m.prefix = pre; m.base_factor = factor;
        return m;
      }
    if (allow_iec)
      for (const auto& pre : kIec)
        if (p == pre.symbol) {
          m.ok = true; m.prefix = pre; m.base_factor = factor;
          return m;
        }
    if (allow_small) {
      static constexpr std::array<Prefix, 5> kSmall{{{"m", -3, 0}, {"u", -6, 0}, {"\xC2\xB5", -6, 0}, {"n", -9, 0}, {"p", -12, 0}}};
      for (const auto& pre : kSmall)
        if (p == pre.symbol) {
          m.ok = true; m.prefix = pre; m.base_factor = factor;
          return m;
        }
      if (p == "f") {
        m.ok = true; m.prefix = Prefix{"f", -15, 0}; m.base_factor = factor;
        return m;
      }
    }
    if (p == "K" || p == "KI")
      m.error = fmt::format("ambiguous prefix 'K' in '{}': write 'k' for 10^3 or 'Ki' for 2^10", unit);
    else if (!allow_iec && p.size() == 2 && p[1] == 'i')
      m.error = fmt::format("binary prefix '{}' does not apply to a {}; use an SI prefix such as '{}'", p,
                            to_string(dim), p.substr(0, 1) == "K" ? "k" : p.substr(0, 1));
    else if (p == "m" && (dim == Dimension::DataSize || dim == Dimension::Bandwidth))
      m.error = fmt::format("ambiguous prefix 'm' in '{}': milli does not apply to data; write 'M' for 10^6", unit);
    else
      m.error = fmt::format("unknown prefix '{}' in unit '{}'", p, unit);
    return m;
  }
  m.error = fmt::format("unknown unit '{}' for a {} (expected e.g. '{}')", unit, to_string(dim), example(dim));
  return m;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

const std::vector<std::pair<std::string_view, double>>& size_names() {
  static const std::vector<std::pair<std::string_view, double>> names{
      {"bits", 1}, {"bit", 1}, {"bytes", 8}, {"byte", 8}, {"b", 1}, {"B", 8}};
  return names;
}

}  // namespace

const char* to_string(Dimension d) {
  switch (d) {
    case Dimension::Frequency: return "frequency";
    case Dimension::DataSize: return "data size";
    case Dimension::Bandwidth: return "bandwidth";
    case Dimension::Duration: return "duration";
    case Dimension::Cycles: return "cycle count";
    case Dimension::ParamRate: return "parameter rate";
    case Dimension::Energy:
      return "energy";
    case Dimension::Power:
      return "power";
  }
  return "quantity";
}

const char* example(Dimension d) {
  switch (d) {
    case Dimension::Frequency: return "1.1 GHz";
    case Dimension::DataSize: return "48 KiB";
    case Dimension::Bandwidth: return "100 Gb/s";
    case Dimension::Duration: return "3 us";
    case Dimension::Cycles: return "2 cycles";
    case Dimension::ParamRate: return "50 Gparam/s";
    case Dimension::Energy:
      return "0.4 pJ";
    case Dimension::Power:
      return "2 mW";
  }
  return "";
}

const char* base_unit(Dimension d) {
  switch (d) {
    case Dimension::Frequency:
      return "Hz";
    case Dimension::DataSize:
      return "b";
    case Dimension::Bandwidth:
      return "b/s";
    case Dimension::Duration:
      return "s";
    case Dimension::Cycles:
      return "cycles";
    case Dimension::ParamRate:
      return "param/s";
    case Dimension::Energy:
      return "J";
    case Dimension::Power:
      return "W";
  }
  return "";
}

bool takes_small_prefixes(Dimension d) {
  return d == Dimension::Duration || d == Dimension::Energy || d == Dimension::Power;
}

ParseResult parse(std::string_view text, Dimension dim) {
  ParseResult r;
  std::size_t lead = 0;
  while (lead < text.size() && std::isspace(static_cast<unsigned char>(text[lead]))) ++lead;
  if (lead < text.size() && (text[lead] == '-' || text[lead] == '+')) {
    if (text[lead] == '-') {
      r.error = fmt::format("expected a non-negative {} such as '{}', found '{}'", to_string(dim), example(dim), text);
      r.column = lead;
      return r;
    }
    ++lead;
  }
  auto num = scan_number(text, lead);
  if (!num) {
    r.error = fmt::format("expected a {} such as '{}', found '{}'", to_string(dim), example(dim), text);
    r.column = lead;
    return r;
  }
  std::string_view unit = trim(text.substr(num->end));
  if (unit.empty()) {
    r.error = fmt::format("expected a {} with a unit such as '{}', found bare number '{}'", to_string(dim),
                          example(dim), trim(text));
    r.column = lead;
    return r;
  }
  r.column = text.find(unit, num->end);

  UnitMatch m;
  switch (dim) {
    case Dimension::Frequency:
      m = match_unit(unit, {{"Hz", 1}}, false, false, dim);
      break;
    case Dimension::DataSize:
      m = match_unit(unit, size_names(), true, false, dim);
      break;
    case Dimension::Bandwidth: {
      if (unit.size() > 2 && unit.substr(unit.size() - 2) == "/s") {
        m = match_unit(unit.substr(0, unit.size() - 2), size_names(), true, false, dim);
      } else if (unit.size() >= 3 && unit.substr(unit.size() - 3) == "bps") {
        m = match_unit(unit, {{"bps", 1}}, true, false, dim);
      } else {
        m.error = fmt::format("unknown unit '{}' for a bandwidth (expected e.g. '100 Gb/s', '20 PB/s' or '10 Gbps')", unit);
      }
      break;
    }
    case Dimension::Duration:
      m = match_unit(unit, {{"s", 1}}, false, true, dim);
      if (m.ok && m.prefix.exp10 > 0) {
        m.ok = false;
        m.error = fmt::format("unknown time unit '{}' (expected s, ms, us, ns, ps or fs)", unit);
      }
      break;
    case Dimension::Cycles:
      if (unit == "cycle" || unit == "cycles") {
        m.ok = true;
      } else {
        m.error = fmt::format("unknown unit '{}' for a cycle count (expected e.g. '2 cycles')", unit);
      }
      break;
    case Dimension::ParamRate:
      m = match_unit(unit, {{"params/s", 1}, {"param/s", 1}}, false, false, dim);
      break;
    case Dimension::Energy:
      m = match_unit(unit, {{"J", 1}}, false, true, dim);
      break;
    case Dimension::Power:
      m = match_unit(unit, {{"W", 1}}, false, true, dim);
      break;
  }
  if (!m.ok) {
    r.error = m.error;
    return r;
  }
  double v = decimal_value(*num, m.prefix.exp10);
  v = std::ldexp(v, m.prefix.exp2) * m.base_factor;
  if (!std::isfinite(v)) {
    r.error = fmt::format("{} '{}' is out of range", to_string(dim), trim(text));
    return r;
  }
  if (dim == Dimension::DataSize || dim == Dimension::Cycles) {
    const char* what = dim == Dimension::DataSize ? "a whole number of bits" : "a whole number of cycles";
    if (v != std::floor(v)) {
      r.error = fmt::format("'{}' is not {}", trim(text), what);
      return r;
    }
    if (v >= 1.8e19) {
      r.error = fmt::format("{} '{}' is out of range", to_string(dim), trim(text));
      return r;
    }
  }
  r.ok = true;
  r.value = v;
  r.column = 0;
  return r;
}

namespace {

bool round_trips(const std::string& s, double value, Dimension dim) {
  auto r = parse(s, dim);
  return r.ok && r.value == value;
}

std::string format_si(double value, std::string_view unit, Dimension dim, bool small) {
  struct P { const char* sym; double scale; };
  static constexpr P kLarge[] = {{"E", 1e18}, {"P", 1e15}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}, {"", 1}};
  static constexpr P kSmallP[] = {{"", 1}, {"m", 1e-3}, {"u", 1e-6}, {"n", 1e-9}, {"p", 1e-12}, {"f", 1e-15}};
  if (value == 0) return fmt::format("0 {}", unit);
  if (!small) {
    for (const auto& p : kLarge) {
      if (value < p.scale && p.scale != 1) continue;
      std::string s = fmt::format("{} {}{}", value / p.scale, p.sym, unit);
      if (round_trips(s, value, dim)) return s;
    }
  } else {
    for (const auto& p : kSmallP) {
      if (value < p.scale && p.scale != 1e-15) continue;
      std::string s = fmt::format("{} {}{}", value / p.scale, p.sym, unit);
      if (round_trips(s, value, dim)) return s;
    }
  }
  return fmt::format("{} {}", value, unit);
}

// The shortest spelling with an SI prefix that parses back to exactly `value`, preferring
// a mantissa in [1, 1000) among spellings of equal length: "0.4 pJ", "2 mW", "23 kW".
std::string format_shortest(double value, std::string_view unit, Dimension dim) {
  struct P {
    const char* sym;
    int exp10;
  };
  static constexpr P kAll[] = {{"M", 6}, {"k", 3}, {"", 0}, {"m", -3}, {"u", -6}, {"n", -9}, {"p", -12}, {"f", -15}};
  if (value == 0) return fmt::format("0 {}", unit);
  std::string best;
  bool best_natural = false;
  for (const auto& p : kAll) {
    const double mantissa = value / std::pow(10.0, p.exp10);
    const bool natural = std::fabs(mantissa) >= 1 && std::fabs(mantissa) < 1000;
    for (int digits = 1; digits <= 17; ++digits) {
      std::string s = fmt::format("{:.{}g} {}{}", mantissa, digits, p.sym, unit);
      if (s.find('e') != std::string::npos || !round_trips(s, value, dim)) continue;
      if (best.empty() || s.size() < best.size() || (s.size() == best.size() && natural && !best_natural)) {
        best = s;
        best_natural = natural;
      }
      break;
    }
  }
  return best.empty() ? fmt::format("{} {}", value, unit) : best;
}

std::string format_size(std::uint64_t n, std::string_view unit) {
  static constexpr const char* kIecSym[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  static constexpr const char* kSiSym[] = {"", "k", "M", "G", "T", "P", "E"};
  if (n == 0) return fmt::format("0 {}", unit);
  int iec = 0;
  std::uint64_t vi = n;
  while (iec < 6 && vi % 1024 == 0) { vi /= 1024; ++iec; }
  int si = 0;
  std::uint64_t vs = n;
  while (si < 6 && vs % 1000 == 0) { vs /= 1000; ++si; }
  std::string a = fmt::format("{} {}{}", vi, kIecSym[iec], unit);
  std::string b = fmt::format("{} {}{}", vs, kSiSym[si], unit);
  return b.size() < a.size() ? b : a;
}

}  // namespace

std::string format(double value, Dimension dim) {
  switch (dim) {
    case Dimension::Frequency: return format_si(value, "Hz", dim, false);
    case Dimension::DataSize: {
      auto bits = static_cast<std::uint64_t>(value);
      return bits % 8 == 0 ? format_size(bits / 8, "B") : format_size(bits, "b");
    }
    case Dimension::Bandwidth: {
      std::string in_bits = format_si(value, "b/s", dim, false);
      if (std::fmod(value, 8.0) == 0) {
        std::string in_bytes = format_si(value / 8, "B/s", dim, false);
        if (round_trips(in_bytes, value, dim) && in_bytes.size() < in_bits.size()) return in_bytes;
      }
      return in_bits;
    }
    case Dimension::Duration: return format_si(value, "s", dim, true);
    case Dimension::Cycles:
      return fmt::format("{} {}", static_cast<std::uint64_t>(value), value == 1 ? "cycle" : "cycles");
    case Dimension::ParamRate: return format_si(value, "param/s", dim, false);
    case Dimension::Energy:
      return format_shortest(value, "J", dim);
    case Dimension::Power:
      return format_shortest(value, "W", dim);
  }
  return fmt::format("{}", value);
}

std::string format(Frequency f) { return format(f.hz, Dimension::Frequency); }
std::string format(DataSize s) { return format(static_cast<double>(s.bits), Dimension::DataSize); }
std::string format(Bandwidth b) { return format(b.bits_per_s, Dimension::Bandwidth); }
std::string format(Duration d) { return format(d.seconds, Dimension::Duration); }
std::string format(sim::Cycle c) { return format(static_cast<double>(c.count()), Dimension::Cycles); }
std::string format(ParamRate r) { return format(r.per_s, Dimension::ParamRate); }
std::string format(Energy e) { return format(e.joules, Dimension::Energy); }
std::string format(Power p) { return format(p.watts, Dimension::Power); }

std::string pretty(double value, std::string_view unit, int digits) {
  static constexpr std::pair<const char*, double> kP[] = {{"E", 1e18}, {"P", 1e15}, {"T", 1e12}, {"G", 1e9},
                                                          {"M", 1e6},  {"k", 1e3},  {"", 1}};
  for (const auto& [sym, scale] : kP) {
    if (std::fabs(value) >= scale || scale == 1)
      return fmt::format("{:.{}g} {}{}", value / scale, digits, sym, unit);
  }
  return fmt::format("{} {}", value, unit);
}

}  // namespace wafersim::units
