// libFuzzer target: quantity parsing and formatting for every dimension; a parsed value must
// format back to text that parses to the same value.

#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/units/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace wafersim::units;
  if (size == 0) return 0;
  auto dim = static_cast<Dimension>(data[0] % 6);
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto r = parse(text, dim);
  if (r.ok) {
    auto again = parse(format(r.value, dim), dim);
    if (!again.ok || again.value != r.value) __builtin_trap();
  } else if (r.error.empty()) {
    __builtin_trap();
  }
  return 0;
}
