#pragma once
// Where a Llama-style decoder lives on a mesh region (docs/compiler.md, "Mesh placement"):
// every layer spread over the same R x C PEs, each PE holding a tile of every weight matrix,
// its slice of every KV cache and of the activations, all at the same addresses on every PE.
//
// Vectors take one of two forms. Across-columns: split over the C columns (column c holds
// split(n, C, c)), the same on every row. Across-rows: split over the R rows, the same on
// every column. The residual stream is across columns; a matrix product from one form to the
// other reduces its partial sums along the lines of the first (MeshGEMV): rows for q/k/v,
// gate/up and the head (lines of C PEs), columns for o and down (lines of R PEs). q, k, v and
// the attention output are across rows, head-aligned: the rows are cut into one segment per
// key/value head, and row j of segment g holds dimensions split(hd, segment, j) of key/value
// head g and of each of its query heads. The KV cache holds position p on column p mod C.

#include <cstdint>
#include <string>
#include <vector>

#include "models/compiler/target.h"
#include "models/mesh/collective.h"
#include "models/mesh/region.h"
#include "models/mesh/ring.h"
#include "models/model_spec.h"

namespace wafersim::models::mesh {

// The decoder's shapes (a Llama-style transformer: RMSNorm, q/k/v/o without bias, grouped
// query attention, SwiGLU, untied head).
struct DecoderShape {
  std::uint64_t d = 0, heads = 0, kv_heads = 0, head_dim = 0, ff = 0, vocabulary = 0, layers = 0;
  std::uint64_t capacity = 0;  // positions each KV cache holds (the model's sequence)
  double epsilon = 1e-5;
  models::DType dtype = models::DType::BF16;
  [[nodiscard]] std::uint64_t group_heads() const { return heads / kv_heads; }
  [[nodiscard]] std::uint64_t layer_parameters() const;
  [[nodiscard]] std::uint64_t parameters() const;  // layers, embedding, final norm, head
};

// Contract: throws sim::InputError naming what is not covered (a transformer that is not
// Llama-style: LayerNorm, GELU, biases, learned positions, tied or parallel layers).
DecoderShape decoder_shape(const ModelSpec& model);

// Byte addresses of one layer's state (the same on every PE).
struct LayerAddrs {
  std::uint32_t wqkv = 0, wo = 0, wgu = 0, wd = 0, g1 = 0, g2 = 0, kc = 0, vc = 0;
};

// The largest per-PE count of each kind of value (the tiles' strides): a PE's columns'
// features (kc), its row's dimensions of a key/value head (nd), query features (nq), q/k/v
// outputs (nqkv), feed-forward features (nf), vocabulary rows (nv) and cache slots.
struct TileSizes {
  std::uint32_t kc = 0, nd = 0, nq = 0, nqkv = 0, nf = 0, nv = 0, slots = 0;
};
TileSizes tile_sizes(const DecoderShape& s, std::uint32_t rows, std::uint32_t columns);

struct Addrs {
  std::vector<LayerAddrs> layers;
  std::uint32_t emb = 0, head = 0, gf = 0;
  std::uint32_t x = 0, x1 = 0, xn = 0, xw = 0, qkv = 0, att = 0, gu = 0, z = 0, logits = 0;
  std::uint32_t acc = 0, sc = 0, stat = 0;
  std::uint32_t logits_bytes = 0;                          // the logits' buffer (aligned), with the head
  std::uint32_t end = 0;                                   // bytes used
  std::uint32_t weights = 0, caches = 0, activations = 0;  // bytes by kind (busiest PE)
};

// The SRAM plan of a PE: every layer's weights, then the caches, then the activations, each
// buffer aligned to `align` bytes.
Addrs plan_addrs(const DecoderShape& s, const TileSizes& t, std::uint32_t layers, bool embedding, bool head,
                 std::uint32_t align);

// Bytes of the prefill's MeshGEMM buffers (kernel_gemm.cpp) on a region whose rings have n
// positions for `tokens` prompt tokens: two input blocks and two fp32 partial-sum blocks of
// ceil(tokens / n) tokens, sized for the largest product, and a block of the residual stream
// (0 without a prefill).
std::uint32_t prefill_bytes(const DecoderShape& s, const TileSizes& t, std::uint64_t tokens, std::uint32_t n,
                            std::uint32_t align);
// One of those input, partial-sum and residual blocks, unaligned: ceil(tokens / n) tokens of
// the layer's largest product's inputs (model format), outputs (fp32) and column features.
struct PrefillBlockBytes {
  std::uint64_t x = 0, acc = 0, residual = 0;
};
PrefillBlockBytes prefill_block_bytes(const DecoderShape& s, const TileSizes& t, std::uint64_t tokens, std::uint32_t n);

// Where those buffers lie on a PE: x[0], x[1], acc[0], acc[1] and the residual block, of
// `x`, `acc` and `residual` bytes (each rounded up to `align`), in that order after the plan.
// Where that passes `sram_bytes` on the wafer with the head, the largest of them that fit go
// into the decode's logits buffer first (the prefill computes no logits; the decode token
// after it writes them anew), largest first, the rest after the plan in that order.
struct PrefillBuffers {
  std::uint32_t x[2] = {}, acc[2] = {}, residual = 0;
  std::uint32_t x_bytes = 0, acc_bytes = 0;  // each buffer's, rounded up
  std::uint32_t in_logits = 0;               // bytes of the logits buffer they take, from its start
  std::uint32_t end = 0;                     // the end of the plan and of those after it
};
PrefillBuffers prefill_buffers(const Addrs& a, std::uint64_t x, std::uint64_t acc, std::uint64_t residual,
                               std::uint32_t align, std::uint32_t sram_bytes);
// The end of a PE's plan `a` with the prefill's buffers (prefill_bytes' sizes) placed as above.
std::uint32_t prefill_end(const Addrs& a, const DecoderShape& s, const TileSizes& t, std::uint64_t tokens,
                          std::uint32_t n, std::uint32_t align, std::uint32_t sram_bytes);

// Whether MeshGEMM's rings run on `rows` x `columns` PEs: a square, or a rectangle of at
// least 2 x 2 up to twice as long as wide (the longer lines in units of one or two PEs).
bool gemm_runs_on(std::uint32_t rows, std::uint32_t columns);

class MeshLayout {
 public:
  // Contract: region.rows >= kv_heads (every key/value head gets a segment of rows); `layers`
  // of the decoder's on this wafer, `embedding`/`head`: whether the first's embedding, the
  // last's final norm and head are here. `stage` sizes the collectives' trees (cycles a
  // PE-to-PE stage costs besides the hop); buffers aligned to `align` bytes in a PE's
  // `sram_bytes`.
  MeshLayout(const DecoderShape& shape, const Region& region, std::uint32_t layers, bool embedding, bool head,
             std::uint32_t stage, std::uint32_t align, std::uint32_t sram_bytes);

  [[nodiscard]] const DecoderShape& shape() const { return s_; }
  [[nodiscard]] const Region& region() const { return region_; }
  [[nodiscard]] std::uint32_t layers() const { return layers_; }
  [[nodiscard]] bool embedding() const { return embedding_; }
  [[nodiscard]] bool head() const { return head_; }
  [[nodiscard]] std::uint32_t esize() const { return esize_; }

  // Across columns: the model features of column c.
  [[nodiscard]] compiler::Span col_features(std::uint32_t c) const;
  // Head-aligned across rows: row r's key/value head and its dimensions.
  [[nodiscard]] std::uint32_t kv_group(std::uint32_t r) const;
  [[nodiscard]] compiler::Span row_dims(std::uint32_t r) const;
  // q/k/v output indices of row r, in the order of its local vector: q (head i of the group,
  // dimension d: i x nd + d), then k, then v; and the attention output's (q's).
  [[nodiscard]] std::vector<std::uint64_t> qkv_indices(std::uint32_t r) const;
  [[nodiscard]] std::vector<std::uint64_t> q_indices(std::uint32_t r) const;
  // Across rows: the feed-forward features and the vocabulary of row r.
  [[nodiscard]] compiler::Span row_ff(std::uint32_t r) const;
  [[nodiscard]] compiler::Span row_vocab(std::uint32_t r) const;
  // KV cache slots column c uses once positions [0, n) are cached.
  [[nodiscard]] std::uint32_t slots(std::uint32_t c, std::uint64_t n) const;

  // The largest of each per PE (the tiles' strides).
  std::uint32_t kc_max = 0, nd_max = 0, nq_max = 0, nqkv_max = 0, nf_max = 0, nv_max = 0, slots_max = 0;

  [[nodiscard]] const Addrs& addrs() const { return a_; }
  // The collectives: along rows (C PEs), along columns (R PEs), and along column segments of
  // one key/value head each.
  [[nodiscard]] const LineFamily& rows() const { return rows_; }
  [[nodiscard]] const LineFamily& columns() const { return columns_; }
  [[nodiscard]] const LineFamily& segments() const { return segments_; }
  // The prefill's MeshGEMM shift rings (ring.h): along every column (indexed by row) and
  // along every row (indexed by column), on colors kColors .. kColors + 7; on a rectangle up
  // to twice as long as wide the longer lines' ring has the shorter lines' length in
  // positions (gemm_positions), its units of two pairing on kPairColor.
  [[nodiscard]] const Ring& column_ring() const { return column_ring_; }
  [[nodiscard]] const Ring& row_ring() const { return row_ring_; }
  [[nodiscard]] std::uint32_t align() const { return align_; }
  [[nodiscard]] std::uint32_t sram_bytes() const { return sram_bytes_; }
  static constexpr std::uint32_t kColors = 15;
  static constexpr std::uint32_t kRingColors = 8;
  static constexpr std::uint8_t kPairColor = kColors + kRingColors;
  // MeshGEMM's steps (and token blocks): both rings' positions; 0 when they differ (a region
  // more than twice as long as wide).
  [[nodiscard]] std::uint32_t gemm_positions() const {
    return column_ring_.positions() == row_ring_.positions() ? row_ring_.positions() : 0;
  }
  // The same where MeshGEMM runs. Contract: gemm_positions() > 0 (std::logic_error otherwise).
  [[nodiscard]] std::uint32_t gemm_n() const;

 private:
  DecoderShape s_;
  Region region_;
  std::uint32_t layers_ = 0;
  bool embedding_ = false, head_ = false;
  std::uint32_t esize_ = 2;
  std::vector<std::uint32_t> seg_starts_;
  Addrs a_;
  LineFamily rows_, columns_, segments_;
  Ring column_ring_, row_ring_;
  std::uint32_t align_ = 4;
  std::uint32_t sram_bytes_ = 0;
};

}  // namespace wafersim::models::mesh
