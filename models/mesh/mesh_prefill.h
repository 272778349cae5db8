#pragma once
// The prefill of a prompt on one wafer's region (docs/compiler.md, "Prefill"): every simulated
// layer's products over all the prompt's tokens at once by MeshGEMM; between them the residual
// adds, norms and SwiGLU over the GEMM's blocks, and causal attention over groups of
// consecutive tokens in order (kernel_attention_group.cpp), which appends the group's keys and
// values where the decode keeps their positions (column p mod C) and lets each token attend
// to the positions up to its own, so the prefill is causal and leaves the KV cache the decode
// token after it reads. The wafer's input (embedding, first norm, the move into q/k/v's
// blocks) runs over the same groups (kernel_input_group.cpp).

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
  // Per group: Embed, Ln1, Block (the wafer's input), QkvUnblock, Attn, OBlock; once: the others.
  enum class Kind : std::uint8_t {
    Embed,
    Ln1,
    Block,
    Gemm,
    QkvUnblock,
    Attn,
    OBlock,
    SwigluBlocks,
    NormBlocks,
    Output
  };
  Kind kind = Kind::Embed;
  Gemv g = Gemv::Qkv;  // Gemm, Output, NormBlocks
  std::uint32_t layer = 0;
  std::uint64_t token = 0;  // the prompt position (all but Gemm; a group's first)
  std::uint32_t steps = 0;  // Gemm: its shift steps simulated
  // Tokens or groups whose steps it stands for (all but Gemm; 1 unless sampled).
  std::uint64_t count = 1;
  PrefillPer per = PrefillPer::Layer;
  std::uint32_t group = 1;            // a group's tokens from `token` on
  std::uint64_t base = 0, chunk = 0;  // its chunk: prompt tokens [base, base + chunk)
};

// A group of consecutive prompt tokens whose steps a sampled prefill simulates, and how many
// consecutive groups (itself among them) take its steps' cycles.
struct GroupSample {
  std::uint64_t first = 0;
  std::uint32_t tokens = 1;
  std::uint64_t count = 1;
};
// The sample of a prompt of `tokens` tokens (from position `base` on) cut into groups of
// `group` (the last one shorter) on a region of `columns` columns. A group's steps differ from another's in the depth
// of the attention's cache (its busiest column holds last / columns + 1 positions, the group's last token included), in
// the columns its tokens are appended on and in the PEs that hold their GEMM blocks; so each run of groups of one depth
// is sampled at its first and last group, the first half of the run counted at the first's cycles, the rest at the
// last's. Contract: tokens, group, columns >= 1.
std::vector<GroupSample> sample_groups(std::uint64_t tokens, std::uint32_t group, std::uint32_t columns,
                                       std::uint64_t base = 0);
// Every group, each standing for itself.
std::vector<GroupSample> all_groups(std::uint64_t tokens, std::uint32_t group, std::uint64_t base = 0);

// A step of a later pass not simulated: a product (with derived products) or a step over the
// blocks (with sampled groups) whose blocks hold as many tokens as those of the same step of
// an earlier pass, so it runs that step's programs (they depend on the prompt only through the
// block) and takes its cycles.
struct RepeatedStep {
  PrefillStepId id;         // with its own pass (base, chunk)
  std::size_t same_as = 0;  // the earlier step (a product's: its run of gemm_steps steps), an index of steps()
  std::size_t before = 0;   // where it falls among steps(): before step `before`
};

class MeshPrefill {
 public:
  // Contract (std::logic_error otherwise): the layout's MeshGEMM rings of N positions each
  // (MeshLayout::gemm_positions: a square, or a rectangle up to twice as long as wide), the
  // prompt's tokens below the vocabulary and fewer than the cache's capacity, `gemm_steps`
  // 1 .. N (N: the
  // products complete; fewer: a run of 1 step before each run of `gemm_steps`, to derive the
  // others' cycles, for timing only as the products' results are then incomplete), layers
  // [0, simulated) of the layout's.
  // `products_only`: the products alone (for timing: the steps between them left out).
  // `group`: attention's groups hold at most this many tokens (fewer when their buffers do
  // not fit the SRAM: prefill_group). `sampled`: the steps of sample_groups' groups only, each
  // standing for its run (for timing: the cache then holds the sampled groups' keys and values
  // only). `chunk` (0: the whole prompt): the prompt runs in passes of this many tokens
  // (PromptChunk), each through every simulated layer before the next, so MeshGEMM's blocks
  // hold ceil(chunk / N) tokens, not ceil(P / N); the last prompt token's output comes from
  // the last pass. A pass's product (with `gemm_steps` < N) or step over the blocks (with
  // `sampled`) whose blocks hold as many tokens as an earlier pass's is not a step but a
  // RepeatedStep (repeated()).
  MeshPrefill(const compiler::Target& target, std::shared_ptr<const MeshLayout> layout,
              std::vector<std::uint64_t> prompt, std::uint32_t simulated, std::uint32_t gemm_steps,
              bool products_only = false, bool sampled = false, std::uint32_t group = kDefaultGroup,
              std::uint64_t chunk = 0);
  static constexpr std::uint32_t kDefaultGroup = 64;

  [[nodiscard]] const std::vector<PrefillStepId>& steps() const { return steps_; }
  [[nodiscard]] const std::vector<RepeatedStep>& repeated() const { return repeated_; }
  [[nodiscard]] const std::vector<std::uint64_t>& prompt() const { return prompt_; }
  [[nodiscard]] std::uint32_t gemm_steps() const { return gemm_steps_; }
  [[nodiscard]] std::uint32_t group() const { return group_; }
  [[nodiscard]] std::uint64_t chunk() const { return chunk_; }  // tokens a pass (the last may be fewer)
  // Step i with its programs (or only its work and bound).
  [[nodiscard]] MeshStep step(std::size_t i, bool code = true) const;
  // Repeated step k's work and bound as a step of its own (a product's: of gemm_steps steps).
  [[nodiscard]] MeshStep repeated_step(std::size_t k) const;

 private:
  // Each of `per_group` for every group of `groups` in order.
  void add_groups(const std::vector<GroupSample>& groups, const std::vector<PrefillStepId>& per_group,
                  PrefillPer per = PrefillPer::Layer);
  void add_blocks(PrefillStepId s, PromptChunk c);  // once, over the blocks
  void add_gemm(Gemv g, std::uint32_t layer, PromptChunk c);
  // Whether s of pass c repeats the same step of an earlier pass (then listed as such).
  bool repeats(const PrefillStepId& s, PromptChunk c);
  [[nodiscard]] MeshStep step_of(const PrefillStepId& s, bool code) const;
  void add_chunk(PromptChunk c, std::uint32_t simulated, bool sampled);  // one pass's steps
  compiler::Target target_;
  std::shared_ptr<const MeshLayout> layout_;
  std::vector<std::uint64_t> prompt_;
  std::uint32_t gemm_steps_ = 1, group_ = 1;
  std::uint64_t chunk_ = 0;
  bool products_only_ = false;
  std::vector<PrefillStepId> steps_;
  std::vector<RepeatedStep> repeated_;
  bool sampled_ = false;
};

}  // namespace wafersim::models::mesh
