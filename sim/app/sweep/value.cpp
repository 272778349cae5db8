#include "sim/app/sweep/value.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "sim/units/quantity.h"

namespace wafersim::app::sweep {

const char* Scalar::kind_name() const {
  switch (kind) {
    case Kind::Number:
      return "number";
    case Kind::Boolean:
      return "boolean";
    case Kind::String:
      return "string";
  }
  return "value";
}

std::string Scalar::str() const {
  switch (kind) {
    case Kind::Number:
      return fmt::format("{}", number);
    case Kind::Boolean:
      return boolean ? "true" : "false";
    case Kind::String:
      return "'" + string + "'";
  }
  return {};
}

bool parse_number(const std::string& text, double& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front())) ||
      std::isspace(static_cast<unsigned char>(text.back())))
    return false;
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(begin, &end);
  if (end != begin + text.size() || errno == ERANGE || !std::isfinite(v)) return false;
  // strtod also reads hexadecimal, "inf" and "nan"; a sweep value is a decimal number.
  for (char c : text)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
      return false;
  out = v;
  return true;
}

Scalar interpret(const std::string& text, bool quoted) {
  if (quoted) return Scalar::of_string(text);
  if (text == "true") return Scalar::of_boolean(true);
  if (text == "false") return Scalar::of_boolean(false);
  double v = 0;
  if (parse_number(text, v)) return Scalar::of_number(v);
  if (!text.empty() && (std::isdigit(static_cast<unsigned char>(text.front())) || text.front() == '.')) {
    for (auto dim : units::kDimensions) {
      auto r = units::parse(text, dim);
      if (r.ok) return Scalar::of_number(r.value);
    }
  }
  return Scalar::of_string(text);
}

}  // namespace wafersim::app::sweep
