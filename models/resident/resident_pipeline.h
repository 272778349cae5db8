#pragma once
// The weight-resident pipeline with PE code: the model's layers as a chain of stages, each on
// its own region (a column of PEs) with its weights in SRAM, all running at once while each
// token's activations flow over the fabric from one stage to the next (docs/compiler.md,
// "Weight-resident placement", "The pipeline, simulated"). compile_pipeline plans the stages
// (pipeline_plan.h), their SRAM (pipeline_frame.h) and routes (pipeline_routes.h), then lowers
// every row of every stage by its kind (pipeline_lowering.h); pipeline_expect.h gives the
// outputs the run must produce.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/route_table.h"
#include "hw/isa/program.h"
#include "models/compiler/target.h"
#include "models/model_spec.h"
#include "models/resident/pipeline_stage.h"

namespace wafersim::models::resident {

struct PipelineProgram {
  ModelSpec model;
  compiler::Target target;
  PipelineCut cut = PipelineCut::RowsOut;
  std::uint64_t tokens = 0;    // batch x sequence, one token per pipeline slot
  std::uint32_t replicas = 1;  // pipelines side by side on bands of rows; token m runs on band m % replicas
  std::vector<PipelineStage> stages;
  // Token m is position m % positions of sequence m / positions. The prefill phase runs the
  // positions [0, prompt) of every sequence; each decode phase after it one more position of
  // every sequence (its own programs, loaded when the one before has finished; the weights
  // and the KV caches stay in SRAM).
  std::uint64_t positions = 0, prompt = 0;
  struct Phase {
    std::vector<std::uint64_t> tokens;  // in the order they enter
    std::vector<hw::isa::Placement> code;
  };
  std::vector<Phase> phases;
  // With attention, replicas take whole sequences (band: sequence % replicas, each band
  // keeping the caches of its sequences); otherwise the phase's tokens in turn.
  bool by_sequence = false;
  // The tokens of a phase that band `band` runs, in order.
  [[nodiscard]] std::vector<std::uint64_t> band_tokens(std::size_t phase, std::uint32_t band) const;
  std::shared_ptr<fabric::RouteTable> routes;
  std::uint32_t colors = 0;  // colors the routes use
  PipeBits input;            // tokens x f_in of the first stage, token-major (an embedding's: the token ids)
  std::uint32_t out_addr = 0;
  std::uint64_t sram_max = 0;  // bytes on the PE that needs most
  [[nodiscard]] std::uint64_t tokens_per_replica() const { return (tokens + replicas - 1) / replicas; }
  // Lower bound on the whole run: per phase, every stage's latency plus (its tokens per
  // replica - 1) slowest intervals.
  [[nodiscard]] std::uint64_t bound_cycles() const;
  [[nodiscard]] std::uint64_t interval_cycles() const;
};

// Contract: covers models whose layers (the loss left out) are a chain of linear layers,
// each optionally followed by one unary elementwise layer (gelu, silu, relu) or, for two
// linear layers of one input, SwiGLU of their outputs (a gated stage); q, k and v projections
// of one input followed by a causal attention layer (a KV cache per sequence in SRAM; a
// sequence's tokens in order on one band); RMSNorm and LayerNorm layers and residual adds (of
// the previous layer and an earlier input in the chain, not overlapping; these with the
// rows-out cut), fed by one activation input or by token ids that a first embedding layer
// (with or without learned positions) looks up; throws sim::InputError naming the first layer
// it does not cover, or when the stages do not fit the grid or a PE's SRAM. Values drawn from
// `seed`. `replicas` pipelines (each with every layer's weights) share the tokens, each on its
// own band of height / replicas rows; 0: the number (up to the tokens and rows) whose
// estimated run is shortest. `decode` > 0: the last `decode` positions of every sequence run
// as decode steps after the prefill of the others.
PipelineProgram compile_pipeline(const ModelSpec& model, const compiler::Target& target, std::uint64_t seed,
                                 PipelineCut cut = PipelineCut::RowsOut, std::uint32_t replicas = 1,
                                 std::uint64_t decode = 0);

}  // namespace wafersim::models::resident
