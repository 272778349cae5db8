#pragma once
// Element types of the core's data paths: the number formats of vector and scalar operations.

#include <cstdint>
#include <optional>
#include <string_view>

namespace wafersim::hw {

// fp16 = IEEE binary16, bf16 = bfloat16, f32 = IEEE binary32; u16/u32 are raw bit copies.
enum class DType : std::uint8_t { F16, BF16, F32, U16, U32 };

constexpr unsigned size_of(DType t) { return (t == DType::F32 || t == DType::U32) ? 4 : 2; }
// The bits of a 32-bit word that an element of type t occupies (the low half for 16-bit types).
constexpr std::uint32_t mask_of(DType t) { return size_of(t) == 4 ? 0xffffffffu : 0xffffu; }
constexpr bool is_float(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32; }
// The assembly spelling: "f16", "bf16", "f32", "u16", "u32".
std::string_view name(DType t);
std::optional<DType> parse_dtype(std::string_view text);

}  // namespace wafersim::hw
