#pragma once
// The weight-resident pipeline with PE code: every linear layer of a chain on its own region
// (a column of PEs), its weights in SRAM, all regions running at once while each token's
// activations flow over the fabric from one region to the next (docs/compiler.md,
// "Weight-resident placement", "The pipeline, simulated").

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/route_table.h"
#include "hw/isa/program.h"
#include "models/compiler/layer_program.h"
#include "models/compiler/target.h"
#include "models/model_spec.h"

namespace wafersim::models::resident {

using PipeBits = std::vector<std::uint32_t>;

// How a stage's matrix is cut over its rows. RowsOut: row y computes outputs split(f_out, rows,
// y) over every input, the rows pass their outputs south in feature order (a relay). RowsIn:
// row y takes inputs split(f_in, rows, y) for every output and continues the fp32 sums the row
// above passed it (so each sum still runs over the inputs in order); the bottom row rounds.
enum class PipelineCut : std::uint8_t { RowsOut, RowsIn };
const char* to_string(PipelineCut c);

// One stage: a linear layer (and the unary elementwise layer fused after it, if any), an
// RMSNorm layer or a residual add, on
// column x, rows [0, rows): row y keeps its block of W (by the cut) and of the bias.
struct PipelineStage {
  std::string name;   // the linear layer
  std::string fused;  // the elementwise layer applied to its output ("" when none)
  LayerKind fused_kind = LayerKind::Relu;
  std::uint32_t x = 0, rows = 0;
  std::uint64_t f_in = 0, f_out = 0;
  bool bias = false;
  // Rows-out: each output a dot product over the inputs (fdot from the bias, W's columns kept
  // contiguous), rather than one FMAC over the row's outputs per input; whichever issues fewer
  // cycles per token.
  bool dot = false;
  // An RMSNorm layer instead of a linear one: every row takes the statistics of the whole
  // input in the reference's order and normalises its own features (split(f_out, rows, y));
  // `weight` holds gamma.
  bool norm = false;
  double epsilon = 0;
  // A LayerNorm layer (with `norm`): the mean, then the sum of squares of x - mean, in the
  // reference's order; `weight2` holds beta.
  bool layer_norm = false;
  // A residual add instead: its input is the previous stage's output followed by the skip
  // (the input of stage `skip_from`, which the stages from there on carry after their outputs);
  // each row adds its features of the two.
  bool add = false;
  // A gated linear stage: two linear layers that read the same input (gate: `name`, and `up`)
  // with a two-input elementwise layer (`fused`, SwiGLU) on their outputs; each row computes
  // its features of both, then the gate's activation times the up projection.
  bool gated = false;
  std::string up;
  bool bias2 = false;
  PipeBits weight2, bias_values2;  // up's W and b
  // The q, k and v projections of one input as one linear stage (`name` q, then `up` k and
  // `v`): W holds their columns side by side, its outputs are q | k | v.
  bool qkv = false;
  std::string v;
  // An attention layer (causal, multi-head or grouped-query) on a qkv stage's outputs: each
  // row keeps, per sequence, the keys and values of the kv heads its output features need
  // (a KV cache of `capacity` positions, keys in the model's format, values widened to
  // fp32), appends each token's, and computes its heads' scores against every cached key of
  // the token's sequence, the softmax and the weighted sum of values in models/reference's
  // order.
  bool attention = false;
  // An embedding lookup as the first stage (no learned positions): its input is the token's id
  // (4 bytes, loaded with the ids by the host); row y keeps its features of every row of the
  // table (`weight`, vocabulary x f_out) and copies the token's.
  bool embedding = false;
  std::uint64_t vocabulary = 0;
  // With learned positions: `weight2` is the position table (sequence x f_out); each token's
  // input is its id and its position, and the row adds its features of the two rows (in the
  // model's format, as the reference does).
  bool positions = false;
  std::uint32_t heads = 0, kv_heads = 0;
  std::uint64_t head_dim = 0, capacity = 0;
  std::uint64_t cache_sequences = 0;  // sequences the cache holds (those of its band)
  std::uint64_t cache_bytes = 0;      // the KV cache on the row that keeps most
  std::size_t skip_from = 0;
  std::uint64_t carry_in = 0;        // elements after the f_in inputs that the stage receives (the skip)
  std::uint64_t carry_out = 0;       // elements its bottom row sends after the outputs (the skip)
  std::uint64_t carry_from = 0;      // where in its input they are: 0 (its own input) or f_in
  std::uint64_t latency_bound = 0;   // per token, after its input has arrived (busiest row)
  std::uint64_t interval_bound = 0;  // per token, input included (busiest row)
  PipeBits weight, bias_values;      // W (f_in x f_out, row-major) and b, in the model's format
};

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
// (without learned positions) looks up; throws sim::InputError naming the first layer it does
// not cover, or when the stages do not fit the grid or a PE's SRAM. Values drawn from `seed`. `replicas` pipelines
// (each with every layer's weights) share the tokens, each on its own band of height / replicas rows; 0: the number (up
// to the tokens and rows) whose estimated run is shortest.
// `decode` > 0: the last `decode` positions of every sequence run as decode steps after the
// prefill of the others.
PipelineProgram compile_pipeline(const ModelSpec& model, const compiler::Target& target, std::uint64_t seed,
                                 PipelineCut cut = PipelineCut::RowsOut, std::uint32_t replicas = 1,
                                 std::uint64_t decode = 0);

// The expected output (tokens x f_out of the last stage, token-major) in models/reference's
// order: per output, acc = bias (or +0), fma over the inputs in order, rounded once; then
// the fused elementwise program; RMSNorm and LayerNorm stages by models/reference
// rmsnorm_forward and layernorm_forward; adds by
// the elementwise program.
PipeBits expect_pipeline(const PipelineProgram& p);

// The inputs row y of a stage multiplies, the outputs it computes, and whether it rounds (and
// sends or stores) its outputs.
compiler::Span row_inputs(PipelineCut cut, const PipelineStage& s, std::uint32_t y);
compiler::Span row_outputs(PipelineCut cut, const PipelineStage& s, std::uint32_t y);
bool row_rounds(PipelineCut cut, const PipelineStage& s, std::uint32_t y);

}  // namespace wafersim::models::resident
