#pragma once
// Lowering of each layer kind, forward and backward, in the weight-streaming placement
// (docs/compiler.md describes every kernel's program, streams and operation order).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/compiler/compiled_model.h"
#include "models/compiler/elementwise.h"
#include "models/compiler/sizes.h"
#include "models/compiler/sram_arena.h"
#include "sim/errors.h"

namespace wafersim::models::compiler {

class ProgramBuilder;

// What a kernel sees while it lowers one layer.
// Code generation has no PE code for a step (its kind, or a layout beyond what it supports);
// compile() plans such a step analytically with CompileOptions::plan_missing_code.
class NoCodeError : public sim::InputError {
 public:
  using sim::InputError::InputError;
};

struct KernelContext {
  const Target& target;
  const StreamingLayout& layout;
  const ColorPlan& colors;
  const std::vector<Tensor>& tensors;
  SramArena& sram;
  bool emit = true;
  Accumulate accumulate = Accumulate::Fp32;
  hw::DType dtype = hw::DType::F16;
  std::string layer;  // for error messages
  // Scratch buffers: allocated for one layer, released when it is lowered.
  std::uint32_t scratch(const std::string& name, std::uint64_t bytes, std::uint32_t phase = 0);
  void release_scratch();
  std::vector<std::uint32_t> scratch_addrs;
};

// y = x M (+ b): the streamed matrix product of an activation tensor (features f_in) with a
// weight matrix M[f_in][f_out] at element base + f*sf + o*so of a host tensor. Forward of
// linear (M = W) and its data gradient (M = W^T, `accumulate_out` adds into a gradient that
// another consumer already wrote).
struct MatmulArgs {
  std::string layer;
  LayerKind kind = LayerKind::Linear;
  Phase phase = Phase::Forward;
  std::uint32_t in = 0, out = 0;
  std::uint64_t f_in = 0, f_out = 0;
  bool accumulate_out = false;
  std::uint32_t weight = 0;
  std::uint64_t weight_base = 0;
  std::int64_t sf = 0, so = 0;
  int bias = -1;  // host tensor of f_out values
};
LayerProgram lower_matmul(KernelContext& ctx, const MatmulArgs& a);

// dM[f][o] = sum over tokens of x[f] dy[o] (and db[o] = sum of dy[o]), streamed out through
// the east edge channels in fp32.
struct WeightGradArgs {
  std::string layer;
  LayerKind kind = LayerKind::Linear;
  std::uint32_t x = 0, dy = 0;
  std::uint64_t f_in = 0, f_out = 0;
  std::uint32_t grad = 0;
  std::uint64_t grad_base = 0;
  std::int64_t sf = 0, so = 0;
  int bias_grad = -1;
};
LayerProgram lower_weight_gradient(KernelContext& ctx, const WeightGradArgs& a);

// A tensor id standing for a scratch buffer (an input gradient nobody needs).
inline constexpr std::uint32_t kScratchTensor = 0xffffffffu;

// An elementwise layer (or its backward): `tensors` are the program's inputs then outputs.
struct ElementwiseArgs {
  std::string layer;
  LayerKind kind = LayerKind::Add;
  Phase phase = Phase::Forward;
  EwProgram program;
  std::vector<std::uint32_t> tensors;
  std::vector<bool> accumulate;  // backward: per output, as the program was made
};
LayerProgram lower_elementwise(KernelContext& ctx, const ElementwiseArgs& a);

// RMSNorm forward: y = x rstd gamma per token, the sum of squares chained down the column in
// feature order (bit-exact with models/reference), gamma (host tensor) streamed in.
struct NormArgs {
  std::string layer;
  std::uint32_t in = 0, out = 0;
  std::uint32_t gamma = 0;
  double epsilon = 1e-5;
};
LayerProgram lower_rmsnorm_forward(KernelContext& ctx, const NormArgs& a);

// Softmax over each token's features, forward (x -> out) or backward (y, dy -> dx, added to
// a gradient already written when `accumulate`): the reductions chained down the column in
// feature order (bit-exact with models/reference).
struct SoftmaxArgs {
  std::string layer;
  Phase phase = Phase::Forward;
  std::uint32_t x = 0, out = 0;         // forward
  std::uint32_t y = 0, dy = 0, dx = 0;  // backward
  bool accumulate = false;
};
LayerProgram lower_softmax(KernelContext& ctx, const SoftmaxArgs& a);

// Scaled dot-product attention (causal or not), multi-head or grouped-query, forward (q, k, v -> out)
// or backward (q, k, v, dout -> dq, dk, dv): each column gathers the keys and values (and
// backward the queries and output gradients) of its sample's columns along the row and
// computes in the reference's order (bit-exact with models/reference).
struct AttentionArgs {
  std::string layer;
  Phase phase = Phase::Forward;
  std::uint32_t q = 0, k = 0, v = 0, out = 0;
  std::uint32_t dout = 0;
  std::uint32_t dq = kScratchTensor, dk = kScratchTensor, dv = kScratchTensor;
  std::uint32_t heads = 1, kv_heads = 1;
  std::uint64_t head_dim = 1, sequence = 1;
  bool causal = true;
  bool accumulate_dq = false, accumulate_dk = false, accumulate_dv = false;
};
LayerProgram lower_attention(KernelContext& ctx, const AttentionArgs& a);

// LayerNorm forward, LayerNorm and RMSNorm backward: the data gradient (dx, added into a
// gradient already written when `accumulate`) or the parameter gradients (streamed out east
// in fp32), in the reference's order (models/reference norms).
struct NormStepArgs {
  std::string layer;
  bool layernorm = false;
  Phase phase = Phase::BackwardData;
  std::uint32_t x = 0, out = 0, dy = 0, dx = 0;
  bool accumulate = false;
  std::uint32_t gamma = 0, beta = 0;  // host tensors
  int gamma_grad = -1, beta_grad = -1;
  double epsilon = 1e-5;
};
LayerProgram lower_norm(KernelContext& ctx, const NormStepArgs& a);

// Cross-entropy: forward writes (max, sum of exp(x - max), label logit) per token (`loss`,
// width 3, on every row; the host takes the log); backward writes the logits' gradient of
// the mean loss from that output (docs/compiler.md, "Cross-entropy").
struct CrossEntropyArgs {
  std::string layer;
  Phase phase = Phase::Forward;
  std::uint32_t logits = 0, labels = 0, loss = 0, dlogits = 0;
  bool accumulate = false;
};
LayerProgram lower_cross_entropy(KernelContext& ctx, const CrossEntropyArgs& a);

// Embedding lookup, with learned positions or without: forward (`fwd`: ids -> out, the table
// and the position table streamed in) or the tables' gradients (ids, dy -> `table` and
// `positions` host tensors, streamed out east in fp32), in the reference's order
// (docs/compiler.md, "Embedding").
struct EmbeddingArgs {
  std::string layer;
  bool fwd = true;
  std::uint32_t ids = 0, out = 0, dy = 0;
  std::uint32_t table = 0;  // host tensor: the table (forward) or its gradient
  std::uint64_t vocabulary = 0;
  int positions = -1;  // host tensor: the position table (forward) or its gradient; -1: none
  std::uint64_t sequence = 0;
};
LayerProgram lower_embedding(KernelContext& ctx, const EmbeddingArgs& a);

// The SRAM error: `what` (bytes per PE) does not fit beside what is resident. `also`, when
// given, is one more way out, listed with the others (fewer tokens per PE, a wider wafer, more
// SRAM per PE).
[[noreturn]] void throw_sram_error(const KernelContext& ctx, const std::string& what, std::uint64_t bytes,
                                   const std::string& also = {});

// Emits D = A widened to fp32 (fcvt from dt, or a copy when dt is fp32), and the reverse.
void widen(ProgramBuilder& b, hw::DType dt, unsigned d, unsigned a);
void narrow(ProgramBuilder& b, hw::DType dt, unsigned d, unsigned a);

// Emits r5 = rsqrt(r4 x r13 + r14) on fp32 registers in the reference's steps (docs/reference.md,
// "rsqrt"), with r15 holding 0.5; r4 becomes r4 x r13 + r14, and r7 to r10 are clobbered.
void emit_rsqrt_registers(ProgramBuilder& b);

// Emits rstd = rsqrt(s x inv_d + eps) in place over `tokens` fp32 sums at `acc_addr`, in the
// reference's steps (docs/reference.md, "rsqrt"); uses registers 4 to 15.
void emit_rstd_in_place(ProgramBuilder& b, std::uint32_t acc_addr, std::uint64_t tokens, std::uint32_t inv_d,
                        std::uint32_t eps);

// The feature map that a layer's feature tensors (`ids`, kScratchTensor skipped) share, for
// a kernel that works on one slice of all of them per row. An InputError names the layer and
// the tensors when their maps differ, or when `in_order` (the kernel chains a reduction down
// the column in feature order) and the features do not run in order down the column.
const FeatureMap& shared_map(const KernelContext& ctx, const std::string& layer, const std::vector<std::uint32_t>& ids,
                             bool in_order);

// Emits an elementwise program's constants (into registers 1..) and vector operations, its
// buffers given as descriptors in the program's buffer order.
void emit_ew_ops(ProgramBuilder& b, hw::DType dt, const EwProgram& prog, const std::vector<unsigned>& buffers);

// Adds `program` to `p`'s code on every used column of slice s's row.
void place_on_row(LayerProgram& p, const StreamingLayout& l, std::uint32_t s,
                  std::shared_ptr<const hw::isa::Program> program);

// The work, SRAM and region of a layer from per-slice figures (the same on every column).
void finish_layer(const KernelContext& ctx, LayerProgram& p, const std::vector<std::uint64_t>& sram_per_slice);

}  // namespace wafersim::models::compiler
