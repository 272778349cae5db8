#pragma once
// Number formats of the host reference: the model's storage formats (fp16, bf16, fp32) and
// fp64, the exact mode used to check gradients against finite differences.

#include <cstdint>

#include "hw/numerics/dtype.h"
#include "models/model_spec.h"

namespace wafersim::models::reference {

enum class Format : std::uint8_t { FP16, BF16, FP32, FP64 };
const char* to_string(Format f);

Format format_of(DType d);
// The format reductions accumulate in and weight gradients and master weights are kept in:
// fp32 for fp16, bf16 and fp32; fp64 for fp64.
Format accumulation_of(Format f);
// The PE's type for fp16/bf16/fp32; throws std::invalid_argument for fp64.
hw::DType hw_dtype(Format f);
// Unit roundoff u = 2^-(precision): 2^-11, 2^-8, 2^-24, 2^-53.
double unit_roundoff(Format f);
// The distance between the two representable numbers around |x| (the larger one's spacing at
// a power of two); the smallest subnormal spacing near zero.
double ulp(Format f, double x);
// Position of `bits` in the total order of the format's values (-0 just below +0), so the
// difference of two positions counts the representable numbers between them.
std::int64_t ordinal(Format f, std::uint64_t bits);

}  // namespace wafersim::models::reference
