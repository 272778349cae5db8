#pragma once
// The prefill of a prompt on one wafer's region (docs/compiler.md, "Prefill"): every simulated
// layer's products over all the prompt's tokens at once by MeshGEMM, and between them, token by
// token in order, the decode's kernels (embedding, RMSNorms, attention) on the decode's
// vectors, with the moves between those vectors and the GEMM's blocks (kernel_blocks.cpp).
// Attention runs the decode's kernel at each prompt position in turn: it appends the token's
// key and value where the decode keeps position p (column p mod C) and attends over positions
// up to it, so the prefill is causal and leaves the KV cache the decode token after it reads.

#include <cstdint>
#include <memory>
#include <vector>

#include "models/compiler/target.h"
#include "models/mesh/kernels.h"
#include "models/mesh/layout.h"

namespace wafersim::models::mesh {

// How often a step of the prefill occurs on a wafer: once a layer, once a wafer (its input:
// the embedding, the first norm and block; its output), or once between two of its layers.
enum class PrefillPer : std::uint8_t { Layer, Wafer, Between };
const char* to_string(PrefillPer p);

struct PrefillStepId {
  enum class Kind : std::uint8_t { Embed, Ln1, Block, Gemm, Unblock, Attn, Ln2, SwigluBlocks, NormBlocks, Output };
  Kind kind = Kind::Embed;
  Gemv g = Gemv::Qkv;  // Block, Gemm, Unblock
  std::uint32_t layer = 0;
  std::uint64_t token = 0;  // the prompt position (all but Gemm)
  std::uint32_t steps = 0;  // Gemm: its shift steps simulated
  std::uint64_t count = 1;  // prompt tokens whose steps it stands for (all but Gemm; 1 unless sampled)
  PrefillPer per = PrefillPer::Layer;
};

// A prompt token whose token-by-token steps a sampled prefill simulates, and how many
// consecutive prompt tokens (itself among them) take its steps' cycles.
struct TokenSample {
  std::uint64_t token = 0, count = 1;
};
// The sample of a prompt of `tokens` tokens on a region of `columns` columns. A token's steps
// differ from another's in the depth of the attention's cache (its busiest column holds
// t / columns + 1 positions, the token's own included), in the column it is appended on and in
// the PEs that hold its GEMM block; so each run of tokens of one depth is sampled at its first
// and last token, the first half of the run counted at the first's cycles, the rest at the
// last's. Contract: tokens >= 1, columns >= 1.
std::vector<TokenSample> sample_prompt(std::uint64_t tokens, std::uint32_t columns);

class MeshPrefill {
 public:
  // Contract (std::logic_error otherwise): the layout's region square, the prompt's tokens
  // below the vocabulary and fewer than the cache's capacity, `gemm_steps` 1 .. N (N: the
  // products complete; fewer: a run of 1 step before each run of `gemm_steps`, to derive the
  // others' cycles, for timing only as the products' results are then incomplete), layers
  // [0, simulated) of the layout's.
  // `products_only`: the products alone (for timing: the steps between them left out).
  // `sampled`: the token-by-token steps of sample_prompt's tokens only, each standing for its
  // run of tokens (for timing: the cache then holds the sampled tokens' keys and values only).
  MeshPrefill(const compiler::Target& target, std::shared_ptr<const MeshLayout> layout,
              std::vector<std::uint64_t> prompt, std::uint32_t simulated, std::uint32_t gemm_steps,
              bool products_only = false, bool sampled = false);

  [[nodiscard]] const std::vector<PrefillStepId>& steps() const { return steps_; }
  [[nodiscard]] const std::vector<std::uint64_t>& prompt() const { return prompt_; }
  [[nodiscard]] std::uint32_t gemm_steps() const { return gemm_steps_; }
  // Step i with its programs (or only its work and bound).
  [[nodiscard]] MeshStep step(std::size_t i, bool code = true) const;

 private:
  void add_tokens(const std::vector<PrefillStepId>& per_token,
                  PrefillPer per = PrefillPer::Layer);  // each, token by token
  void add_blocks(PrefillStepId s);                     // once, over the blocks
  void add_gemm(Gemv g, std::uint32_t layer);
  compiler::Target target_;
  std::shared_ptr<const MeshLayout> layout_;
  std::vector<std::uint64_t> prompt_;
  std::uint32_t gemm_steps_ = 1;
  bool products_only_ = false;
  std::vector<TokenSample> tokens_;  // every token (count 1) or the sample
  std::vector<PrefillStepId> steps_;
};

}  // namespace wafersim::models::mesh
