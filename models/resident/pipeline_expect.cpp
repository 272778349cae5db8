#include "models/resident/pipeline_expect.h"

#include <utility>
#include <vector>

#include "hw/numerics/softfloat.h"
#include "models/compiler/compiled_model.h"
#include "models/compiler/elementwise.h"
#include "models/reference/attention.h"
#include "models/reference/embedding.h"
#include "models/reference/format.h"
#include "models/reference/norms.h"

namespace wafersim::models::resident {
using hw::DType;
namespace nm = hw::numerics;
namespace ref = models::reference;

namespace {

// A stage's output (tokens x f_out) from a models/reference result.
PipeBits output_of(const PipelineProgram& p, const PipelineStage& s, const ref::Tensor& r) {
  PipeBits y(p.tokens * s.f_out);
  for (std::uint64_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::uint32_t>(r.bits(i));
  return y;
}

// x + skip by the add's elementwise program.
PipeBits expect_add(const PipelineProgram& p, const PipelineStage& s, PipeBits x, PipeBits skip) {
  const compiler::EwProgram ew = compiler::elementwise_forward(LayerKind::Add);
  PipeBits y(p.tokens * s.f_out);
  std::vector<std::vector<std::uint32_t>*> ptrs{&x, &skip, &y};
  compiler::run_elementwise(ew, compiler::hw_dtype(p.model.dtype), ptrs);
  return y;
}

// embedding_forward of the ids (a copy of the table's rows, plus the positions' rows).
PipeBits expect_embedding(const PipelineProgram& p, const PipelineStage& s, const PipeBits& x) {
  ref::TokenIds ids;
  ids.shape = {p.model.batch, p.model.sequence, 0};
  ids.ids = x;
  ref::Tensor table(ref::format_of(p.model.dtype), {1, s.vocabulary, s.f_out});
  for (std::uint64_t i = 0; i < s.weight.size(); ++i) table.set_bits(i, s.weight[i]);
  ref::Tensor positions(ref::format_of(p.model.dtype), {1, s.capacity, s.f_out});
  for (std::uint64_t i = 0; i < s.weight2.size(); ++i) positions.set_bits(i, s.weight2[i]);
  return output_of(p, s, ref::embedding_forward(ids, table, s.positions ? &positions : nullptr));
}

// attention_forward over each sequence's tokens (token m: sequence m / S, position m % S), q,
// k and v cut from the q/k/v stage's outputs.
PipeBits expect_attention(const PipelineProgram& p, const PipelineStage& s, const PipeBits& x) {
  const ref::Format f = ref::format_of(p.model.dtype);
  const std::uint64_t B = p.model.batch, S = p.model.sequence, hd = s.head_dim;
  const std::uint64_t nq = s.heads * hd, nk = s.kv_heads * hd;
  ref::Tensor q(f, {B, S, nq}), k(f, {B, S, nk}), v(f, {B, S, nk});
  for (std::uint64_t m = 0; m < p.tokens; ++m) {
    for (std::uint64_t j = 0; j < nq; ++j) q.set_bits(m * nq + j, x[m * s.f_in + j]);
    for (std::uint64_t j = 0; j < nk; ++j) {
      k.set_bits(m * nk + j, x[m * s.f_in + nq + j]);
      v.set_bits(m * nk + j, x[m * s.f_in + nq + nk + j]);
    }
  }
  return output_of(p, s, ref::attention_forward(q, k, v, {s.heads, s.kv_heads, true}));
}

// rmsnorm_forward or layernorm_forward of every token.
PipeBits expect_norm(const PipelineProgram& p, const PipelineStage& s, const PipeBits& x) {
  const ref::Format f = ref::format_of(p.model.dtype);
  ref::Tensor xt(f, {p.tokens, 1, s.f_in}), g(f, ref::vector_shape(s.f_in)), be(f, ref::vector_shape(s.f_in));
  for (std::uint64_t i = 0; i < x.size(); ++i) xt.set_bits(i, x[i]);
  for (std::uint64_t i = 0; i < s.f_in; ++i) g.set_bits(i, s.weight[i]);
  const bool layer = s.kind == StageKind::LayerNorm;
  if (layer)
    for (std::uint64_t i = 0; i < s.f_in; ++i) be.set_bits(i, s.weight2[i]);
  return output_of(p, s, layer ? ref::layernorm_forward(xt, g, be, s.epsilon) : ref::rmsnorm_forward(xt, g, s.epsilon));
}

// Per token and output: acc = bias (or +0), fma(x[f], w[f][o], acc) over the inputs in order
// in fp32, rounded once.
PipeBits linear(const PipelineProgram& p, const PipelineStage& s, const PipeBits& x, const PipeBits& w, bool has_bias,
                const PipeBits& bias) {
  const DType dt = compiler::hw_dtype(p.model.dtype);
  auto widen = [&](std::uint32_t v) { return dt == DType::F32 ? v : nm::convert(DType::F32, dt, v); };
  PipeBits out(p.tokens * s.f_out);
  for (std::uint64_t m = 0; m < p.tokens; ++m)
    for (std::uint64_t o = 0; o < s.f_out; ++o) {
      std::uint32_t acc = has_bias ? widen(bias[o]) : 0;
      for (std::uint64_t f = 0; f < s.f_in; ++f)
        acc = nm::fma(DType::F32, widen(x[m * s.f_in + f]), widen(w[f * s.f_out + o]), acc);
      out[m * s.f_out + o] = dt == DType::F32 ? acc : nm::convert(dt, DType::F32, acc);
    }
  return out;
}

// The product (a gated stage: both), then the fused elementwise program.
PipeBits expect_linear(const PipelineProgram& p, const PipelineStage& s, const PipeBits& x) {
  PipeBits y = linear(p, s, x, s.weight, s.bias, s.bias_values);
  if (s.fused.empty()) return y;
  const compiler::EwProgram ew = compiler::elementwise_forward(s.fused_kind);
  std::vector<PipeBits> bufs(ew.buffers.size(), PipeBits(y.size()));
  bufs[0] = std::move(y);
  if (s.kind == StageKind::Gated) bufs[1] = linear(p, s, x, s.weight2, s.bias2, s.bias_values2);
  std::vector<std::vector<std::uint32_t>*> ptrs;
  for (auto& v : bufs) ptrs.push_back(&v);
  compiler::run_elementwise(ew, compiler::hw_dtype(p.model.dtype), ptrs);
  return std::move(bufs[ew.inputs]);
}

// Stage s's outputs from its input x (`inputs`: every stage's input so far).
PipeBits expect_stage(const PipelineProgram& p, const PipelineStage& s, const PipeBits& x,
                      const std::vector<PipeBits>& inputs) {
  switch (s.kind) {
    case StageKind::Add:
      return expect_add(p, s, x, inputs.at(s.skip_from));
    case StageKind::Embedding:
      return expect_embedding(p, s, x);
    case StageKind::Attention:
      return expect_attention(p, s, x);
    case StageKind::RmsNorm:
    case StageKind::LayerNorm:
      return expect_norm(p, s, x);
    case StageKind::Linear:
    case StageKind::Gated:
    case StageKind::Qkv:
      return expect_linear(p, s, x);
  }
  return {};
}

}  // namespace

PipeBits expect_pipeline(const PipelineProgram& p) {
  PipeBits x = p.input;
  std::vector<PipeBits> inputs;  // each stage's input
  for (const auto& s : p.stages) {
    inputs.push_back(x);
    x = expect_stage(p, s, x, inputs);
  }
  return x;
}

}  // namespace wafersim::models::resident
