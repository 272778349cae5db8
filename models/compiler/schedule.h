#pragma once
// The steps of a compiled model in execution order (forward in graph order, then backward in
// reverse), the tensors they read and write, and the host-side parameters they stream.

#include <cstdint>
#include <string>
#include <vector>

#include "models/compiler/compiled_model.h"
#include "models/compiler/kernels.h"

namespace wafersim::models::compiler {

struct Step {
  std::string layer;
  std::uint32_t index = 0;  // in ModelSpec::layers
  LayerKind kind = LayerKind::Linear;
  Phase phase = Phase::Forward;
  std::vector<std::uint32_t> reads, writes;
  std::vector<int> in;                // the layer's input tensors (-1: token ids held elsewhere)
  int out = -1;                       // its output
  int grad_out = -1;                  // the gradient of its output
  std::vector<int> grad_in;           // gradients of its inputs (-1: not needed)
  std::vector<bool> grad_accumulate;  // add into a gradient another consumer already wrote
  bool recompute = false;             // a forward step run again in backward (recompute_blocks)
};

struct Schedule {
  std::vector<HostTensor> host_tensors;
  std::vector<Tensor> tensors;
  std::vector<Step> steps;
  std::vector<std::uint32_t> preloaded;  // loaded by the host before the first step
  std::vector<std::uint32_t> kept;       // live until the end (read back by the host)
};

// Activation recomputation (CompileOptions::recompute, Blocks): a block is the layers whose
// names share the prefix before the first '.' ("h3.q", "h3.attn": block "h3"; "embed", "head":
// none). A tensor a block's layer writes that only its own block's backward steps read is
// internal: the forward pass drops it after its last forward use, and a copy is recomputed
// (the block's forward steps writing internal tensors, run again on the copies) just before
// the block's first backward step, which reads the copies. Returns the schedule unchanged
// when no block has internal tensors.
Schedule recompute_blocks(Schedule s, const ModelSpec& m);

// The largest sum over the steps of the bytes per PE of the activations live at that step
// (each rounded up to 8 B, as the arena places them; no kernel buffers, no fragmentation):
// a quick lower bound on the SRAM a schedule needs.
std::uint64_t activation_peak(const Schedule& s);

// SRAM lifetimes: each tensor lives from the step of its first use to that of its last (a
// preloaded tensor from step 0, a kept one to steps.size()); -1 for a tensor never used.
struct Lifetimes {
  std::vector<int> first, last;
};
Lifetimes tensor_lifetimes(const Schedule& sched);

// `split_heads`: attention with fewer key/value heads than rows gets HeadParts maps (PE
// code); else even maps (planned analytically).
Schedule make_schedule(const CompiledModel& cm, bool split_heads = true);
// The attention kernel's arguments for an attention step: its tensors, heads, the given head
// dimension and sequence (gradients, for backward steps, are the caller's to add).
AttentionArgs attention_args(const Step& step, const LayerSpec& layer, std::uint64_t head_dim, std::uint64_t sequence);
LayerProgram lower_step(KernelContext& ctx, const CompiledModel& cm, const Step& step);
// The mapping (SRAM, streams, work, bound) of a step whose kind has no PE code yet; throws
// sim::InputError naming the layer when ctx.emit asks for code.
LayerProgram plan_without_code(KernelContext& ctx, const CompiledModel& cm, const Step& step);

// Names of the tensors of a layer: its output is the layer's name, a gradient "d:NAME".
inline std::string grad_name(const std::string& tensor) { return "d:" + tensor; }

}  // namespace wafersim::models::compiler
