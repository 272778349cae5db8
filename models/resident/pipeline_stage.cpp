#include "models/resident/pipeline_stage.h"

#include <fmt/format.h>

namespace wafersim::models::resident {

const char* to_string(PipelineCut c) { return c == PipelineCut::RowsIn ? "rows-in" : "rows-out"; }

const char* to_string(StageKind k) {
  switch (k) {
    case StageKind::Linear:
      return "linear";
    case StageKind::Gated:
      return "gated";
    case StageKind::Qkv:
      return "qkv";
    case StageKind::Attention:
      return "attention";
    case StageKind::RmsNorm:
      return "rmsnorm";
    case StageKind::LayerNorm:
      return "layernorm";
    case StageKind::Add:
      return "add";
    case StageKind::Embedding:
      return "embedding";
  }
  return "?";
}

bool is_linear(StageKind k) { return k == StageKind::Linear || k == StageKind::Gated || k == StageKind::Qkv; }
bool is_norm(StageKind k) { return k == StageKind::RmsNorm || k == StageKind::LayerNorm; }

const char* to_string(LinearForm f) { return f == LinearForm::Dot ? "dot" : "fmac"; }

const char* form_name(const PipelineStage& s) { return is_linear(s.kind) ? to_string(s.form) : to_string(s.kind); }

std::string stage_layers(const PipelineStage& s) {
  std::string layers = s.name;
  if (s.kind == StageKind::Gated) layers += " & " + s.up;
  if (s.kind == StageKind::Qkv) layers += " & " + s.up + " & " + s.v;
  if (!s.fused.empty()) layers += " + " + s.fused;
  return layers;
}

std::string describe(const PipelineStage& s) {
  std::string what;
  switch (s.kind) {
    case StageKind::Add:
      what = fmt::format("residual add: the previous stage's outputs and stage {}'s input, carried", s.skip_from);
      break;
    case StageKind::Attention:
      what = fmt::format(
          "causal attention, {} heads / {} kv heads: every row its heads over the cached keys; KV cache {} B per row "
          "({} sequences x {} positions)",
          s.heads, s.kv_heads, s.cache_bytes, s.cache_sequences, s.capacity);
      break;
    case StageKind::Embedding:
      what = fmt::format("embedding of {} ids: every row its features of the table, copies the token's row{}",
                         s.vocabulary, s.positions ? " plus its position's" : "");
      break;
    case StageKind::LayerNorm:
      what = "layernorm: every row the mean and variance of the whole input, then its features";
      break;
    case StageKind::RmsNorm:
      what = "rmsnorm: every row the statistics of the whole input, then its features";
      break;
    case StageKind::Linear:
    case StageKind::Gated:
    case StageKind::Qkv:
      what = s.form == LinearForm::Dot ? "a dot product per output" : "an FMAC per input";
      break;
  }
  if (s.carry_out) what += fmt::format("; then passes on {} skip values", s.carry_out);
  return what;
}

compiler::Span row_inputs(PipelineCut cut, const PipelineStage& s, std::uint32_t y) {
  return cut == PipelineCut::RowsIn ? compiler::split(s.f_in, s.rows, y) : compiler::Span{0, s.f_in};
}
compiler::Span row_outputs(PipelineCut cut, const PipelineStage& s, std::uint32_t y) {
  return cut == PipelineCut::RowsOut ? compiler::split(s.f_out, s.rows, y) : compiler::Span{0, s.f_out};
}
bool row_rounds(PipelineCut cut, const PipelineStage& s, std::uint32_t y) {
  return cut == PipelineCut::RowsOut || y + 1 == s.rows;
}

compiler::Span kv_groups(const PipelineStage& s, std::uint32_t y) {
  const compiler::Span o = compiler::split(s.f_out, s.rows, y);
  if (o.size() == 0) return {0, 0};
  const std::uint64_t group = s.heads / s.kv_heads;
  return {o.lo / s.head_dim / group, (o.hi - 1) / s.head_dim / group + 1};
}

}  // namespace wafersim::models::resident
