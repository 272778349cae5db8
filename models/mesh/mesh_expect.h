#pragma once
// The host's side of a mesh-placed decoder (docs/compiler.md, "Mesh placement"): random
// weights and a prefilled KV cache, what every PE's SRAM holds for them, and the decode
// token's expected results computed with models/reference's arithmetic in the order the PEs
// compute them (each PE's partial sums in its own order, then the collectives' trees), so a
// simulated run matches them bit for bit.

#include <cstdint>
#include <vector>

#include "models/mesh/kernels.h"
#include "models/mesh/layout.h"
#include "models/reference/tensor.h"

namespace wafersim::models::mesh {

using reference::Bits;

struct DecoderWeights {
  struct Layer {
    reference::Tensor wq, wk, wv, wo, wg, wu, wd;  // [in, out]
    reference::Tensor g1, g2;                      // [d]
  };
  std::vector<Layer> layers;
  reference::Tensor emb;   // [vocabulary, d]
  reference::Tensor head;  // [d, vocabulary]
  reference::Tensor gf;    // [d]
};
// Uniform in +-1/sqrt(fan-in) (gammas around 1), from `seed`.
DecoderWeights random_weights(const DecoderShape& s, std::uint32_t layers, std::uint64_t seed);

// Per layer: keys and values of positions [0, filled) ([capacity, kv_heads x head_dim]).
struct DecoderCache {
  std::vector<reference::Tensor> k, v;
};
DecoderCache random_cache(const DecoderShape& s, std::uint32_t layers, std::uint64_t filled, std::uint64_t seed);

// The bytes of PE (r, c)'s SRAM [0, addrs().end): weights, gammas, table and head slices, the
// cache's positions [0, filled) on its column, the residual stream `x` (its features; empty:
// zeros).
std::vector<std::uint8_t> pe_image(const MeshLayout& l, const DecoderWeights& w, const DecoderCache& cache,
                                   std::uint64_t filled, const std::vector<Bits>& x, std::uint32_t r, std::uint32_t c);

// What a decode token leaves, in the model's format (values of the cache as stored: keys and
// values in the model's format).
struct DecodeResult {
  struct Layer {
    std::vector<Bits> xn1, qkv, att, x1, xn2, z, x;  // qkv: [q | k | v] by model index
  };
  std::vector<Layer> layers;
  std::vector<Bits> logits;  // with the head
  DecoderCache cache;        // with the token's keys and values at `position`
};
// Contract: `x0` the residual stream entering the first simulated layer (ignored when the
// layout holds the embedding: then the token's table row); layers [0, simulated).
DecodeResult expect_decode(const MeshLayout& l, const DecoderWeights& w, DecoderCache cache, std::uint64_t token,
                           std::uint64_t position, std::uint32_t simulated, std::vector<Bits> x0 = {});

// The prefill of `prompt` (mesh_prefill.h) through layers [0, simulated) (the layout holding
// the embedding): the KV cache it leaves (positions [0, P) of those layers, the others empty)
// and each token's residual stream after the last of them, in the PEs' order: the products as
// expect_gemm adds them, rounded once; the norms, attention and residual adds as
// expect_decode's.
struct PrefillResult {
  DecoderCache cache;
  std::vector<std::vector<Bits>> x;  // [token][d]
};
// `chunk` (0: the whole prompt): the prompt in passes of that many tokens (MeshPrefill's).
PrefillResult expect_prefill(const MeshLayout& l, const DecoderWeights& w, const std::vector<std::uint64_t>& prompt,
                             std::uint32_t simulated, std::uint64_t chunk = 0);

// The prefill's MeshGEMM (kernel_gemm.cpp, gemm_expect.cpp). The model's input and output
// indices of PE (r, c)'s local inputs and outputs, in their local order (gate/up: [gate | up]
// of d_ff each), and the weight of product g at (input k, output o).
std::vector<std::uint64_t> gemm_input_indices(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c);
std::vector<std::uint64_t> gemm_output_indices(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c);
Bits gemm_weight(const DecoderShape& s, const DecoderWeights& w, Gemv g, std::uint32_t layer, std::uint64_t k,
                 std::uint64_t o);
// PE (r, c)'s ring positions along its column (a) and its row (b).
struct GemmPe {
  std::uint32_t a = 0, b = 0;
};
GemmPe gemm_pe(const MeshLayout& l, std::uint32_t r, std::uint32_t c);
// Writes PE (r, c)'s first input block (tokens x inputs values `x`, row-major) into `img`
// (grown to a.end).
void place_gemm_inputs(std::vector<std::uint8_t>& img, const MeshLayout& l, Gemv g, const GemmAddrs& a,
                       const std::vector<Bits>& x, std::uint64_t tokens, std::uint32_t r, std::uint32_t c);
// The product's fp32 outputs (tokens x outputs, row-major) after all N steps.
std::vector<Bits> expect_gemm(const MeshLayout& l, const DecoderWeights& w, Gemv g, std::uint32_t layer,
                              const std::vector<Bits>& x, std::uint64_t tokens);

}  // namespace wafersim::models::mesh
