#include "models/reference/format.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace wafersim::models::reference {

const char* to_string(Format f) {
  switch (f) {
    case Format::FP16:
      return "fp16";
    case Format::BF16:
      return "bf16";
    case Format::FP32:
      return "fp32";
    case Format::FP64:
      return "fp64";
  }
  return "?";
}

Format format_of(DType d) {
  switch (d) {
    case DType::FP16:
      return Format::FP16;
    case DType::BF16:
      return Format::BF16;
    case DType::FP32:
      return Format::FP32;
  }
  return Format::FP32;
}

Format accumulation_of(Format f) { return f == Format::FP64 ? Format::FP64 : Format::FP32; }

hw::DType hw_dtype(Format f) {
  switch (f) {
    case Format::FP16:
      return hw::DType::F16;
    case Format::BF16:
      return hw::DType::BF16;
    case Format::FP32:
      return hw::DType::F32;
    case Format::FP64:
      break;
  }
  throw std::invalid_argument("reference: fp64 has no PE data type");
}

namespace {
struct Params {
  int precision;  // significand bits including the implicit one
  int emin;       // exponent of the smallest normal
  int sign_shift;
};
Params params_of(Format f) {
  switch (f) {
    case Format::FP16:
      return {11, -14, 15};
    case Format::BF16:
      return {8, -126, 15};
    case Format::FP32:
      return {24, -126, 31};
    case Format::FP64:
      return {53, -1022, 63};
  }
  return {24, -126, 31};
}
}  // namespace

double unit_roundoff(Format f) { return std::ldexp(1.0, -params_of(f).precision); }

double ulp(Format f, double x) {
  const Params p = params_of(f);
  const double a = std::fabs(x);
  int e = p.emin;
  if (a > 0 && std::isfinite(a)) e = std::max(std::ilogb(a), p.emin);
  return std::ldexp(1.0, e - (p.precision - 1));
}

std::int64_t ordinal(Format f, std::uint64_t bits) {
  const int s = params_of(f).sign_shift;
  const std::uint64_t sign = std::uint64_t{1} << s;
  const auto magnitude = static_cast<std::int64_t>(bits & (sign - 1));
  return (bits & sign) ? -magnitude - 1 : magnitude;
}

}  // namespace wafersim::models::reference
