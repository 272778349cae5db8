#pragma once
// A small Llama-style decoder for the mesh placement's tests (examples/models/tiny-llama.yaml
// is the same model as a file): d 16, 4 heads over 2 key/value heads of 4 dimensions, SwiGLU
// 24, vocabulary 40, two layers, a KV cache of 16 positions.

#include "models/model_spec.h"

namespace wafersim::test {

inline models::ModelSpec tiny_llama() {
  return models::load_model_text(
             "name: tiny-llama\ndtype: bf16\nbatch: 1\nsequence: 16\ntransformer:\n  d_model: 16\n  heads: 4\n"
             "  kv_heads: 2\n  d_ff: 24\n  layers: 2\n  vocabulary: 40\n  activation: swiglu\n  norm: rmsnorm\n"
             "  positions: rotary\n  bias: false\n",
             "tiny-llama.yaml")
      .spec;
}

}  // namespace wafersim::test
