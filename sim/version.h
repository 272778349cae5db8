#pragma once
// The wafersim version string.

namespace wafersim::sim {
inline constexpr const char* kVersion = "0.1.0";
}
