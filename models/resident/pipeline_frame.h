#pragma once
// The SRAM of one PE of a pipeline stage: the same addresses on every row of the stage, sized
// for the row with the largest share (docs/compiler.md, "The pipeline, simulated").

#include <cstdint>

#include "hw/numerics/dtype.h"
#include "models/resident/pipeline_stage.h"

namespace wafersim::models::resident {

struct Frame {
  std::uint32_t w = 0, bias = 0, acc = 0, y = 0, fused = 0, temps = 0, x = 0, out = 0, stat = 0, save = 0;
  std::uint32_t w2 = 0, bias2 = 0, y2 = 0;          // a gated stage's up projection; an embedding's positions
  std::uint32_t wide = 0, beta = 0;                 // a LayerNorm stage's widened input and beta
  std::uint32_t kc = 0, vc = 0, sc = 0, table = 0;  // an attention stage's KV cache, scores, token table
  std::uint64_t groups = 0;                         // kv heads per sequence in the cache (the most any row needs)
  std::uint32_t end = 0;                            // bytes in all
};

// Bytes of one input element of the first stage as the host loads it: a token id (4), an id
// and a position (8), or an activation in the model's format.
std::uint32_t first_input_bytes(const PipelineStage& s, hw::DType dt);

// The frame of stage `s` (`first`, `last` in the chain) for at most `tokens` tokens of a band
// in a phase and `temps` temporaries of its fused elementwise program.
Frame frame(PipelineCut cut, const PipelineStage& s, bool first, bool last, std::uint64_t tokens, std::uint32_t temps,
            hw::DType dt);

}  // namespace wafersim::models::resident
