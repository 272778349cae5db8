#pragma once
// A value as a sweep sees it: the text handed to the workload, and what that text means
// when a constraint computes with it (a number in base units, a boolean or a string).

#include <string>

#include "sim/config/node.h"

namespace wafersim::app::sweep {

// A parameter or fixed value: the exact text passed on the command line and where it was
// written (for generated values, the range that produced it).
struct Value {
  std::string text;
  bool quoted = false;  // written quoted: always a string, never a number or boolean
  sim::config::Location location;
};

// What a value means inside a constraint expression.
struct Scalar {
  enum class Kind { Number, Boolean, String } kind = Kind::Number;
  double number = 0;  // numbers and quantities (quantities in base units: Hz, bits, s, cycles, bits/s)
  bool boolean = false;
  std::string string;

  static Scalar of_number(double v) { return Scalar{Kind::Number, v, false, {}}; }
  static Scalar of_boolean(bool v) { return Scalar{Kind::Boolean, 0, v, {}}; }
  static Scalar of_string(std::string v) { return Scalar{Kind::String, 0, false, std::move(v)}; }
  [[nodiscard]] const char* kind_name() const;
  [[nodiscard]] std::string str() const;
};

// Reads "4", "0.25", "true", "850 MHz", "2 cycles" or "uniform": plain numbers, booleans,
// quantities with a unit (converted to base units), anything else a string. Quoted text is
// always a string.
Scalar interpret(const std::string& text, bool quoted = false);

// Parses the whole of `text` as a plain number ("4", "-0.5", "1e3"); false otherwise.
bool parse_number(const std::string& text, double& out);

}  // namespace wafersim::app::sweep
