#include "hw/numerics/dtype.h"

namespace wafersim::hw {

std::string_view name(DType t) {
  switch (t) {
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::F32:
      return "f32";
    case DType::U16:
      return "u16";
    case DType::U32:
      return "u32";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view text) {
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::U16, DType::U32})
    if (name(t) == text) return t;
  return std::nullopt;
}

}  // namespace wafersim::hw
