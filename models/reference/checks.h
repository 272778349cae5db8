#pragma once
// Argument checks shared by the reference kernels (internal): a wrong shape or format is a
// caller's bug and throws std::invalid_argument naming the kernel and what was expected.

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "models/reference/tensor.h"

namespace wafersim::models::reference::detail {

inline void require(bool ok, const char* kernel, const std::string& what) {
  if (!ok) throw std::invalid_argument(fmt::format("reference {}: {}", kernel, what));
}

inline void require_format(const Tensor& t, Format f, const char* kernel, const char* name) {
  require(t.format() == f, kernel, fmt::format("{} is {}, expected {}", name, to_string(t.format()), to_string(f)));
}

inline void require_shape(const Tensor& t, const Shape& s, const char* kernel, const char* name) {
  require(t.shape() == s, kernel,
          fmt::format("{} has shape {}, expected {}", name, to_string(t.shape()), to_string(s)));
}

}  // namespace wafersim::models::reference::detail
