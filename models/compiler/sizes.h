#pragma once
// Sizes in SRAM: division rounding up, whole 64-bit words, 8-byte alignment.

#include <cstdint>

namespace wafersim::models::compiler {

// ceil(a / b); a when b is 0.
inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return b ? (a + b - 1) / b : a; }
// The 64-bit words that hold `bytes`.
inline std::uint64_t words(std::uint64_t bytes) { return ceil_div(bytes, 8); }
// `bytes` rounded up to a multiple of 8.
inline std::uint64_t align8(std::uint64_t bytes) { return (bytes + 7) / 8 * 8; }

}  // namespace wafersim::models::compiler
