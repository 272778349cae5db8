#include "models/resident/pipeline_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "models/compiler/sizes.h"
#include "sim/errors.h"

namespace wafersim::models::resident {
using compiler::ceil_div;

namespace {

bool fusable(LayerKind k) { return k == LayerKind::Gelu || k == LayerKind::Silu || k == LayerKind::Relu; }

// Reads the model's layers in order into stages: each layer starts a stage, joins the last
// one (the up projection of a gated stage, a fused elementwise layer) or, for k and v, was
// folded into a q/k/v stage.
class ChainPlanner {
 public:
  ChainPlanner(const ModelSpec& model, PipelineCut cut) : m_(model), cut_(cut) {}
  std::vector<PipelineStage> plan();

 private:
  void start_from_input();
  void take(const LayerSpec& l);
  bool take_layer(const LayerSpec& l, bool chained);
  void add_qkv(const LayerSpec& q, const LayerSpec& attention);
  void add_attention(const LayerSpec& l);
  void add_residual(const LayerSpec& l);
  void no_rows_in(const LayerSpec& l) const;
  const LayerSpec* layer_named(const std::string& n) const;
  const LayerSpec* qkv_of(const LayerSpec& q) const;
  bool reads_qkv_stage(const LayerSpec& l) const;
  bool is_up_of_last(const LayerSpec& l) const;

  const ModelSpec& m_;
  PipelineCut cut_;
  std::vector<PipelineStage> stages_;
  const LayerSpec* embed_ = nullptr;
  std::string prev_;                      // the tensor the next layer of the chain reads
  std::vector<std::string> stage_input_;  // the tensor each stage reads
  std::vector<std::string> folded_;       // k and v layers of a qkv stage
};

std::vector<PipelineStage> ChainPlanner::plan() {
  start_from_input();
  for (const auto& l : m_.layers) take(l);
  for (const auto& st : stages_)
    if (st.kind == StageKind::Gated && st.fused.empty())
      throw sim::InputError(fmt::format(
          "model '{}': layers '{}' and '{}' read one input; the pipelined run covers that only with swiglu of the "
          "two after them",
          m_.name, st.name, st.up));
  return std::move(stages_);
}

// One activation input, or token ids that the first layer embeds (the embedding stage).
void ChainPlanner::start_from_input() {
  const InputSpec* input = nullptr;
  for (const auto& in : m_.inputs)
    if (in.kind == InputSpec::Kind::Activations) {
      if (input)
        throw sim::InputError(
            fmt::format("model '{}': the pipelined run takes one activation input, the model has "
                        "'{}' and '{}'",
                        m_.name, input->name, in.name));
      input = &in;
    }
  if (!input) {
    for (const auto& in : m_.inputs)
      if (in.kind == InputSpec::Kind::Tokens && !m_.layers.empty() && m_.layers.front().kind == LayerKind::Embedding &&
          m_.layers.front().inputs.size() == 1 && m_.layers.front().inputs[0] == in.name)
        input = &in;
    if (input) embed_ = &m_.layers.front();
  }
  if (!input)
    throw sim::InputError(
        fmt::format("model '{}': the pipelined run needs an activation input, or token ids that its first layer "
                    "embeds (other inputs are not covered yet)",
                    m_.name));
  prev_ = input->name;
  if (!embed_) return;
  if (cut_ != PipelineCut::RowsOut)
    throw sim::InputError(fmt::format("model '{}': layer '{}' (embedding) needs the rows-out cut in the pipeline",
                                      m_.name, embed_->name));
  PipelineStage s;
  s.kind = StageKind::Embedding;
  s.name = embed_->name;
  s.vocabulary = embed_->vocabulary;
  s.positions = embed_->learned_positions;
  s.capacity = m_.sequence;
  s.f_in = 1;
  s.f_out = embed_->features;
  stages_.push_back(std::move(s));
  stage_input_.push_back(prev_);
  prev_ = embed_->name;
}

void ChainPlanner::take(const LayerSpec& l) {
  if (l.kind == LayerKind::CrossEntropy || &l == embed_) return;
  if (std::find(folded_.begin(), folded_.end(), l.name) != folded_.end()) return;
  const bool chained = l.inputs.size() == 1 && l.inputs[0] == prev_;
  const std::size_t before = stages_.size();
  if (!take_layer(l, chained))
    throw sim::InputError(fmt::format(
        "model '{}': the pipelined run covers chains of linear layers, each optionally followed by one gelu, silu "
        "or relu layer (or two of one input with swiglu after them, or q, k, v with causal attention after them), "
        "rmsnorm and layernorm layers and residual adds; layer '{}' ({}{}) is not covered yet",
        m_.name, l.name, to_string(l.kind), chained ? "" : ", not fed by the previous layer"));
  if (stages_.size() > before) stage_input_.push_back(prev_);
  prev_ = l.name;
}

// Adds the layer to the chain (false: the pipeline does not cover it here). The first rule
// that matches decides.
bool ChainPlanner::take_layer(const LayerSpec& l, bool chained) {
  const LayerSpec* attn = l.kind == LayerKind::Linear && chained && l.tied_to.empty() ? qkv_of(l) : nullptr;
  PipelineStage* last = stages_.empty() ? nullptr : &stages_.back();
  if (attn) {
    add_qkv(l, *attn);
  } else if (l.kind == LayerKind::Attention && reads_qkv_stage(l)) {
    add_attention(l);
  } else if (l.kind == LayerKind::Add && l.inputs.size() == 2 && (l.inputs[0] == prev_ || l.inputs[1] == prev_) &&
             last) {
    add_residual(l);
  } else if (is_up_of_last(l)) {
    no_rows_in(l);
    last->kind = StageKind::Gated;
    last->up = l.name;
    last->bias2 = l.bias;
  } else if (l.kind == LayerKind::Swiglu && last && last->kind == StageKind::Gated && last->fused.empty() &&
             l.inputs.size() == 2 && l.inputs[0] == last->name && l.inputs[1] == last->up) {
    last->fused = l.name;
    last->fused_kind = l.kind;
  } else if ((l.kind == LayerKind::RmsNorm || l.kind == LayerKind::LayerNorm) && chained) {
    no_rows_in(l);
    PipelineStage s;
    s.kind = l.kind == LayerKind::LayerNorm ? StageKind::LayerNorm : StageKind::RmsNorm;
    s.name = l.name;
    s.epsilon = l.epsilon;
    s.f_in = s.f_out = m_.shape_of(prev_).features;
    stages_.push_back(std::move(s));
  } else if (l.kind == LayerKind::Linear && chained && l.tied_to.empty()) {
    PipelineStage s;
    s.name = l.name;
    s.f_in = l.in_features;
    s.f_out = l.features;
    s.bias = l.bias;
    stages_.push_back(std::move(s));
  } else if (fusable(l.kind) && chained && last && !is_norm(last->kind) && last->kind != StageKind::Add &&
             last->kind != StageKind::Gated && last->fused.empty()) {
    last->fused = l.name;
    last->fused_kind = l.kind;
  } else {
    return false;
  }
  return true;
}

// q, k and v of one input: one stage, their outputs side by side.
void ChainPlanner::add_qkv(const LayerSpec& q, const LayerSpec& attention) {
  no_rows_in(q);
  PipelineStage s;
  s.kind = StageKind::Qkv;
  s.name = q.name;
  s.up = attention.inputs[1];
  s.v = attention.inputs[2];
  s.f_in = q.in_features;
  s.f_out = q.features + 2 * layer_named(s.up)->features;
  s.bias = q.bias;
  folded_ = {s.up, s.v};
  stages_.push_back(std::move(s));
}

void ChainPlanner::add_attention(const LayerSpec& l) {
  no_rows_in(l);
  if (!l.causal)
    throw sim::InputError(
        fmt::format("model '{}': layer '{}' (attention): the pipelined run covers causal attention only (a token "
                    "cannot see keys that have not reached the stage yet)",
                    m_.name, l.name));
  PipelineStage s;
  s.kind = StageKind::Attention;
  s.name = l.name;
  s.heads = l.heads;
  s.kv_heads = l.kv_heads;
  s.f_in = stages_.back().f_out;
  s.f_out = l.output.features;
  s.head_dim = s.f_out / l.heads;
  s.capacity = m_.sequence;
  s.cache_sequences = m_.batch;
  stages_.push_back(std::move(s));
}

// The skip: the input of an earlier stage, carried by it and every stage after it.
void ChainPlanner::add_residual(const LayerSpec& l) {
  no_rows_in(l);
  const std::string& skip = l.inputs[0] == prev_ ? l.inputs[1] : l.inputs[0];
  const auto it = std::find(stage_input_.begin(), stage_input_.end(), skip);
  if (it == stage_input_.end() || skip == prev_)
    throw sim::InputError(
        fmt::format("model '{}': layer '{}' (add): the pipelined run adds the previous layer and the input of an "
                    "earlier stage; '{}' is neither",
                    m_.name, l.name, skip));
  const auto j = static_cast<std::size_t>(it - stage_input_.begin());
  const std::uint64_t f = m_.shape_of(prev_).features;
  for (std::size_t k = j; k < stages_.size(); ++k) {
    PipelineStage& c = stages_[k];
    if (c.carry_out || (k > j && c.carry_in))
      throw sim::InputError(fmt::format(
          "model '{}': layer '{}' (add): residual connections that overlap are not covered yet", m_.name, l.name));
    c.carry_out = f;
    c.carry_from = k == j ? 0 : c.f_in;
    if (k > j) c.carry_in = f;
  }
  PipelineStage s;
  s.kind = StageKind::Add;
  s.name = l.name;
  s.skip_from = j;
  s.f_in = s.f_out = f;
  s.carry_in = f;
  stages_.push_back(std::move(s));
}

void ChainPlanner::no_rows_in(const LayerSpec& l) const {
  if (cut_ != PipelineCut::RowsOut)
    throw sim::InputError(fmt::format("model '{}': layer '{}' ({}) needs the rows-out cut in the pipeline", m_.name,
                                      l.name, to_string(l.kind)));
}

const LayerSpec* ChainPlanner::layer_named(const std::string& n) const {
  for (const auto& l : m_.layers)
    if (l.name == n) return &l;
  return nullptr;
}

// The attention layer that reads q with k and v, when k and v are linear layers of q's input
// (with q's bias setting) listed right after it.
const LayerSpec* ChainPlanner::qkv_of(const LayerSpec& q) const {
  for (const auto& a : m_.layers) {
    if (a.kind != LayerKind::Attention || a.inputs.size() != 3 || a.inputs[0] != q.name) continue;
    const LayerSpec *k = layer_named(a.inputs[1]), *v = layer_named(a.inputs[2]);
    const bool linear_of_q = k && v && k->kind == LayerKind::Linear && v->kind == LayerKind::Linear &&
                             k->inputs == q.inputs && v->inputs == q.inputs && k->tied_to.empty() &&
                             v->tied_to.empty() && k->bias == q.bias && v->bias == q.bias;
    const auto at = static_cast<std::size_t>(&q - m_.layers.data());
    if (linear_of_q && at + 2 < m_.layers.size() && &m_.layers[at + 1] == k && &m_.layers[at + 2] == v) return &a;
  }
  return nullptr;
}

bool ChainPlanner::reads_qkv_stage(const LayerSpec& l) const {
  if (stages_.empty() || l.inputs.size() != 3) return false;
  const PipelineStage& q = stages_.back();
  return q.kind == StageKind::Qkv && l.inputs[0] == q.name && l.inputs[1] == q.up && l.inputs[2] == q.v;
}

// A second linear layer of the last linear stage's input, of its shape: with SwiGLU of the two
// after them, the up projection of a gated stage.
bool ChainPlanner::is_up_of_last(const LayerSpec& l) const {
  if (l.kind != LayerKind::Linear || l.inputs.size() != 1 || !l.tied_to.empty() || stages_.empty()) return false;
  const PipelineStage& gate = stages_.back();
  return gate.kind == StageKind::Linear && l.inputs[0] == stage_input_.back() && prev_ == gate.name &&
         l.in_features == gate.f_in && l.features == gate.f_out;
}

// The estimated cycles per token of row sets with `rows` rows: per stage the cheaper form of a
// product over its inputs and outputs, and its outputs sent on.
std::uint64_t estimate(const PipelineProgram& p, std::uint64_t rows, std::uint64_t k, std::uint64_t vstart) {
  std::uint64_t sum = 0, most = 0;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const auto& s = p.stages[i];
    const std::uint64_t a = p.cut == PipelineCut::RowsIn ? ceil_div(s.f_in, rows) : s.f_in;
    const std::uint64_t c = p.cut == PipelineCut::RowsOut ? ceil_div(s.f_out, rows) : s.f_out;
    const std::uint64_t dot = p.cut == PipelineCut::RowsOut ? c * (a + vstart + 4) : ~std::uint64_t{0};
    const std::uint64_t cost = std::min(dot, a * (c + vstart + 2)) + (i + 1 < p.stages.size() ? s.f_out : 0);
    sum += cost;
    most = std::max(most, cost);
  }
  return sum + ((p.tokens + k - 1) / k - 1) * most;
}

}  // namespace

std::vector<PipelineStage> plan_stages(const ModelSpec& model, const compiler::Target& target, PipelineCut cut) {
  std::vector<PipelineStage> stages = ChainPlanner(model, cut).plan();
  if (stages.empty()) throw sim::InputError(fmt::format("model '{}' has no linear layer to pipeline", model.name));
  if (stages.size() > target.width())
    throw sim::InputError(
        fmt::format("model '{}': the pipelined run puts each of its {} stages on a column "
                    "of PEs; the wafer has {} columns (more stages than columns are not covered yet)",
                    model.name, stages.size(), target.width()));
  for (std::size_t i = 0; i < stages.size(); ++i) stages[i].x = static_cast<std::uint32_t>(i);
  return stages;
}

void plan_bands(PipelineProgram& p, std::uint32_t replicas) {
  const compiler::Target& target = p.target;
  const std::uint64_t vstart = target.wafer.pe.latency.vector_start.count() + target.wafer.pe.latency.fmac.count();
  auto rows_for = [&](std::uint64_t k) {
    std::uint64_t r = target.height() / k;
    for (const auto& s : p.stages) r = std::min(r, p.cut == PipelineCut::RowsIn ? s.f_in : s.f_out);
    return r;
  };
  // Every band needs a token in every phase; with attention, a sequence.
  std::uint64_t fewest = p.tokens;
  for (const auto& ph : p.phases) fewest = std::min<std::uint64_t>(fewest, ph.tokens.size());
  for (const auto& s : p.stages) p.by_sequence = p.by_sequence || s.kind == StageKind::Attention;
  if (p.by_sequence) fewest = std::min<std::uint64_t>(fewest, p.model.batch);
  // Without a given number, the replicas whose estimated run is shortest (fewest on a tie).
  std::uint64_t K = replicas;
  if (K == 0) {
    std::uint64_t best = 0;
    for (std::uint64_t k = 1; k <= std::min<std::uint64_t>(target.height(), fewest); ++k) {
      const std::uint64_t est = estimate(p, rows_for(k), k, vstart);
      if (K == 0 || est < best) {
        K = k;
        best = est;
      }
    }
  }
  if (K == 0 || K > target.height() || K > fewest)
    throw sim::InputError(fmt::format("{} pipeline replicas: the wafer has {} rows and the run {} {}{}", K,
                                      target.height(), fewest, p.by_sequence ? "sequences" : "tokens",
                                      p.phases.size() > 1 && !p.by_sequence ? " per phase" : ""));
  p.replicas = static_cast<std::uint32_t>(K);
  const auto rows = static_cast<std::uint32_t>(rows_for(K));
  for (auto& s : p.stages) {
    s.rows = rows;
    if (s.kind == StageKind::Attention) s.cache_sequences = ceil_div(p.model.batch, K);
    // Rows-out: whichever form issues fewer cycles per token on the busiest row (a synchronous
    // vector instruction costs its start and pipeline depth besides its elements, and each
    // has scalar steps).
    const std::uint64_t c = ceil_div(s.f_out, s.rows);
    if (p.cut == PipelineCut::RowsOut && is_linear(s.kind) && c * (s.f_in + vstart + 4) < s.f_in * (c + vstart + 2))
      s.form = LinearForm::Dot;
  }
}

}  // namespace wafersim::models::resident
