// The pipelined weight-resident run: a column of PEs per linear layer, outputs split over
// the rows; each token's input is broadcast up the column, each row accumulates its outputs
// in the reference's order, the rows pass their outputs south in feature order (a relay over
// two alternating colors) and the bottom row sends them east, where they are the next
// column's broadcast.

#include "models/resident/resident_pipeline.h"

#include <fmt/format.h>

#include <systemc>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "fabric/port.h"
#include "hw/numerics/softfloat.h"
#include "models/compiler/compiled_model.h"
#include "models/compiler/elementwise.h"
#include "models/compiler/kernels.h"
#include "models/compiler/program_builder.h"
#include "models/reference/attention.h"
#include "models/reference/embedding.h"
#include "models/reference/format.h"
#include "models/reference/norms.h"
#include "models/resident/resident_program.h"
#include "sim/errors.h"

namespace wafersim::models::resident {
using compiler::align8;
using compiler::ceil_div;
using compiler::VOperand;
using fabric::bit;
using fabric::Port;
using hw::DType;
using hw::isa::Op;
using V = VOperand;
namespace nm = hw::numerics;

namespace {

bool fusable(LayerKind k) { return k == LayerKind::Gelu || k == LayerKind::Silu || k == LayerKind::Relu; }

// The relay color row y of stage i sends on (two per stage, alternating stage by stage).
std::uint8_t relay_color(std::size_t stage, std::uint32_t y) {
  return static_cast<std::uint8_t>(2 * (stage % 2) + (y % 2));
}

class RouteWriter {
 public:
  explicit RouteWriter(fabric::RouteTable& t) : t_(t) {}
  void set(std::uint32_t x, std::uint32_t y, std::uint8_t color, std::uint8_t accept, std::uint8_t forward) {
    const std::uint32_t r = y * t_.width() + x;
    if (!t_.at(r, color).empty())
      throw std::logic_error(fmt::format("pipeline routes: color {} at ({}, {}) set twice", color, x, y));
    t_.set(r, color, fabric::RouteEntry{accept, forward});
  }

 private:
  fabric::RouteTable& t_;
};

PipeBits draw(std::mt19937_64& rng, std::uint64_t n, double scale, DType dt) {
  std::uniform_real_distribution<double> u(-scale, scale);
  PipeBits v(n);
  for (auto& x : v) x = nm::from_double(dt, u(rng));
  return v;
}

// SRAM of one PE of a stage (the same addresses on every row: sized for the largest chunk).
struct Frame {
  std::uint32_t w = 0, bias = 0, acc = 0, y = 0, fused = 0, temps = 0, x = 0, out = 0, stat = 0, save = 0;
  std::uint32_t w2 = 0, bias2 = 0, y2 = 0;          // a gated stage's up projection
  std::uint32_t wide = 0, beta = 0;                 // a LayerNorm stage's widened input and beta
  std::uint32_t kc = 0, vc = 0, sc = 0, table = 0;  // an attention stage's KV cache, scores, token table
  std::uint64_t groups = 0;                         // kv heads per sequence in the cache (the most any row needs)
  std::uint32_t end = 0;
};

// The kv heads [lo, hi) whose keys row y of an attention stage needs: those of the heads of
// its output features.
compiler::Span kv_groups(const PipelineStage& s, std::uint32_t y) {
  const compiler::Span o = compiler::split(s.f_out, s.rows, y);
  if (o.size() == 0) return {0, 0};
  const std::uint64_t group = s.heads / s.kv_heads;
  return {o.lo / s.head_dim / group, (o.hi - 1) / s.head_dim / group + 1};
}

Frame frame(PipelineCut cut, const PipelineStage& s, bool first, bool last, std::uint64_t tokens, std::uint32_t temps,
            DType dt) {
  const std::uint32_t esz = hw::size_of(dt);
  const std::uint64_t c = cut == PipelineCut::RowsOut ? ceil_div(s.f_out, s.rows) : s.f_out;
  const std::uint64_t k = cut == PipelineCut::RowsIn ? ceil_div(s.f_in, s.rows) : s.f_in;
  Frame f;
  std::uint32_t a = 0;
  auto take = [&](std::uint64_t bytes) {
    const std::uint32_t at = a;
    a += align8(std::max<std::uint64_t>(bytes, 8));
    return at;
  };
  f.w = take(s.norm || s.add || s.attention ? 0 : (s.embedding ? s.vocabulary : k) * c * esz);
  f.bias = take(c * 4);
  f.acc = take(c * 4);
  f.y = take(c * esz);
  f.fused = take(c * esz);
  f.temps = take(std::uint64_t{temps} * align8(c * esz));
  f.x = first ? take(tokens * s.f_in * (s.embedding ? (s.positions ? 8 : 4) : esz))
              : take(2 * std::uint64_t{align8((s.f_in + s.carry_in) * esz)});
  f.out = last ? take(tokens * c * esz) : 0;
  f.stat = s.norm ? take(4) : 0;
  f.save = s.norm ? take(16) : 0;
  if (s.embedding && s.positions) f.w2 = take(s.capacity * c * esz);
  if (s.layer_norm) {
    f.wide = take(s.f_in * 4);
    f.beta = take(c * 4);
  }
  if (s.attention) {
    for (std::uint32_t y = 0; y < s.rows; ++y) f.groups = std::max(f.groups, kv_groups(s, y).size());
    const std::uint64_t per = f.groups * s.head_dim * s.capacity;  // cache elements per sequence and tensor
    f.kc = take(s.cache_sequences * per * esz);
    f.vc = take(s.cache_sequences * per * 4);
    f.sc = take(s.capacity * 4);
    f.table = take(tokens * 16);
  }
  if (s.gated) {
    f.w2 = take(k * c * esz);
    f.bias2 = take(c * 4);
    f.y2 = take(c * esz);
  }
  f.end = a;
  return f;
}

}  // namespace

compiler::Span row_inputs(PipelineCut cut, const PipelineStage& s, std::uint32_t y) {
  return cut == PipelineCut::RowsIn ? compiler::split(s.f_in, s.rows, y) : compiler::Span{0, s.f_in};
}
compiler::Span row_outputs(PipelineCut cut, const PipelineStage& s, std::uint32_t y) {
  return cut == PipelineCut::RowsOut ? compiler::split(s.f_out, s.rows, y) : compiler::Span{0, s.f_out};
}
bool row_rounds(PipelineCut cut, const PipelineStage& s, std::uint32_t y) {
  return cut == PipelineCut::RowsOut || y + 1 == s.rows;
}

const char* to_string(PipelineCut c) { return c == PipelineCut::RowsIn ? "rows-in" : "rows-out"; }

std::uint64_t PipelineProgram::interval_cycles() const {
  std::uint64_t most = 0;
  for (const auto& s : stages) most = std::max(most, s.interval_bound);
  return most;
}

std::vector<std::uint64_t> PipelineProgram::band_tokens(std::size_t phase, std::uint32_t band) const {
  std::vector<std::uint64_t> list;
  const auto& t = phases.at(phase).tokens;
  for (std::size_t j = 0; j < t.size(); ++j)
    if ((by_sequence ? t[j] / positions : j) % replicas == band) list.push_back(t[j]);
  return list;
}

std::uint64_t PipelineProgram::bound_cycles() const {
  std::uint64_t sum = 0, bound = 0;
  for (const auto& s : stages) sum += s.latency_bound;
  for (std::size_t ph = 0; ph < phases.size(); ++ph) {
    std::uint64_t t = 0;
    for (std::uint32_t band = 0; band < replicas; ++band) t = std::max<std::uint64_t>(t, band_tokens(ph, band).size());
    bound += sum + (t ? t - 1 : 0) * interval_cycles();
  }
  return bound;
}

PipelineProgram compile_pipeline(const ModelSpec& model, const compiler::Target& target, std::uint64_t seed,
                                 PipelineCut cut, std::uint32_t replicas, std::uint64_t decode) {
  PipelineProgram p;
  p.cut = cut;
  p.model = model;
  p.target = target;
  p.tokens = model.batch * model.sequence;
  p.positions = model.sequence;
  if (decode >= model.sequence)
    throw sim::InputError(
        fmt::format("{} decode steps leave no prompt in the model's sequence of {} (the KV cache's length)", decode,
                    model.sequence));
  p.prompt = model.sequence - decode;
  p.phases.resize(1 + decode);
  for (std::uint64_t m = 0; m < p.tokens; ++m) {
    const std::uint64_t pos = m % p.positions;
    p.phases[pos < p.prompt ? 0 : 1 + pos - p.prompt].tokens.push_back(m);
  }
  const DType dt = compiler::hw_dtype(model.dtype);
  const std::uint32_t esz = hw::size_of(dt);

  // The chain: linear layers, each optionally followed by a unary elementwise layer.
  const InputSpec* input = nullptr;
  for (const auto& in : model.inputs)
    if (in.kind == InputSpec::Kind::Activations) {
      if (input)
        throw sim::InputError(
            fmt::format("model '{}': the pipelined run takes one activation input, the model has "
                        "'{}' and '{}'",
                        model.name, input->name, in.name));
      input = &in;
    }
  // Without one: token ids, if the first layer is an embedding of them (without learned positions).
  const LayerSpec* embed = nullptr;
  if (!input) {
    for (const auto& in : model.inputs)
      if (in.kind == InputSpec::Kind::Tokens && !model.layers.empty() &&
          model.layers.front().kind == LayerKind::Embedding && model.layers.front().inputs.size() == 1 &&
          model.layers.front().inputs[0] == in.name)
        input = &in;
    if (input) embed = &model.layers.front();
  }
  if (!input)
    throw sim::InputError(
        fmt::format("model '{}': the pipelined run needs an activation input, or token ids that its first layer "
                    "embeds (other inputs are not covered yet)",
                    model.name));
  std::string prev = input->name;
  std::vector<std::string> stage_input;  // the tensor each stage reads
  if (embed) {
    if (cut != PipelineCut::RowsOut)
      throw sim::InputError(fmt::format("model '{}': layer '{}' (embedding) needs the rows-out cut in the pipeline",
                                        model.name, embed->name));
    PipelineStage s;
    s.name = embed->name;
    s.embedding = true;
    s.vocabulary = embed->vocabulary;
    s.positions = embed->learned_positions;
    s.capacity = model.sequence;
    s.f_in = 1;
    s.f_out = embed->features;
    p.stages.push_back(std::move(s));
    stage_input.push_back(prev);
    prev = embed->name;
  }
  auto no_rows_in = [&](const LayerSpec& l) {
    if (cut != PipelineCut::RowsOut)
      throw sim::InputError(fmt::format("model '{}': layer '{}' ({}) needs the rows-out cut in the pipeline",
                                        model.name, l.name, to_string(l.kind)));
  };
  // Attention layers whose q, k and v are linear layers of one input, listed together.
  auto layer_named = [&](const std::string& n) -> const LayerSpec* {
    for (const auto& l : model.layers)
      if (l.name == n) return &l;
    return nullptr;
  };
  auto qkv_of = [&](const LayerSpec& q) -> const LayerSpec* {
    for (const auto& a : model.layers) {
      if (a.kind != LayerKind::Attention || a.inputs.size() != 3 || a.inputs[0] != q.name) continue;
      const LayerSpec *k = layer_named(a.inputs[1]), *v = layer_named(a.inputs[2]);
      const bool linear_of_q = k && v && k->kind == LayerKind::Linear && v->kind == LayerKind::Linear &&
                               k->inputs == q.inputs && v->inputs == q.inputs && k->tied_to.empty() &&
                               v->tied_to.empty() && k->bias == q.bias && v->bias == q.bias;
      const auto at = static_cast<std::size_t>(&q - model.layers.data());
      if (linear_of_q && at + 2 < model.layers.size() && &model.layers[at + 1] == k && &model.layers[at + 2] == v)
        return &a;
    }
    return nullptr;
  };
  std::vector<std::string> folded;  // k and v layers of a qkv stage
  for (const auto& l : model.layers) {
    if (l.kind == LayerKind::CrossEntropy || &l == embed) continue;
    if (std::find(folded.begin(), folded.end(), l.name) != folded.end()) continue;
    const bool chained = l.inputs.size() == 1 && l.inputs[0] == prev;
    const std::size_t before = p.stages.size();
    const LayerSpec* attn = l.kind == LayerKind::Linear && chained && l.tied_to.empty() ? qkv_of(l) : nullptr;
    if (attn) {
      // q, k and v of one input: one stage, their outputs side by side.
      no_rows_in(l);
      PipelineStage s;
      s.name = l.name;
      s.qkv = true;
      s.up = attn->inputs[1];
      s.v = attn->inputs[2];
      s.f_in = l.in_features;
      s.f_out = l.features + 2 * layer_named(s.up)->features;
      s.bias = l.bias;
      folded = {s.up, s.v};
      p.stages.push_back(std::move(s));
    } else if (l.kind == LayerKind::Attention && !p.stages.empty() && p.stages.back().qkv && l.inputs.size() == 3 &&
               l.inputs[0] == p.stages.back().name && l.inputs[1] == p.stages.back().up &&
               l.inputs[2] == p.stages.back().v) {
      no_rows_in(l);
      if (!l.causal)
        throw sim::InputError(fmt::format(
            "model '{}': layer '{}' (attention): the pipelined run covers causal attention only (a token cannot "
            "see keys that have not reached the stage yet)",
            model.name, l.name));
      PipelineStage s;
      s.name = l.name;
      s.attention = true;
      s.heads = l.heads;
      s.kv_heads = l.kv_heads;
      s.f_in = p.stages.back().f_out;
      s.f_out = l.output.features;
      s.head_dim = s.f_out / l.heads;
      s.capacity = model.sequence;
      s.cache_sequences = model.batch;
      p.stages.push_back(std::move(s));
    } else if (l.kind == LayerKind::Add && l.inputs.size() == 2 && (l.inputs[0] == prev || l.inputs[1] == prev) &&
               !p.stages.empty()) {
      // The skip: the input of an earlier stage, carried by it and every stage after it.
      no_rows_in(l);
      const std::string& skip = l.inputs[0] == prev ? l.inputs[1] : l.inputs[0];
      const auto it = std::find(stage_input.begin(), stage_input.end(), skip);
      if (it == stage_input.end() || skip == prev)
        throw sim::InputError(fmt::format(
            "model '{}': layer '{}' (add): the pipelined run adds the previous layer and the input of an earlier "
            "stage; '{}' is neither",
            model.name, l.name, skip));
      const auto j = static_cast<std::size_t>(it - stage_input.begin());
      const std::uint64_t f = model.shape_of(prev).features;
      for (std::size_t k = j; k < p.stages.size(); ++k) {
        PipelineStage& c = p.stages[k];
        if (c.carry_out || (k > j && c.carry_in))
          throw sim::InputError(
              fmt::format("model '{}': layer '{}' (add): residual connections that overlap are not covered yet",
                          model.name, l.name));
        c.carry_out = f;
        c.carry_from = k == j ? 0 : c.f_in;
        if (k > j) c.carry_in = f;
      }
      PipelineStage s;
      s.name = l.name;
      s.add = true;
      s.skip_from = j;
      s.f_in = s.f_out = f;
      s.carry_in = f;
      p.stages.push_back(std::move(s));
    } else if (l.kind == LayerKind::Linear && l.inputs.size() == 1 && l.tied_to.empty() && !p.stages.empty() &&
               l.inputs[0] == stage_input.back() && prev == p.stages.back().name && !p.stages.back().norm &&
               !p.stages.back().add && !p.stages.back().gated && l.in_features == p.stages.back().f_in &&
               l.features == p.stages.back().f_out) {
      // The second linear layer of one input: a gated stage, if SwiGLU of the two follows.
      no_rows_in(l);
      p.stages.back().gated = true;
      p.stages.back().up = l.name;
      p.stages.back().bias2 = l.bias;
      prev = l.name;
      continue;
    } else if (l.kind == LayerKind::Swiglu && !p.stages.empty() && p.stages.back().gated &&
               p.stages.back().fused.empty() && l.inputs.size() == 2 && l.inputs[0] == p.stages.back().name &&
               l.inputs[1] == p.stages.back().up) {
      p.stages.back().fused = l.name;
      p.stages.back().fused_kind = l.kind;
    } else if ((l.kind == LayerKind::RmsNorm || l.kind == LayerKind::LayerNorm) && chained) {
      no_rows_in(l);
      PipelineStage s;
      s.name = l.name;
      s.norm = true;
      s.layer_norm = l.kind == LayerKind::LayerNorm;
      s.epsilon = l.epsilon;
      s.f_in = s.f_out = model.shape_of(prev).features;
      p.stages.push_back(std::move(s));
    } else if (l.kind == LayerKind::Linear && chained && l.tied_to.empty()) {
      PipelineStage s;
      s.name = l.name;
      s.f_in = l.in_features;
      s.f_out = l.features;
      s.bias = l.bias;
      p.stages.push_back(std::move(s));
    } else if (fusable(l.kind) && chained && !p.stages.empty() && !p.stages.back().norm && !p.stages.back().add &&
               !p.stages.back().gated && p.stages.back().fused.empty()) {
      p.stages.back().fused = l.name;
      p.stages.back().fused_kind = l.kind;
    } else {
      throw sim::InputError(fmt::format(
          "model '{}': the pipelined run covers chains of linear layers, each optionally followed by one gelu, silu "
          "or relu layer (or two of one input with swiglu after them, or q, k, v with causal attention after them), "
          "rmsnorm and layernorm layers and residual adds; layer '{}' ({}{}) is not covered yet",
          model.name, l.name, to_string(l.kind), chained ? "" : ", not fed by the previous layer"));
    }
    if (p.stages.size() > before) stage_input.push_back(prev);
    prev = l.name;
  }
  for (const auto& st : p.stages)
    if (st.gated && st.fused.empty())
      throw sim::InputError(fmt::format(
          "model '{}': layers '{}' and '{}' read one input; the pipelined run covers that only with swiglu of the "
          "two after them",
          model.name, st.name, st.up));
  if (p.stages.empty()) throw sim::InputError(fmt::format("model '{}' has no linear layer to pipeline", model.name));
  if (p.stages.size() > target.width())
    throw sim::InputError(
        fmt::format("model '{}': the pipelined run puts each of its {} stages on a column "
                    "of PEs; the wafer has {} columns (more stages than columns are not covered yet)",
                    model.name, p.stages.size(), target.width()));
  if (target.fabric.colors < 4)
    throw sim::InputError(fmt::format("the pipelined run needs 4 colors, the platform has {}", target.fabric.colors));
  const std::uint64_t vstart = target.wafer.pe.latency.vector_start.count() + target.wafer.pe.latency.fmac.count();
  auto rows_for = [&](std::uint64_t k) {
    std::uint64_t r = target.height() / k;
    for (const auto& s : p.stages) r = std::min(r, cut == PipelineCut::RowsIn ? s.f_in : s.f_out);
    return r;
  };
  // Every band needs a token in every phase.
  std::uint64_t fewest = p.tokens;
  for (const auto& ph : p.phases) fewest = std::min<std::uint64_t>(fewest, ph.tokens.size());
  // With attention, every band needs a sequence.
  for (const auto& s : p.stages) p.by_sequence = p.by_sequence || s.attention;
  if (p.by_sequence) fewest = std::min<std::uint64_t>(fewest, model.batch);
  // Without a given number, the replicas whose estimated run is shortest (fewest on a tie).
  std::uint64_t K = replicas;
  if (K == 0) {
    std::uint64_t best = 0;
    for (std::uint64_t k = 1; k <= std::min<std::uint64_t>(target.height(), fewest); ++k) {
      const std::uint64_t r = rows_for(k);
      std::uint64_t sum = 0, most = 0;
      for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const auto& s = p.stages[i];
        const std::uint64_t a = cut == PipelineCut::RowsIn ? ceil_div(s.f_in, r) : s.f_in;
        const std::uint64_t c = cut == PipelineCut::RowsOut ? ceil_div(s.f_out, r) : s.f_out;
        const std::uint64_t dot = cut == PipelineCut::RowsOut ? c * (a + vstart + 4) : ~std::uint64_t{0};
        const std::uint64_t cost = std::min(dot, a * (c + vstart + 2)) + (i + 1 < p.stages.size() ? s.f_out : 0);
        sum += cost;
        most = std::max(most, cost);
      }
      const std::uint64_t est = sum + ((p.tokens + k - 1) / k - 1) * most;
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
  const std::uint64_t rows = rows_for(K);
  std::uint64_t T = 0;  // the most tokens of a band in a phase
  for (std::size_t ph = 0; ph < p.phases.size(); ++ph)
    for (std::uint32_t band = 0; band < p.replicas; ++band)
      T = std::max<std::uint64_t>(T, p.band_tokens(ph, band).size());
  for (auto& s : p.stages)
    if (s.attention) s.cache_sequences = ceil_div(model.batch, K);

  // Values: inputs and parameters drawn from the seed (uniform, scaled by 1/sqrt(fan-in)).
  std::mt19937_64 rng(seed);
  if (p.stages.front().embedding) {
    std::uniform_int_distribution<std::uint64_t> id(0, p.stages.front().vocabulary - 1);
    p.input.resize(p.tokens);
    for (auto& t : p.input) t = static_cast<std::uint32_t>(id(rng));
  } else {
    p.input = draw(rng, p.tokens * p.stages.front().f_in, 1.0, dt);
  }
  for (auto& s : p.stages) {
    s.rows = static_cast<std::uint32_t>(rows);
    if (s.norm) {
      s.weight = draw(rng, s.f_in, 1.0, dt);                     // gamma
      if (s.layer_norm) s.weight2 = draw(rng, s.f_in, 1.0, dt);  // beta
      continue;
    }
    if (s.add || s.attention) continue;
    if (s.embedding) {
      s.weight = draw(rng, s.vocabulary * s.f_out, 1.0, dt);                  // the table
      if (s.positions) s.weight2 = draw(rng, s.capacity * s.f_out, 1.0, dt);  // the positions
      continue;
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(s.f_in));
    s.weight = draw(rng, s.f_in * s.f_out, scale, dt);
    if (s.bias) s.bias_values = draw(rng, s.f_out, scale, dt);
    if (s.gated) {
      s.weight2 = draw(rng, s.f_in * s.f_out, scale, dt);
      if (s.bias2) s.bias_values2 = draw(rng, s.f_out, scale, dt);
    }
  }

  p.routes = std::make_shared<fabric::RouteTable>(target.width(), target.height(), target.fabric.colors);
  RouteWriter routes(*p.routes);
  p.colors = p.stages.size() > 1 ? 4 : 2;
  const std::uint32_t lanes = std::max(target.lanes(dt), target.lanes(DType::F32));
  const std::size_t n = p.stages.size();
  for (std::size_t i = 0; i < n; ++i) {
    PipelineStage& s = p.stages[i];
    s.x = static_cast<std::uint32_t>(i);
    const bool first = i == 0, last = i + 1 == n;
    const compiler::EwProgram ew =
        s.fused.empty() ? compiler::EwProgram{} : compiler::elementwise_forward(s.fused_kind);
    if (ew.consts.size() > 8) throw std::logic_error("pipeline: an elementwise program with more than 8 constants");
    const Frame fr = frame(cut, s, first, last, T, s.fused.empty() ? 0 : ew.temporaries(), dt);
    if (cut == PipelineCut::RowsOut) {
      // Cycles per token of each form for the busiest row: a synchronous vector instruction
      // costs its start and pipeline depth besides its elements, and each has scalar steps.
      const std::uint64_t c = ceil_div(s.f_out, s.rows);
      s.dot =
          !s.norm && !s.add && !s.attention && !s.embedding && c * (s.f_in + vstart + 4) < s.f_in * (c + vstart + 2);
    }
    if (s.attention) {
      s.cache_bytes = fr.sc - fr.kc;
      if (fr.end > target.sram_bytes())
        throw sim::InputError(fmt::format(
            "layer '{}' does not fit the SRAM: PE ({}, 0) of the pipelined run needs {} B ({} B of them the KV "
            "cache: {} sequences x {} positions x {} kv heads x {} dimensions, keys {} B and values 4 B an element), "
            "but has {} B: short by {} B. Use a shorter sequence, a smaller batch or a platform with more SRAM per PE",
            s.name, s.x, fr.end, s.cache_bytes, s.cache_sequences, s.capacity, fr.groups, s.head_dim, esz,
            target.sram_bytes(), fr.end - target.sram_bytes()));
    }
    if (fr.end > target.sram_bytes())
      throw sim::InputError(fmt::format(
          "layer '{}': the pipelined run keeps {} weights per PE on {} rows and needs {} B of SRAM per PE, the PE "
          "has {} B",
          s.name, (fr.bias - fr.w) / esz, s.rows, fr.end, target.sram_bytes()));
    p.sram_max = std::max<std::uint64_t>(p.sram_max, fr.end);
    if (last) p.out_addr = fr.out;

    for (std::size_t ph = 0; ph < p.phases.size(); ++ph)
      for (std::uint32_t band = 0; band < p.replicas; ++band)
        for (std::uint32_t y = 0; y < s.rows; ++y) {
          const std::uint32_t gy = band * s.rows + y;  // the row on the wafer
          // The band's tokens of this phase; the parameters are placed with the first phase's code.
          const std::vector<std::uint64_t> band_list = p.band_tokens(ph, band);
          const std::uint64_t band_tokens = band_list.size();
          const bool place = ph == 0;
          const compiler::Span o = row_outputs(cut, s, y), a = row_inputs(cut, s, y);
          const auto c = static_cast<std::uint32_t>(o.size());
          const bool rows_in = cut == PipelineCut::RowsIn;
          const bool round = row_rounds(cut, s, y);
          // Rows-out: outputs of the rows above to relay; rows-in: fp32 sums from the row above.
          const auto above = static_cast<std::uint32_t>(rows_in ? 0 : o.lo);
          const bool sums_in = rows_in && y > 0, sums_out = rows_in && y + 1 < s.rows;
          // Routes: this row's relay (ramp -> south, the bottom row east to the next column);
          // the relay from the row above (north -> ramp); the previous column's broadcast.
          if (place && (!last || y + 1 < s.rows))
            routes.set(s.x, gy, relay_color(i, y), bit(Port::Ramp), bit(y + 1 < s.rows ? Port::South : Port::East));
          if (place && (!last || rows_in) && y > 0)
            routes.set(s.x, gy, relay_color(i, y - 1), bit(Port::North), bit(Port::Ramp));
          if (place && !first) {
            const std::uint8_t cb = relay_color(i - 1, p.stages[i - 1].rows - 1);
            const std::uint8_t fwd = static_cast<std::uint8_t>(bit(Port::Ramp) | (y > 0 ? bit(Port::North) : 0));
            routes.set(s.x, gy, cb, y + 1 == s.rows ? bit(Port::West) : bit(Port::South), fwd);
          }

          // Bounds of this row per token: the FMACs (and their issue) after the input arrived;
          // with the input and the relay through its ramp.
          // (A norm row: the sum of squares, rstd's scalar steps, four vector instructions; a
          // LayerNorm row also widens its input, sums it and subtracts the mean.)
          // (An attention row, at least: the token's entry, the appends, per head the first
          // key's score, the softmax and its features' sums.)
          const compiler::Span groups = s.attention ? kv_groups(s, y) : compiler::Span{0, 0};
          const std::uint64_t row_heads = s.attention && c ? (o.hi - 1) / s.head_dim - o.lo / s.head_dim + 1 : 0;
          const std::uint64_t issue = s.attention    ? 7 + 12 * groups.size() + 23 * row_heads + 4 * c
                                      : s.embedding  ? 5
                                      : s.add        ? 6
                                      : s.layer_norm ? 18
                                      : s.norm       ? 12
                                      : s.dot        ? 5 * std::uint64_t{c}
                                                     : 3 * a.size();
          const std::uint64_t steps = s.attention    ? 0
                                      : s.embedding  ? ceil_div(c, lanes)
                                      : s.add        ? ceil_div(c, lanes)
                                      : s.layer_norm ? 4 * ceil_div(s.f_in, lanes) + 4 * ceil_div(c, lanes)
                                      : s.norm       ? ceil_div(s.f_in, lanes) + 4 * ceil_div(c, lanes)
                                      : s.dot        ? c * ceil_div(a.size(), lanes)
                                                     : (a.size() + 1) * ceil_div(c, lanes);
          const std::uint64_t lat = std::max(issue, steps) * (s.gated ? 2 : 1);
          const bool carries = !last && y + 1 == s.rows && s.carry_out;  // the bottom row sends the skip on
          const std::uint64_t ramp_in = (first ? 0 : s.f_in + s.carry_in) + (last ? 0 : above) + (sums_in ? c : 0);
          const std::uint64_t ramp_out = ((last && round) ? 0 : above + c) + (carries ? s.carry_out : 0);
          s.latency_bound = std::max(s.latency_bound, lat);
          s.interval_bound = std::max({s.interval_bound, lat, ramp_in, ramp_out});

          compiler::ProgramBuilder b(fmt::format("{}.pipeline.r{}", s.name, gy));
          // Weights (row f: W[f][o.lo .. o.hi)) and the bias widened to fp32: placed with the code.
          std::vector<std::uint8_t> wb;
          if (s.norm) {
            std::vector<std::uint8_t> gb;  // gamma of the row's features, widened to fp32
            for (std::uint64_t k = o.lo; k < o.hi; ++k)
              append_bits(gb, dt == DType::F32 ? s.weight[k] : nm::convert(DType::F32, dt, s.weight[k]), 4);
            if (place) b.data(fr.bias, std::move(gb));
            if (s.layer_norm) {
              std::vector<std::uint8_t> bb;  // beta, the same way
              for (std::uint64_t k = o.lo; k < o.hi; ++k)
                append_bits(bb, dt == DType::F32 ? s.weight2[k] : nm::convert(DType::F32, dt, s.weight2[k]), 4);
              if (place) b.data(fr.beta, std::move(bb));
            }
          } else if (s.embedding) {  // the row's features of every row of the table
            for (std::uint64_t v = 0; v < s.vocabulary; ++v)
              for (std::uint64_t k = o.lo; k < o.hi; ++k) append_bits(wb, s.weight[v * s.f_out + k], esz);
            if (s.positions) {
              std::vector<std::uint8_t> pb;
              for (std::uint64_t i2 = 0; i2 < s.capacity; ++i2)
                for (std::uint64_t k = o.lo; k < o.hi; ++k) append_bits(pb, s.weight2[i2 * s.f_out + k], esz);
              if (place) b.data(fr.w2, std::move(pb));
            }
          } else if (s.attention) {
            // The token table: per token its sequence's key and value blocks, position and keys visible.
            std::vector<std::uint8_t> tb;
            const std::uint64_t per = fr.groups * s.head_dim * s.capacity;
            for (const std::uint64_t m : band_list) {
              const std::uint64_t seq = m / p.positions / K, pos = m % p.positions;  // seq: the band's
              append_bits(tb, static_cast<std::uint32_t>(fr.kc + seq * per * esz), 4);
              append_bits(tb, static_cast<std::uint32_t>(fr.vc + seq * per * 4), 4);
              append_bits(tb, static_cast<std::uint32_t>(pos), 4);
              append_bits(tb, static_cast<std::uint32_t>(pos + 1), 4);
            }
            b.data(fr.table, std::move(tb));
          } else if (s.add) {
            // No parameters.
          } else if (s.dot) {
            for (std::uint64_t k = o.lo; k < o.hi; ++k)
              for (std::uint64_t f = a.lo; f < a.hi; ++f) append_bits(wb, s.weight[f * s.f_out + k], esz);
          } else {
            for (std::uint64_t f = a.lo; f < a.hi; ++f)
              for (std::uint64_t k = o.lo; k < o.hi; ++k) append_bits(wb, s.weight[f * s.f_out + k], esz);
          }
          if (place && !wb.empty()) b.data(fr.w, std::move(wb));
          if (s.bias && !sums_in) {
            std::vector<std::uint8_t> bb;
            for (std::uint64_t k = o.lo; k < o.hi; ++k)
              append_bits(bb, dt == DType::F32 ? s.bias_values[k] : nm::convert(DType::F32, dt, s.bias_values[k]), 4);
            if (place) b.data(fr.bias, std::move(bb));
          }
          if (s.gated) {  // up's block and bias, in the gate's order
            std::vector<std::uint8_t> w2;
            if (s.dot) {
              for (std::uint64_t k = o.lo; k < o.hi; ++k)
                for (std::uint64_t f = a.lo; f < a.hi; ++f) append_bits(w2, s.weight2[f * s.f_out + k], esz);
            } else {
              for (std::uint64_t f = a.lo; f < a.hi; ++f)
                for (std::uint64_t k = o.lo; k < o.hi; ++k) append_bits(w2, s.weight2[f * s.f_out + k], esz);
            }
            if (place) b.data(fr.w2, std::move(w2));
            if (s.bias2) {
              std::vector<std::uint8_t> bb;
              for (std::uint64_t k = o.lo; k < o.hi; ++k)
                append_bits(bb, dt == DType::F32 ? s.bias_values2[k] : nm::convert(DType::F32, dt, s.bias_values2[k]),
                            4);
              if (place) b.data(fr.bias2, std::move(bb));
            }
          }
          if (first) {
            std::vector<std::uint8_t> xb;
            for (const std::uint64_t m : band_list)
              for (std::uint64_t f = 0; f < s.f_in; ++f) {
                append_bits(xb, p.input[m * s.f_in + f], s.embedding ? 4 : esz);
                if (s.positions) append_bits(xb, static_cast<std::uint32_t>(m % p.positions), 4);
              }
            b.data(fr.x, std::move(xb));
          }
          const unsigned acc = b.mem("acc", DType::F32, fr.acc, c);
          const unsigned biasd = b.mem("bias", DType::F32, fr.bias, c);
          const unsigned wvec = b.mem("w", dt, fr.w, c);
          const unsigned wcol = b.mem("wcol", dt, fr.w, static_cast<std::uint32_t>(s.f_in));
          const unsigned xvec = b.mem("xvec", dt, fr.x, static_cast<std::uint32_t>(s.f_in));
          const unsigned yd = b.mem("y", dt, fr.y, c);
          const unsigned yd2 = s.gated ? b.mem("y2", dt, fr.y2, c) : 0;
          std::vector<unsigned> ewd;
          if (!s.fused.empty()) {
            ewd.push_back(yd);
            if (s.gated) ewd.push_back(yd2);
            ewd.push_back(b.mem("fused", dt, fr.fused, c));
            for (std::uint32_t k = 0; k < ew.temporaries(); ++k)
              ewd.push_back(b.mem(ew.buffers[ew.inputs + ew.outputs + k], dt, fr.temps + k * align8(c * esz), c));
          }
          const unsigned result = s.fused.empty() ? yd : ewd[ew.inputs];
          const auto f_recv = static_cast<std::uint32_t>(s.f_in + s.carry_in);
          const unsigned xbuf = b.mem("x", dt, fr.x, f_recv);
          const unsigned xin = first ? 0 : b.fabin("x_in", dt, relay_color(i - 1, p.stages[i - 1].rows - 1), f_recv);
          const unsigned cout =
              carries ? b.fabout("carry_out", dt, relay_color(i, y), static_cast<std::uint32_t>(s.carry_out)) : 0;
          const unsigned cmem = carries ? b.mem("carry", dt, fr.x, static_cast<std::uint32_t>(s.carry_out)) : 0;
          const unsigned outm = last && round ? b.mem("out", dt, fr.out, c) : 0;
          const unsigned sin = sums_in ? b.fabin("sums_in", DType::F32, relay_color(i, y - 1), c) : 0;
          const unsigned sout = sums_out ? b.fabout("sums_out", DType::F32, relay_color(i, y), c) : 0;
          const unsigned rin = !last && above ? b.fabin("relay_in", dt, relay_color(i, y - 1), above) : 0;
          const unsigned rfwd = !last && above ? b.fabout("relay_fwd", dt, relay_color(i, y), above) : 0;
          const unsigned rout = last || !round ? 0 : b.fabout("relay_out", dt, relay_color(i, y), c);

          // One linear pass over the input: W at w_addr, the bias (fp32) at bias_addr, the rounded
          // outputs at y_addr (DSD ydsd).
          auto linear_pass = [&](std::uint32_t w_addr, std::uint32_t bias_addr, bool has_bias, std::uint32_t y_addr,
                                 unsigned ydsd) {
            if (s.dot) {
              // Per output k: r2 = bias (or +0), then fma(x[f], w[f][k], r2) over the inputs in
              // order (fdot), rounded and stored.
              b.dsdr(Op::DsdBase, xvec, 6);
              b.dsd(Op::DsdBase, wcol, w_addr);
              for (std::uint32_t k = 0; k < c; ++k) {
                if (has_bias)
                  b.ld(2, bias_addr + 4 * k, 4);
                else
                  b.mov(2, 0);
                b.reduce(Op::FDot, DType::F32, dt, 2, V::d(xvec), V::d(wcol));
                b.dsd(Op::DsdAdd, wcol, static_cast<std::int64_t>(s.f_in));
                if (dt != DType::F32) b.fcvt_scalar(dt, DType::F32, 2, 2);
                b.st(y_addr + k * esz, 2, esz);
              }
              return;
            }
            b.mov(3, 0);
            if (bias_addr != fr.bias) b.dsd(Op::DsdBase, biasd, bias_addr);
            b.vop(Op::FMov, DType::F32, DType::F32, V::d(acc), sums_in ? V::d(sin) : has_bias ? V::d(biasd) : V::r(3));
            // Unrolled over the inputs: the input element as the scalar, the weight row as the vector.
            b.dsd(Op::DsdBase, wvec, w_addr);
            for (std::uint64_t f = a.lo; f < a.hi; ++f) {
              b.ld(1, static_cast<std::uint32_t>(f * esz), esz, 6);
              b.vop(Op::FMac, DType::F32, dt, V::d(acc), V::d(acc), V::d(wvec), V::r(1));
              b.dsd(Op::DsdAdd, wvec, c);
            }
            if (sums_out) b.vop(Op::FMov, DType::F32, DType::F32, V::d(sout), V::d(acc));
            if (round && dt == DType::F32) b.vop(Op::FMov, DType::F32, DType::F32, V::d(ydsd), V::d(acc));
            if (round && dt != DType::F32) b.vop(Op::FCvt, dt, DType::F32, V::d(ydsd), V::d(acc));
            if (bias_addr != fr.bias) b.dsd(Op::DsdBase, biasd, fr.bias);
          };
          // Task `token` runs once per token. Its input was received (or lies in SRAM) at r10;
          // before it works on it, it starts receiving the next token's input into the other
          // buffer (asynchronously; its completion activates `token` again, which then runs as
          // soon as this one has returned).
          const std::uint32_t x0 = fr.x, x1 = fr.x + align8(std::uint64_t{f_recv} * esz);
          const std::uint8_t main = b.task("main");
          const std::uint8_t token = b.declare_task("token");
          const compiler::VectorOptions next{true, hw::isa::OnDone::Activate, token};
          b.entry(main);
          b.mov(15, static_cast<std::int64_t>(band_tokens));
          b.mov(13, fr.out);
          b.mov(10, x0);
          if (first) {
            b.activate(token);
          } else {
            b.dsdr(Op::DsdBase, xbuf, 10);
            b.vop(Op::FMov, dt, dt, V::d(xbuf), V::d(xin), {}, {}, next);
          }
          b.ret();
          b.start(token);
          b.movr(6, 10);
          const unsigned no_more = b.label();
          b.branch(hw::isa::Cond::Eq, 15, 1, no_more);
          if (first) {
            b.alu(Op::Add, 10, 10, static_cast<std::int64_t>(s.f_in * (s.embedding ? (s.positions ? 8 : 4) : esz)));
            b.activate(token);
          } else {
            b.mov(9, std::int64_t{x0} + x1);
            b.alur(Op::Sub, 10, 9, 10);
            b.dsdr(Op::DsdBase, xbuf, 10);
            b.vop(Op::FMov, dt, dt, V::d(xbuf), V::d(xin), {}, {}, next);
          }
          b.bind(no_more);
          if (s.add) {
            // y[k] = x[k] + skip[k] over the row's features, in the model's format.
            const unsigned xa = b.mem("xa", dt, fr.x, c), xb = b.mem("xb", dt, fr.x, c);
            b.alu(Op::Add, 7, 6, static_cast<std::int64_t>(o.lo * esz));
            b.dsdr(Op::DsdBase, xa, 7);
            b.alu(Op::Add, 8, 6, static_cast<std::int64_t>((s.f_in + o.lo) * esz));
            b.dsdr(Op::DsdBase, xb, 8);
            b.vop(Op::FAdd, dt, dt, V::d(yd), V::d(xa), V::d(xb));
          } else if (s.embedding) {
            // The token's row of the table (its id at r6): a copy of the row's features.
            const unsigned row = b.mem("row", dt, fr.w, c);
            b.ld(2, 0, 4, 6);
            b.alu(Op::Mul, 2, 2, std::int64_t{c} * esz);
            b.alu(Op::Add, 2, 2, fr.w);
            b.dsdr(Op::DsdBase, row, 2);
            if (s.positions) {  // + the row of its position, one add in the model's format
              const unsigned prow = b.mem("prow", dt, fr.w2, c);
              b.ld(3, 4, 4, 6);
              b.alu(Op::Mul, 3, 3, std::int64_t{c} * esz);
              b.alu(Op::Add, 3, 3, fr.w2);
              b.dsdr(Op::DsdBase, prow, 3);
              b.vop(Op::FAdd, dt, dt, V::d(yd), V::d(row), V::d(prow));
            } else {
              b.vop(Op::FMov, dt, dt, V::d(yd), V::d(row));
            }
          } else if (s.attention) {
            // r11: the token's table entry; r12, r14: its sequence's key and value blocks; r2: its
            // position; r4: the keys it sees.
            const std::uint64_t hd = s.head_dim, C = s.capacity, group = s.heads / s.kv_heads;
            const auto hdn = static_cast<std::uint32_t>(hd);
            b.mov(11, static_cast<std::int64_t>(band_tokens));
            b.alur(Op::Sub, 11, 11, 15);
            b.alu(Op::Mul, 11, 11, 16);
            b.alu(Op::Add, 11, 11, fr.table);
            b.ld(12, 0, 4, 11);
            b.ld(14, 4, 4, 11);
            b.ld(2, 8, 4, 11);
            b.ld(4, 12, 4, 11);
            // Append the token's keys (as they are) and values (widened) at its position.
            const unsigned kdst = b.mem("kdst", dt, fr.kc, hdn, static_cast<std::int32_t>(C));
            const unsigned vdst = b.mem("vdst", DType::F32, fr.vc, hdn, static_cast<std::int32_t>(C));
            const unsigned ksrc = b.mem("ksrc", dt, fr.x, hdn), vsrc = b.mem("vsrc", dt, fr.x, hdn);
            for (std::uint64_t g = groups.lo; g < groups.hi; ++g) {
              const std::uint64_t lg = g - groups.lo;
              b.alu(Op::Mul, 7, 2, esz);
              b.alur(Op::Add, 7, 7, 12);
              b.alu(Op::Add, 7, 7, static_cast<std::int64_t>(lg * hd * C * esz));
              b.dsdr(Op::DsdBase, kdst, 7);
              b.alu(Op::Add, 8, 6, static_cast<std::int64_t>((s.heads * hd + g * hd) * esz));
              b.dsdr(Op::DsdBase, ksrc, 8);
              b.vop(Op::FMov, dt, dt, V::d(kdst), V::d(ksrc));
              b.alu(Op::Mul, 7, 2, 4);
              b.alur(Op::Add, 7, 7, 14);
              b.alu(Op::Add, 7, 7, static_cast<std::int64_t>(lg * hd * C * 4));
              b.dsdr(Op::DsdBase, vdst, 7);
              b.alu(Op::Add, 8, 6, static_cast<std::int64_t>((s.heads * hd + s.kv_heads * hd + g * hd) * esz));
              b.dsdr(Op::DsdBase, vsrc, 8);
              if (dt == DType::F32)
                b.vop(Op::FMov, DType::F32, DType::F32, V::d(vdst), V::d(vsrc));
              else
                b.vop(Op::FCvt, DType::F32, dt, V::d(vdst), V::d(vsrc));
            }
            const unsigned qv = b.mem("q", dt, fr.x, hdn);
            const unsigned kv = b.mem("k", dt, fr.kc, hdn, static_cast<std::int32_t>(C));
            const unsigned scd = b.mem("scores", DType::F32, fr.sc, 1);
            const unsigned vv = b.mem("v", DType::F32, fr.vc, 1);
            b.dsdr(Op::DsdLen, scd, 4);
            b.dsdr(Op::DsdLen, vv, 4);
            b.movf(3, DType::F32, nm::from_double(DType::F32, 1.0 / std::sqrt(static_cast<double>(hd))));
            for (std::uint64_t h = c ? o.lo / hd : 1, hl = c ? (o.hi - 1) / hd : 0; h <= hl; ++h) {
              const std::uint64_t lg = h / group - groups.lo;
              // s_j = (q . k_j) x scale over the sequence's cached keys, in key order.
              b.alu(Op::Add, 8, 6, static_cast<std::int64_t>(h * hd * esz));
              b.dsdr(Op::DsdBase, qv, 8);
              b.alu(Op::Add, 7, 12, static_cast<std::int64_t>(lg * hd * C * esz));
              b.dsdr(Op::DsdBase, kv, 7);
              b.mov(7, fr.sc);
              b.movr(1, 4);
              const unsigned keys = b.label();
              b.bind(keys);
              b.mov(5, 0);
              b.reduce(Op::FDot, DType::F32, dt, 5, V::d(qv), V::d(kv));
              b.fscalar(Op::FMul, DType::F32, 5, 5, 3);
              b.st(0, 5, 4, 7);
              b.alu(Op::Add, 7, 7, 4);
              b.dsd(Op::DsdAdd, kv, 1);
              b.alu(Op::Sub, 1, 1, 1);
              b.branch(hw::isa::Cond::Ne, 1, 0, keys);
              // p = exp(s - max) x 1/(the sum in key order).
              b.movf(8, DType::F32, 0xFF800000u);
              b.reduce(Op::FRMax, DType::F32, DType::F32, 8, V::d(scd));
              b.vop(Op::FSub, DType::F32, DType::F32, V::d(scd), V::d(scd), V::r(8));
              b.vop(Op::FExp, DType::F32, DType::F32, V::d(scd), V::d(scd));
              b.mov(9, 0);
              b.reduce(Op::FSum, DType::F32, DType::F32, 9, V::d(scd));
              b.fscalar(Op::FRecip, DType::F32, 9, 9);
              b.vop(Op::FMul, DType::F32, DType::F32, V::d(scd), V::d(scd), V::r(9));
              // The row's features of this head: R(chain over keys of p_j v_j[d]).
              for (std::uint64_t f = std::max(o.lo, h * hd); f < std::min(o.hi, (h + 1) * hd); ++f) {
                b.alu(Op::Add, 7, 14, static_cast<std::int64_t>((lg * hd * C + (f - h * hd) * C) * 4));
                b.dsdr(Op::DsdBase, vv, 7);
                b.mov(9, 0);
                b.reduce(Op::FDot, DType::F32, DType::F32, 9, V::d(scd), V::d(vv));
                if (dt != DType::F32) b.fcvt_scalar(dt, DType::F32, 9, 9);
                b.st(static_cast<std::uint32_t>(fr.y + (f - o.lo) * esz), 9, esz);
              }
            }
          } else if (s.layer_norm) {
            // In models/reference's order: sum = chain of widen(x[f]) from +0, mean = sum x 1/d;
            // c[f] = widen(x[f]) - mean; sq = fma chain of c[f]^2 from +0; rstd as for RMSNorm
            // (r6, r10, r13, r15 saved); then the row's features R(fma(c[k] x rstd, gamma[k], beta[k])).
            const unsigned wide = b.mem("wide", DType::F32, fr.wide, static_cast<std::uint32_t>(s.f_in));
            b.dsdr(Op::DsdBase, xvec, 6);
            if (dt == DType::F32)
              b.vop(Op::FMov, DType::F32, DType::F32, V::d(wide), V::d(xvec));
            else
              b.vop(Op::FCvt, DType::F32, dt, V::d(wide), V::d(xvec));
            b.mov(2, 0);
            b.reduce(Op::FSum, DType::F32, DType::F32, 2, V::d(wide));
            b.movf(3, DType::F32, nm::from_double(DType::F32, 1.0 / static_cast<double>(s.f_in)));
            b.fscalar(Op::FMul, DType::F32, 2, 2, 3);
            b.vop(Op::FSub, DType::F32, DType::F32, V::d(wide), V::d(wide), V::r(2));
            b.mov(2, 0);
            b.reduce(Op::FDot, DType::F32, DType::F32, 2, V::d(wide), V::d(wide));
            b.st(fr.stat, 2, 4);
            const unsigned saved[] = {6, 10, 13, 15};
            for (unsigned k = 0; k < 4; ++k) b.st(fr.save + 4 * k, saved[k], 4);
            compiler::emit_rstd_in_place(b, fr.stat, 1, nm::from_double(DType::F32, 1.0 / static_cast<double>(s.f_in)),
                                         nm::from_double(DType::F32, s.epsilon));
            for (unsigned k = 0; k < 4; ++k) b.ld(saved[k], fr.save + 4 * k, 4);
            const unsigned cs = b.mem("cslice", DType::F32, static_cast<std::uint32_t>(fr.wide + o.lo * 4), c);
            const unsigned betad = b.mem("beta", DType::F32, fr.beta, c);
            b.ld(5, fr.stat, 4);
            b.vop(Op::FMul, DType::F32, DType::F32, V::d(acc), V::d(cs), V::r(5));
            b.vop(Op::FMac, DType::F32, DType::F32, V::d(acc), V::d(betad), V::d(acc), V::d(biasd));
          } else if (s.norm) {
            // sum of x[f]^2 over every input in order from +0 (fdot), rstd = rsqrt(sum x 1/d +
            // eps) in the reference's steps (which use r4 to r15: r6, r10, r13 and r15 saved),
            // then the row's features: R(widen(x[k]) x rstd x gamma[k]).
            b.dsdr(Op::DsdBase, xvec, 6);
            b.mov(2, 0);
            b.reduce(Op::FDot, DType::F32, dt, 2, V::d(xvec), V::d(xvec));
            b.st(fr.stat, 2, 4);
            const unsigned saved[] = {6, 10, 13, 15};
            for (unsigned k = 0; k < 4; ++k) b.st(fr.save + 4 * k, saved[k], 4);
            compiler::emit_rstd_in_place(b, fr.stat, 1, nm::from_double(DType::F32, 1.0 / static_cast<double>(s.f_in)),
                                         nm::from_double(DType::F32, s.epsilon));
            for (unsigned k = 0; k < 4; ++k) b.ld(saved[k], fr.save + 4 * k, 4);
            const unsigned xs = b.mem("xslice", dt, fr.x, c);
            b.alu(Op::Add, 7, 6, static_cast<std::int64_t>(o.lo * esz));
            b.dsdr(Op::DsdBase, xs, 7);
            b.vop(Op::FCvt, DType::F32, dt, V::d(acc), V::d(xs));
            b.ld(5, fr.stat, 4);
            b.vop(Op::FMul, DType::F32, DType::F32, V::d(acc), V::d(acc), V::r(5));
            b.vop(Op::FMul, DType::F32, DType::F32, V::d(acc), V::d(acc), V::d(biasd));
          } else {
            linear_pass(fr.w, fr.bias, s.bias, fr.y, yd);
            if (s.gated) linear_pass(fr.w2, fr.bias2, s.bias2, fr.y2, yd2);
          }
          if (s.norm && dt == DType::F32) b.vop(Op::FMov, DType::F32, DType::F32, V::d(yd), V::d(acc));
          if (s.norm && dt != DType::F32) b.vop(Op::FCvt, dt, DType::F32, V::d(yd), V::d(acc));
          if (round && !s.fused.empty()) compiler::emit_ew_ops(b, dt, ew, ewd);
          if (round && last) {
            b.dsdr(Op::DsdBase, outm, 13);
            b.vop(Op::FMov, dt, dt, V::d(outm), V::d(result));
            b.alu(Op::Add, 13, 13, std::int64_t{c} * esz);
          } else if (round) {
            if (above) b.vop(Op::FMov, dt, dt, V::d(rfwd), V::d(rin));
            b.vop(Op::FMov, dt, dt, V::d(rout), V::d(result));
          }
          if (carries) {
            b.alu(Op::Add, 7, 6, static_cast<std::int64_t>(s.carry_from * esz));
            b.dsdr(Op::DsdBase, cmem, 7);
            b.vop(Op::FMov, dt, dt, V::d(cout), V::d(cmem));
          }
          b.alu(Op::Sub, 15, 15, 1);
          b.ret();
          hw::isa::Placement pl;
          pl.x0 = pl.x1 = static_cast<std::uint16_t>(s.x);
          pl.y0 = pl.y1 = static_cast<std::uint16_t>(gy);
          pl.program = b.finish();
          p.phases[ph].code.push_back(std::move(pl));
        }
  }
  return p;
}

PipeBits expect_pipeline(const PipelineProgram& p) {
  const DType dt = compiler::hw_dtype(p.model.dtype);
  auto widen = [&](std::uint32_t v) { return dt == DType::F32 ? v : nm::convert(DType::F32, dt, v); };
  PipeBits x = p.input;
  std::vector<PipeBits> inputs;  // each stage's input
  for (const auto& s : p.stages) {
    inputs.push_back(x);
    PipeBits y(p.tokens * s.f_out);
    // The stage's output from a models/reference result.
    auto take = [&](const models::reference::Tensor& r) {
      for (std::uint64_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::uint32_t>(r.bits(i));
      x = std::move(y);
    };
    if (s.add) {
      const compiler::EwProgram ew = compiler::elementwise_forward(LayerKind::Add);
      PipeBits skip = inputs.at(s.skip_from);
      std::vector<std::vector<std::uint32_t>*> ptrs{&x, &skip, &y};
      compiler::run_elementwise(ew, dt, ptrs);
      x = std::move(y);
      continue;
    }
    if (s.embedding) {
      // models/reference embedding_forward of the ids (a copy of the table's rows).
      namespace ref = models::reference;
      ref::TokenIds ids;
      ids.shape = {p.model.batch, p.model.sequence, 0};
      ids.ids = x;
      ref::Tensor table(ref::format_of(p.model.dtype), {1, s.vocabulary, s.f_out});
      for (std::uint64_t i = 0; i < s.weight.size(); ++i) table.set_bits(i, s.weight[i]);
      ref::Tensor positions(ref::format_of(p.model.dtype), {1, s.capacity, s.f_out});
      for (std::uint64_t i = 0; i < s.weight2.size(); ++i) positions.set_bits(i, s.weight2[i]);
      const ref::Tensor r = ref::embedding_forward(ids, table, s.positions ? &positions : nullptr);
      take(r);
      continue;
    }
    if (s.attention) {
      // models/reference attention over each sequence's tokens (token m: sequence m / S,
      // position m % S), q, k and v cut from the qkv stage's outputs.
      namespace ref = models::reference;
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
      const ref::Tensor r = ref::attention_forward(q, k, v, {s.heads, s.kv_heads, true});
      take(r);
      continue;
    }
    if (s.norm) {
      namespace ref = models::reference;
      const ref::Format f = ref::format_of(p.model.dtype);
      ref::Tensor xt(f, {p.tokens, 1, s.f_in}), g(f, ref::vector_shape(s.f_in)), be(f, ref::vector_shape(s.f_in));
      for (std::uint64_t i = 0; i < x.size(); ++i) xt.set_bits(i, x[i]);
      for (std::uint64_t i = 0; i < s.f_in; ++i) g.set_bits(i, s.weight[i]);
      if (s.layer_norm)
        for (std::uint64_t i = 0; i < s.f_in; ++i) be.set_bits(i, s.weight2[i]);
      const ref::Tensor r =
          s.layer_norm ? ref::layernorm_forward(xt, g, be, s.epsilon) : ref::rmsnorm_forward(xt, g, s.epsilon);
      take(r);
      continue;
    }
    auto linear = [&](const PipeBits& w, bool has_bias, const PipeBits& bias) {
      PipeBits out(p.tokens * s.f_out);
      for (std::uint64_t m = 0; m < p.tokens; ++m)
        for (std::uint64_t o = 0; o < s.f_out; ++o) {
          std::uint32_t acc = has_bias ? widen(bias[o]) : 0;
          for (std::uint64_t f = 0; f < s.f_in; ++f)
            acc = nm::fma(DType::F32, widen(x[m * s.f_in + f]), widen(w[f * s.f_out + o]), acc);
          out[m * s.f_out + o] = dt == DType::F32 ? acc : nm::convert(dt, DType::F32, acc);
        }
      return out;
    };
    y = linear(s.weight, s.bias, s.bias_values);
    if (!s.fused.empty()) {
      const compiler::EwProgram ew = compiler::elementwise_forward(s.fused_kind);
      std::vector<PipeBits> bufs(ew.buffers.size(), PipeBits(y.size()));
      bufs[0] = y;
      if (s.gated) bufs[1] = linear(s.weight2, s.bias2, s.bias_values2);
      std::vector<std::vector<std::uint32_t>*> ptrs;
      for (auto& v : bufs) ptrs.push_back(&v);
      compiler::run_elementwise(ew, dt, ptrs);
      y = bufs[ew.inputs];
    }
    x = std::move(y);
  }
  return x;
}

}  // namespace wafersim::models::resident
