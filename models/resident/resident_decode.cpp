#include "models/resident/resident_decode.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "hw/numerics/softfloat.h"
#include "models/compiler/routes.h"
#include "models/compiler/schedule.h"
#include "models/reference/attention.h"
#include "sim/errors.h"

namespace wafersim::models::resident {
using namespace compiler;

namespace {

std::uint64_t max_features(const ModelSpec& m) {
  std::uint64_t f = 1;
  for (const auto& in : m.inputs) f = std::max(f, in.features);
  for (const auto& l : m.layers) f = std::max(f, l.output.features);
  return f;
}

std::uint32_t allocate(SramArena& arena, const KernelContext& ctx, Tensor& t) {
  const std::uint64_t bytes = std::max<std::uint64_t>(8, (t.bytes + 7) / 8 * 8);
  auto a = bytes <= arena.capacity() ? arena.allocate(t.name, static_cast<std::uint32_t>(bytes), 32) : std::nullopt;
  if (!a) throw_sram_error(ctx, t.name, bytes);
  t.addr = *a;
  return *a;
}

}  // namespace

ResidentDecode compile_resident_decode(const ModelSpec& model, const Target& target, std::uint64_t prompt,
                                       std::uint64_t positions, std::uint64_t capacity, Accumulate accumulate) {
  if (model.sequence != 1) throw std::logic_error("compile_resident_decode: the model must have sequence 1");
  if (positions > capacity || prompt == 0 || prompt > positions)
    throw sim::InputError(
        fmt::format("{} prompt tokens and {} in all do not fit a KV cache of {} keys", prompt, positions, capacity));
  ResidentDecode rd;
  rd.prompt = prompt;
  rd.positions = positions;
  ResidentProgram& rp = rd.rp;
  CompiledModel& cm = rp.cm;
  cm.target = target;
  cm.model = model;
  cm.options.placement = PlacementKind::Resident;
  cm.options.accumulate = accumulate;
  cm.options.training = false;
  if (target.fabric.colors < ColorPlan::kFixed + 1)
    throw sim::InputError(fmt::format("the weight-resident run needs at least {} colors, the platform has {}",
                                      ColorPlan::kFixed + 1, target.fabric.colors));
  cm.layout = StreamingLayout::plan(target, model.batch, max_features(model), target.fabric.colors - ColorPlan::kFixed);
  if (cm.layout.tokens_per_pe != 1)
    throw sim::InputError(
        fmt::format("a batch of {} does not fit one sample per column of the {} columns", model.batch, target.width()));
  cm.colors = ColorPlan::make(cm.layout.rows_per_band_used, false);
  cm.layout_reason = fmt::format("one token per sample and step: {}; linear weights and KV caches resident in SRAM",
                                 cm.layout.describe());
  cm.routes = build_routes(target, cm.layout, cm.colors);
  Schedule sched = make_schedule(cm);
  cm.host_tensors = sched.host_tensors;
  cm.tensors = sched.tensors;
  const hw::DType dt = hw_dtype(model.dtype);
  const std::uint32_t G = cm.layout.slices();
  // Attention's tensors with each key/value group whole on one row, however many rows.
  for (const auto& layer : model.layers) {
    if (layer.kind != LayerKind::Attention) continue;
    if (!layer.causal) throw sim::InputError(fmt::format("layer '{}': decode steps need causal attention", layer.name));
    const std::uint32_t kv = layer.kv_heads ? layer.kv_heads : layer.heads;
    for (const std::string& name : {layer.inputs[0], layer.inputs[1], layer.inputs[2], layer.name}) {
      Tensor& t = cm.tensors.at(static_cast<std::uint32_t>(cm.tensor(name)));
      t.map = FeatureMap::heads(t.features, G, kv);
      t.bytes = static_cast<std::uint32_t>(t.map.max_count() * hw::size_of(dt));
    }
  }
  std::vector<Step> steps;
  for (const auto& s : sched.steps)
    if (s.kind != LayerKind::CrossEntropy) steps.push_back(s);

  SramArena arena(target.sram_bytes());
  auto ctx_for = [&](const std::string& layer) {
    return KernelContext{target, cm.layout, cm.colors, cm.tensors, arena, true, accumulate, dt, layer, {}};
  };

  // Resident weights, then the KV caches, then every tensor (all live for the whole run).
  std::map<std::size_t, std::pair<MatmulArgs, ResidentWeights>> matmul;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    if (st.kind != LayerKind::Linear && st.kind != LayerKind::Gemv) continue;
    auto [a, w] = reserve_resident_matmul(cm, st, arena, accumulate);
    rp.weight_bytes += w.bytes;
    matmul[i] = {a, w};
  }
  std::map<std::size_t, std::pair<std::uint32_t, std::uint32_t>> caches;  // step -> (k cache, v cache)
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != LayerKind::Attention) continue;
    const LayerSpec& layer = model.layers[steps[i].index];
    const std::uint32_t kv = layer.kv_heads ? layer.kv_heads : layer.heads;
    cm.tensors.push_back(kv_cache_tensor(layer.name + ".k_cache", cm.layout, kv, layer.in_features, capacity, dt));
    cm.tensors.push_back(
        kv_cache_tensor(layer.name + ".v_cache", cm.layout, kv, layer.in_features, capacity, hw::DType::F32));
    const auto kc = static_cast<std::uint32_t>(cm.tensors.size() - 2);
    caches[i] = {kc, kc + 1};
  }
  // Each position's own model inputs.
  std::map<std::uint32_t, std::uint32_t> input_of;  // model input tensor -> index among inputs
  std::vector<std::uint32_t> model_inputs;
  for (const auto& in : model.inputs)
    if (in.kind != InputSpec::Kind::Labels) model_inputs.push_back(static_cast<std::uint32_t>(cm.tensor(in.name)));
  for (std::uint64_t p = 0; p < positions; ++p)
    for (auto id : model_inputs) {
      Tensor t = cm.tensors.at(id);
      t.name = fmt::format("{}@{}", t.name, p);
      cm.tensors.push_back(t);
      rd.inputs.push_back(static_cast<std::uint32_t>(cm.tensors.size() - 1));
    }
  {
    const KernelContext ctx = ctx_for("tensors");
    std::vector<bool> used(cm.tensors.size(), false);
    for (const auto& st : steps) {
      for (auto t : st.reads) used[t] = true;
      for (auto t : st.writes) used[t] = true;
    }
    for (const auto& [i, c] : caches) used[c.first] = used[c.second] = true;
    for (auto t : rd.inputs) used[t] = true;
    for (auto t : model_inputs) used[t] = false;  // replaced by the positions' own
    for (std::uint32_t t = 0; t < cm.tensors.size(); ++t)
      if (used[t]) allocate(arena, ctx, cm.tensors[t]);
  }

  LayerProgram preload;
  preload.layer = "weights";
  preload.kind = LayerKind::Linear;
  preload.rows = G;
  preload.columns = cm.layout.columns;
  preload.sram.max_bytes = rp.weight_bytes;
  cm.programs.push_back(std::move(preload));

  for (std::uint64_t p = 0; p < positions; ++p) {
    rd.position_start.push_back(cm.programs.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      Step st = steps[i];
      auto swap = [&](std::uint32_t& t) {
        for (std::size_t k = 0; k < model_inputs.size(); ++k)
          if (t == model_inputs[k]) t = rd.inputs[p * model_inputs.size() + k];
      };
      for (auto& t : st.reads) swap(t);
      for (auto& in : st.in)
        if (in >= 0) {
          auto u = static_cast<std::uint32_t>(in);
          swap(u);
          in = static_cast<int>(u);
        }
      KernelContext ctx = ctx_for(st.layer);
      LayerProgram prog;
      if (st.kind == LayerKind::Attention) {
        const LayerSpec& layer = model.layers[st.index];
        DecodeAttentionArgs a;
        a.layer = fmt::format("{}@{}", st.layer, p);
        a.q = static_cast<std::uint32_t>(st.in[0]);
        a.k = static_cast<std::uint32_t>(st.in[1]);
        a.v = static_cast<std::uint32_t>(st.in[2]);
        a.out = static_cast<std::uint32_t>(st.out);
        a.k_cache = caches.at(i).first;
        a.v_cache = caches.at(i).second;
        a.heads = layer.heads;
        a.kv_heads = layer.kv_heads ? layer.kv_heads : layer.heads;
        a.head_dim = layer.in_features;
        a.capacity = capacity;
        a.position = p;
        prog = lower_decode_attention(ctx, a);
        rd.attention.push_back({cm.programs.size(), a});
      } else if (auto it = matmul.find(i); it != matmul.end()) {
        MatmulArgs a = it->second.first;
        a.in = static_cast<std::uint32_t>(st.in[0]);
        prog = lower_resident_matmul(ctx, a, it->second.second);
        if (p == 0) rp.matmuls.push_back({cm.programs.size(), a, it->second.second});
        prog.reads = st.reads;
        prog.writes = st.writes;
      } else {
        prog = lower_step(ctx, cm, st);
        prog.reads = st.reads;
        prog.writes = st.writes;
      }
      ctx.release_scratch();
      cm.programs.push_back(std::move(prog));
    }
  }
  cm.sram_peak = arena.peak();
  return rd;
}

void add_position_inputs(const ResidentDecode& rd, runtime::HostData& data, std::uint64_t seed) {
  const CompiledModel& cm = rd.rp.cm;
  data.preload.clear();  // the model's own inputs are replaced by the positions'
  runtime::Random rng(seed ^ 0x5eedc0de0001ull);
  std::uint64_t vocab = 2;
  for (const auto& l : cm.model.layers)
    vocab = std::max<std::uint64_t>(vocab, l.kind == LayerKind::Embedding ? l.vocabulary : 0);
  for (auto id : rd.inputs) {
    const Tensor& t = cm.tensors.at(id);
    runtime::Bits v;
    if (t.per_token()) {
      v.resize(cm.layout.tokens);
      for (auto& e : v) e = static_cast<std::uint32_t>(rng.below(vocab));
    } else {
      v.resize(cm.layout.tokens * t.features);
      for (auto& e : v) e = hw::numerics::from_double(t.dtype, 2 * rng.uniform() - 1);
    }
    data.preload.emplace_back(id, std::move(v));
  }
}

runtime::Check check_decode_attention(runtime::Executor& exec, const ResidentDecode& rd,
                                      const DecodeAttentionStep& step) {
  namespace ref = models::reference;
  const CompiledModel& cm = rd.rp.cm;
  const DecodeAttentionArgs& a = step.args;
  const std::uint64_t B = cm.layout.tokens, H = a.heads, KV = a.kv_heads, hd = a.head_dim, S = a.capacity;
  const std::uint64_t n = a.position + 1;
  const ref::Format f = ref::format_of(cm.model.dtype);
  runtime::Check c;
  c.what = a.layer + " (output and KV cache)";
  c.reference = "models/reference attention_forward over the cached keys";
  const runtime::Bits q = exec.read(a.q), k = exec.read(a.k), v = exec.read(a.v), out = exec.read(a.out);
  const runtime::Bits kc = exec.read(a.k_cache), vc = exec.read(a.v_cache);
  ref::Tensor rq(f, {B, n, H * hd}), rk(f, {B, n, KV * hd}), rv(f, {B, n, KV * hd});
  auto mismatch = [&](const std::string& what) {
    if (c.first_mismatch.empty()) c.first_mismatch = what;
    ++c.mismatches;
  };
  const hw::DType dt = hw_dtype(cm.model.dtype);
  for (std::uint64_t b = 0; b < B; ++b) {
    for (std::uint64_t e = 0; e < H * hd; ++e) rq.set_bits(rq.at(b * n + a.position, e), q[b * H * hd + e]);
    for (std::uint64_t g = 0; g < KV; ++g)
      for (std::uint64_t d = 0; d < hd; ++d) {
        const std::uint64_t row = (b * KV + g) * hd * S + d * S, e = g * hd + d;
        ++c.compared;
        if (kc[row + a.position] != k[b * KV * hd + e] ||
            vc[row + a.position] !=
                hw::numerics::from_double(hw::DType::F32, hw::numerics::to_double(dt, v[b * KV * hd + e])))
          mismatch(fmt::format("cache of sample {}, feature {}, key {}", b, e, a.position));
        for (std::uint64_t j = 0; j < n; ++j) {
          rk.set_bits(rk.at(b * n + j, e), kc[row + j]);
          rv.set_bits(rv.at(b * n + j, e),
                      hw::numerics::from_double(dt, hw::numerics::to_double(hw::DType::F32, vc[row + j])));
        }
      }
  }
  const ref::Tensor want =
      ref::attention_forward(rq, rk, rv, {static_cast<std::uint32_t>(H), static_cast<std::uint32_t>(KV), true});
  for (std::uint64_t b = 0; b < B; ++b)
    for (std::uint64_t e = 0; e < H * hd; ++e) {
      ++c.compared;
      if (out[b * H * hd + e] != static_cast<std::uint32_t>(want.bits(want.at(b * n + a.position, e))))
        mismatch(fmt::format("output of sample {}, feature {}", b, e));
    }
  return c;
}

}  // namespace wafersim::models::resident
