#pragma once
// The matrix product with its weights resident in SRAM: the streamed kernel's program
// (docs/compiler.md, "Linear forward"), with each weight loaded from the PE's own SRAM
// instead of received from the edge, in the same order, so results are bit-identical.

#include <cstdint>
#include <vector>

#include "models/compiler/kernels.h"

namespace wafersim::models::resident {

// Where slice s's weights live: the same address on every PE of the layer (sized for the
// largest slice), W's block in the order the program reads it, then the bias of the slice's
// own outputs.
struct ResidentWeights {
  std::uint32_t addr = 0;       // first weight
  std::uint32_t bias_addr = 0;  // first bias value (when the layer has one)
  std::uint32_t bytes = 0;      // per PE, weights and bias
};

// Bytes per PE a layer's resident weights take on `layout` (weights, then bias, 8-aligned).
std::uint32_t resident_weight_bytes(const compiler::StreamingLayout& layout, const compiler::FeatureMap& in,
                                    const compiler::FeatureMap& out, std::uint64_t f_out, bool bias, hw::DType dt);

// The host tensor elements slice s holds, in SRAM order: weights (indices into m.weight),
// then bias (indices into m.bias).
struct SliceImage {
  std::vector<std::uint64_t> weights, bias;
};
SliceImage resident_slice_image(const compiler::MatmulArgs& m, const compiler::FeatureMap& in,
                                const compiler::FeatureMap& out, std::uint32_t slices, std::uint32_t s);

// Contract: as compiler::lower_matmul for the forward product, with no edge streams; the
// program of row s reads its weights from `w` (placed there before the step by the host).
compiler::LayerProgram lower_resident_matmul(compiler::KernelContext& ctx, const compiler::MatmulArgs& m,
                                             const ResidentWeights& w);

}  // namespace wafersim::models::resident
