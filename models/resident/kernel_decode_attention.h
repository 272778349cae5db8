#pragma once
// One decode step of causal attention with the KV cache resident in SRAM: each sample's new
// token (one per column, tokens_per_pe 1) appends its key and value to the cache of its
// column and attends to every cached key, computed in models/reference's order, so the output
// equals the reference's for that position bit for bit (docs/compiler.md, "Weight-resident
// placement").

#include <cstdint>
#include <string>

#include "models/compiler/compiled_model.h"
#include "models/compiler/kernels.h"

namespace wafersim::models::resident {

// The cache of one attention layer on the decode layout: tensors of `capacity` keys per
// sample, key/value group g's element (d, j) at feature g*hd*capacity + d*capacity + j, with a
// Heads map (group g on the row of its keys); keys in the model's format, values widened
// to fp32 once, when appended.
compiler::Tensor kv_cache_tensor(const std::string& name, const compiler::StreamingLayout& layout,
                                 std::uint32_t kv_heads, std::uint64_t head_dim, std::uint64_t capacity,
                                 hw::DType dtype);

struct DecodeAttentionArgs {
  std::string layer;
  std::uint32_t q = 0, k = 0, v = 0, out = 0;  // the step's tensors (Heads maps)
  std::uint32_t k_cache = 0, v_cache = 0;      // kv_cache_tensor()s
  std::uint32_t heads = 1, kv_heads = 1;
  std::uint64_t head_dim = 1, capacity = 1;
  std::uint64_t position = 0;  // the new token's index: keys [0, position) are cached
};

// Contract: needs tokens_per_pe 1 with one sample per column and position < capacity (else
// sim::InputError naming the layer); work.issue counts the main thread's instructions of the
// busiest PE, so the bound is a lower bound on its cycles.
compiler::LayerProgram lower_decode_attention(compiler::KernelContext& ctx, const DecodeAttentionArgs& a);

// The parallel prefill's keys and values of one attention layer copied into its KV cache
// (kv_cache_tensor()s), so that decode steps continue from position `prompt`. `k` and `v` are
// the prefill's tensors seen on the decode layout (one sample per column): features
// g*hd*prompt + d*prompt + i for group g, dimension d, position i, with a Heads map of
// `kv_heads` groups, which is where a prefill with `prompt` tokens per PE (one sample per
// column, the same rows) keeps them.
struct KvCacheFillArgs {
  std::string layer;
  std::uint32_t k = 0, v = 0, k_cache = 0, v_cache = 0;
  std::uint32_t kv_heads = 1;
  std::uint64_t head_dim = 1, prompt = 1, capacity = 1;
};

// Contract: needs tokens_per_pe 1 with one sample per column and prompt <= capacity (else
// sim::InputError naming the layer); per row and local element (group, dimension) one vector
// move of the prompt's keys and one widening move of its values, both local to the PE.
compiler::LayerProgram lower_kv_cache_fill(compiler::KernelContext& ctx, const KvCacheFillArgs& a);

}  // namespace wafersim::models::resident
