#pragma once
// The mesh kernels of one decode token (docs/compiler.md, "Mesh placement"): each returns a
// step, the programs of every PE of the region and its bound. Products accumulate in fp32
// (mixed FMACs on one ordered microthread), partial sums travel in fp32 and are rounded once
// to the model's format after the allreduce.

#include <cstdint>
#include <string>
#include <vector>

#include "models/compiler/target.h"
#include "models/mesh/layout.h"
#include "models/mesh/step.h"

namespace wafersim::models::mesh {

// The matrix products of a layer, and the head.
enum class Gemv : std::uint8_t {
  Qkv,     // xn (across columns) -> q | k | v (across rows, head-aligned)
  O,       // attention output (across rows) -> + x = x1 (across columns)
  GateUp,  // xn -> gate | up (across rows) -> z = swiglu(gate, up)
  Down,    // z -> + x1 = x (across columns)
  Head,    // xn -> logits (across rows)
};
const char* to_string(Gemv g);

// Its matrix: rows (inputs) and columns (outputs) of the model's weight, as the host holds it.
struct GemvShape {
  std::uint64_t in = 0, out = 0;
};
GemvShape gemv_shape(const DecoderShape& s, Gemv g);

MeshStep gemv_step(const MeshLayout& l, const compiler::Target& t, Gemv g, std::uint32_t layer, bool code = true);

// RMSNorm of the residual stream (across columns): x -> xn for the attention (`second` false)
// or the MLP (true) of `layer`, or the final norm (`layer` = l.layers()).
MeshStep rmsnorm_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, bool second,
                      bool code = true);

// Decode attention of `layer` at position `position` (0-based): the token's k and v appended
// to the cache on column position mod C, then scores, softmax and the weighted values over
// positions [0, position].
MeshStep attention_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, std::uint64_t position,
                        bool code = true);

// The embedding of token `token`: the row holding it sends its features, the others -0, an
// allreduce along the columns puts x (across columns) on every PE.
MeshStep embedding_step(const MeshLayout& l, const compiler::Target& t, std::uint64_t token, bool code = true);

// The prefill's MeshGEMM (kernel_gemm.cpp) of `tokens` prompt tokens through product g of
// `layer` on a square region of N x N PEs, its first `steps` (1 .. N) shift steps: the
// inputs of token block j = (a + b) mod N at ring positions (a, b) (ring.h) in x[0], fp32
// partial sums left in acc[(steps - 1) % 2]; after N steps block j's outputs of line a are
// complete at its ring position (j - a - N + 1) mod N.
struct GemmAddrs {
  // [block x kmax] in the model's format, [block x nmax] fp32: a PE's own inputs and outputs
  // first in each token's row, zeros after them; each buffer sized for the largest product, so
  // every product's buffers sit at the same addresses
  std::uint32_t x[2] = {}, acc[2] = {};
  // The prefill's residual stream of the tokens of the block a PE starts a product with
  // ([block x kc_max] in the model's format, its column's features; kernel_blocks.cpp).
  std::uint32_t residual = 0;
  std::uint32_t block = 0;                   // tokens per block: ceil(tokens / N)
  std::uint32_t kmax = 0, nmax = 0;          // inputs and outputs of the busiest PE
  std::uint32_t x_bytes = 0, acc_bytes = 0;  // an input and a partial-sum block's, aligned
  std::uint32_t in_logits = 0;               // bytes of the decode's logits buffer they take
  std::uint32_t end = 0;                     // the end of the plan and the buffers after it
};
// Contract: a region MeshGEMM runs on (std::logic_error otherwise); the buffers lie where
// prefill_buffers (layout.h) puts them.
GemmAddrs gemm_addrs(const MeshLayout& l, Gemv g, std::uint64_t tokens, std::uint32_t align);
// The inputs and outputs PE (r, c) holds of product g (its GEMV in decode, its GEMM in prefill).
std::uint32_t gemm_inputs(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c);
std::uint32_t gemm_outputs(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c);
// Whether the product's partial sums reduce along rows (q/k/v, gate/up, head) or columns.
bool reduces_along_rows(Gemv g);
MeshStep gemm_step(const MeshLayout& l, const compiler::Target& t, Gemv g, std::uint32_t layer, std::uint64_t tokens,
                   std::uint32_t steps, bool code = true);

// The prefill's move of one prompt token's outputs out of MeshGEMM's blocks (kernel_blocks.cpp,
// the wafer's output): token `token` of `tokens` sits in block j = token / block, row
// t = token % block. Its fp32 outputs of g leave the PE of each line that holds them (the
// others give -0), are reduced to the line's root with the token's residual (o and down, from
// the residual block), finished as the decode's product finishes them (rounded, the residual
// added or SwiGLU) and broadcast: the decode's output vector of g (qkv, x1, z, x) on every PE,
// as after the decode's GEMV.
MeshStep unblock_step(const MeshLayout& l, const compiler::Target& t, Gemv g, std::uint32_t layer, std::uint64_t tokens,
                      std::uint64_t token, bool code = true);

// The prefill's move from gate/up's outputs to down's inputs without leaving the blocks
// (kernel_blocks.cpp): after gate/up's N steps PE (r, c) at ring positions (a, b) holds block
// a + b - 1's sums of its row's gate and up features; it rounds them and applies SwiGLU as the
// decode's root does, token by token, into a block laid out as down's inputs (zeros beyond its
// own), and hands it to its predecessor on the row's ring, taking block a + b, the one it
// starts down with, from its successor.
MeshStep swiglu_blocks_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, std::uint64_t tokens,
                            bool code = true);

// The prefill's residual add and RMSNorm between o and gate/up (g = O: x1 = x + o, then ln2)
// or between down and the next layer's q/k/v (g = Down: x = x1 + down, then ln1 of layer + 1)
// without leaving the blocks (kernel_norm_blocks.cpp): the residual stream of block a + b
// stays in PE (a, b)'s residual block, and its normalised features go into the next
// product's input block, bit for bit as the token-by-token unblock, norm and block give them.
MeshStep norm_blocks_step(const MeshLayout& l, const compiler::Target& t, Gemv g, std::uint32_t layer,
                          std::uint64_t tokens, bool code = true);

// The part of the prompt one pass of a chunked prefill runs: tokens [base, base + tokens), the
// ones MeshGEMM's blocks hold (block j: [base + j T, base + (j + 1) T)); the KV cache then
// holds every position before its end. A prompt of P tokens in one pass is the chunk {0, P}.
struct PromptChunk {
  std::uint64_t base = 0, tokens = 0;
  PromptChunk(std::uint64_t n) : tokens(n) {}  // NOLINT(google-explicit-constructor): a whole prompt
  PromptChunk(std::uint64_t b, std::uint64_t n) : base(b), tokens(n) {}
  [[nodiscard]] std::uint64_t end() const { return base + tokens; }
};

// The prefill's attention over groups of consecutive prompt tokens
// (kernel_attention_group.cpp): tokens [first, first + count) of one group of the chunk, their q/k/v out
// of q/k/v's blocks at once, causal attention for all of them at once, and their attention
// outputs into o's blocks, bit for bit as the token-by-token unblock, decode attention and
// block give them. The group's buffers, sized for `group` tokens (a row's and a column's own
// counts first in each token's row), lie in SRAM that is free while attention runs (the
// decode's activations, MeshGEMM's spare blocks, the SRAM after MeshGEMM's buffers):
struct GroupAddrs {
  std::uint32_t group = 1;  // tokens a group holds at most
  std::uint32_t slots = 0;  // cache slots of the busiest column once the prompt is cached
  // [group x max(nqkv, hq x slots, nq, kc)] fp32: q/k/v's sums being reduced, the partial
  // scores, then the weighted values (the wafer's input: the embedding's sums, then x in fp32)
  std::uint32_t sums = 0;
  std::uint32_t qkv = 0;                   // [group x max(nqkv, kc)] in the model's format (input: x)
  std::uint32_t scores = 0;                // [group x hq x slots] fp32
  std::uint32_t mx = 0, sum = 0, rcp = 0;  // [group x hq] fp32: the softmax's max, sum, 1 / sum (input: rstd)
  std::uint32_t att = 0;                   // [group x max(nq, kc)] in the model's format (input: xn)
};
// Contract: the group's buffers fit (std::logic_error otherwise; a group of 1 fits in the
// decode's activations).
GroupAddrs group_addrs(const MeshLayout& l, PromptChunk chunk, std::uint32_t group, std::uint32_t sram_bytes);
// The largest group of at most `most` tokens (and the chunk's) whose buffers fit a PE of
// `sram_bytes`; 1 when none larger does. Contract: most >= 1.
std::uint32_t prefill_group(const MeshLayout& l, PromptChunk chunk, std::uint32_t sram_bytes, std::uint32_t most);
// Each PE of a row gives its sums of the group's tokens it holds after q/k/v's N steps, -0
// for the others; the row's reduction puts them at its root, which rounds them (the decode's
// finish of q/k/v) and broadcasts them: every PE holds its row's q/k/v of every token of the
// group at GroupAddrs::qkv.
MeshStep qkv_unblock_group_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, PromptChunk chunk,
                                std::uint32_t group, std::uint64_t first, std::uint32_t count, bool code = true);
// The decode's attention for every token of the group at once: their keys and values
// appended where the decode keeps their positions, the scores of every cached position up to
// the group's last (a position after a token's own masked with -inf at the softmax, which
// then gives it exactly +0), and the weighted values: each token's attention output at
// GroupAddrs::att, as the decode's attention at its position leaves it at Addrs::att.
MeshStep attention_group_step(const MeshLayout& l, const compiler::Target& t, std::uint32_t layer, PromptChunk chunk,
                              std::uint32_t group, std::uint64_t first, std::uint32_t count, bool code = true);
// The PE that starts product g (q/k/v or o) with a token's block copies the token's input
// (GroupAddrs::att: xn, or the attention output) into its row of x[0], zeros beyond its own
// inputs (block_step's copy, for every token of the group it holds); for q/k/v it also keeps
// the token's x (GroupAddrs::qkv) in the residual block.
MeshStep block_group_step(const MeshLayout& l, const compiler::Target& t, Gemv g, std::uint32_t layer,
                          PromptChunk chunk, std::uint32_t group, std::uint64_t first, std::uint32_t count,
                          bool code = true);

// The wafer's input over a group (kernel_input_group.cpp), bit for bit as the decode's
// embedding, RMSNorm and a copy into q/k/v's block give each token: every row gives the
// embedding rows of the group's tokens it holds, -0 for the others, and the columns' reduction
// and broadcast leave x of every token on every PE (GroupAddrs::qkv); each row takes their sums
// of squares, rstd at its root (GroupAddrs::mx) and xn (GroupAddrs::att); the PE that starts
// q/k/v with a token's block copies xn into its row of x[0] and x into the residual block
// (block_group_step).
MeshStep embedding_group_step(const MeshLayout& l, const compiler::Target& t, const std::vector<std::uint64_t>& prompt,
                              PromptChunk chunk, std::uint32_t group, std::uint64_t first, std::uint32_t count,
                              bool code = true);
MeshStep rmsnorm_group_step(const MeshLayout& l, const compiler::Target& t, PromptChunk chunk, std::uint32_t group,
                            std::uint64_t first, std::uint32_t count, bool code = true);

// `code` false: the step's work and bound without its programs (cheap).

// The key of a line role for program classes: the fields its code depends on.
std::string role_key(const LineRole& r);

}  // namespace wafersim::models::mesh
