#pragma once
// One stage of the weight-resident pipeline: what it computes (its kind), the layers it runs,
// its column and rows, its parameters and its bounds per token (docs/compiler.md, "The
// pipeline, simulated").

#include <cstdint>
#include <string>
#include <vector>

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

// What a stage computes; the fields of PipelineStage each kind reads are listed beside it there.
enum class StageKind : std::uint8_t {
  Linear,     // a linear layer, optionally with one unary elementwise layer fused after it
  Gated,      // two linear layers of one input (gate and up) with SwiGLU of the two fused after them
  Qkv,        // the q, k and v projections of one input as one linear layer
  Attention,  // causal attention on a Qkv stage's outputs, with a KV cache per sequence
  RmsNorm,    // RMSNorm
  LayerNorm,  // LayerNorm
  Add,        // a residual add of the previous stage's outputs and an earlier stage's input
  Embedding,  // the lookup of each token's id in a table (the first stage only)
};
// "linear", "gated", "qkv", "attention", "rmsnorm", "layernorm", "add", "embedding".
const char* to_string(StageKind k);
// Linear, Gated and Qkv: the stages whose rows compute a matrix product (in a LinearForm).
bool is_linear(StageKind k);
bool is_norm(StageKind k);

// How the rows of a linear kind compute their outputs. Fmac: one vector FMAC over the row's
// outputs per input (W's rows contiguous). Dot: each output a dot product over the inputs from
// the bias (W's columns contiguous).
enum class LinearForm : std::uint8_t { Fmac, Dot };
const char* to_string(LinearForm f);  // "fmac", "dot"

// One stage on column x, rows [0, rows) of every band: row y keeps its block of the parameters
// (by the cut) and computes its part of the outputs.
struct PipelineStage {
  StageKind kind = StageKind::Linear;
  std::string name;   // its (first) layer
  std::string fused;  // the elementwise layer applied to its output ("" when none)
  LayerKind fused_kind = LayerKind::Relu;
  std::uint32_t x = 0, rows = 0;
  std::uint64_t f_in = 0, f_out = 0;
  // In the model's format. Linear, Gated, Qkv: W (f_in x f_out, row-major) and b; RmsNorm,
  // LayerNorm: gamma in `weight`; Embedding: the table (vocabulary x f_out) in `weight`.
  PipeBits weight, bias_values;
  // Gated: up's W and b; LayerNorm: beta in `weight2`; Embedding with positions: the position
  // table (capacity x f_out) in `weight2`.
  PipeBits weight2, bias_values2;

  // Linear, Gated, Qkv. Gated: `name` is the gate, `up` the up projection (`bias2` its bias),
  // `fused` the SwiGLU of the two. Qkv: `name` is q, `up` k and `v` v; W holds their columns
  // side by side, the outputs are q | k | v.
  bool bias = false;
  LinearForm form = LinearForm::Fmac;  // whichever issues fewer cycles per token (rows-out; rows-in: Fmac)
  std::string up;
  bool bias2 = false;
  std::string v;

  // RmsNorm, LayerNorm: every row takes the statistics of the whole input in the reference's
  // order and normalises its own features (split(f_out, rows, y)).
  double epsilon = 0;

  // Embedding: the input is the token's id (4 bytes, loaded with the ids by the host); row y
  // keeps its features of every row of the table and copies the token's. With `positions`
  // (learned) the input is the id and the position, and the row adds its features of the two
  // rows (in the model's format, as the reference does).
  std::uint64_t vocabulary = 0;
  bool positions = false;

  // Attention (causal, multi-head or grouped-query) on the q | k | v of a Qkv stage: each row
  // keeps, per sequence, the keys and values of the kv heads its output features need (a KV
  // cache of `capacity` positions, keys in the model's format, values widened to fp32),
  // appends each token's, and computes its heads' scores against every cached key of the
  // token's sequence, the softmax and the weighted sum of values in models/reference's order.
  std::uint32_t heads = 0, kv_heads = 0;
  std::uint64_t head_dim = 0;
  std::uint64_t capacity = 0;         // Attention, Embedding: the model's sequence
  std::uint64_t cache_sequences = 0;  // sequences the cache holds (those of its band)
  std::uint64_t cache_bytes = 0;      // the KV cache on the row that keeps most

  // Add: its input is the previous stage's output followed by the skip (the input of stage
  // `skip_from`, which the stages from there on carry after their outputs); each row adds its
  // features of the two.
  std::size_t skip_from = 0;

  // Any kind: the skip it carries.
  std::uint64_t carry_in = 0;    // elements after the f_in inputs that the stage receives
  std::uint64_t carry_out = 0;   // elements its bottom row sends after the outputs
  std::uint64_t carry_from = 0;  // where in its input they are: 0 (its own input) or f_in

  std::uint64_t latency_bound = 0;   // per token, after its input has arrived (busiest row)
  std::uint64_t interval_bound = 0;  // per token, input included (busiest row)
};

// pipeline.json's "form": the kind's name, or for the linear kinds their form's.
const char* form_name(const PipelineStage& s);
// The layers a stage runs: "gate & up + act", "q & k & v", "fc1 + gelu", "ln1".
std::string stage_layers(const PipelineStage& s);
// What its rows do, for `run --pipeline`'s stage lines (with the skip it passes on).
std::string describe(const PipelineStage& s);

// The inputs row y of a stage multiplies, the outputs it computes, and whether it rounds (and
// sends or stores) its outputs.
compiler::Span row_inputs(PipelineCut cut, const PipelineStage& s, std::uint32_t y);
compiler::Span row_outputs(PipelineCut cut, const PipelineStage& s, std::uint32_t y);
bool row_rounds(PipelineCut cut, const PipelineStage& s, std::uint32_t y);
// Attention: the kv heads [lo, hi) whose keys row y needs (those of its output features' heads).
compiler::Span kv_groups(const PipelineStage& s, std::uint32_t y);

}  // namespace wafersim::models::resident
