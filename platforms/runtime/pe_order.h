#pragma once
// What each compiled layer must produce, computed on the host in the exact order of the PE
// programs' operations (docs/compiler.md, "Operation orders"), so that the wafer's results
// can be compared bit for bit.

#include <cstdint>

#include "models/compiler/compiled_model.h"
#include "platforms/runtime/host_data.h"

namespace wafersim::platforms::runtime {

// A weight matrix as the stream reads it: element (f, o) at base + f*sf + o*so of `host`.
struct WeightView {
  const Bits* host = nullptr;
  std::uint64_t base = 0;
  std::int64_t sf = 0, so = 0;
  [[nodiscard]] std::uint32_t at(std::uint64_t f, std::uint64_t o) const {
    return (*host)[base + f * static_cast<std::uint64_t>(sf) + o * static_cast<std::uint64_t>(so)];
  }
};

// out[token][o] of the streamed product (forward of linear, or its data gradient), with an
// optional bias and an optional gradient already in `out` to add to.
Bits expect_matmul(const models::compiler::CompiledModel& cm, const Bits& in,
                   const models::compiler::FeatureMap& in_map, const models::compiler::FeatureMap& out_map,
                   const WeightView& w, const Bits* bias, const Bits* existing);

// dM[f][o] (fp32 bits, f_in x f_out row-major) and db[o] (fp32 bits) of the weight gradient.
struct WeightGrad {
  Bits dw, db;
};
WeightGrad expect_weight_grad(const models::compiler::CompiledModel& cm, const Bits& x, const Bits& dy,
                              std::uint64_t f_in, std::uint64_t f_out, bool bias);

}  // namespace wafersim::platforms::runtime
