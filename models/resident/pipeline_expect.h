#pragma once
// What a pipelined run must produce: the outputs of its last stage computed on the host, per
// stage kind, in the order models/reference computes them (docs/compiler.md, "The pipeline,
// simulated").

#include "models/resident/resident_pipeline.h"

namespace wafersim::models::resident {

// The expected output (tokens x f_out of the last stage, token-major) from p's inputs and
// parameters. Linear kinds: per output, acc = bias (or +0), fma over the inputs in order,
// rounded once (models/reference linear_forward's order), then the fused elementwise program
// (a gated stage's on its two products); RmsNorm and LayerNorm: models/reference
// rmsnorm_forward and layernorm_forward; attention: attention_forward over each sequence's
// tokens; embedding: embedding_forward; adds: the elementwise program.
PipeBits expect_pipeline(const PipelineProgram& p);

}  // namespace wafersim::models::resident
