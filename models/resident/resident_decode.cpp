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

std::uint32_t allocate(SramArena& arena, const KernelContext& ctx, Tensor& t) {
  const std::uint64_t bytes = std::max<std::uint64_t>(8, (t.bytes + 7) / 8 * 8);
  auto a = bytes <= arena.capacity() ? arena.allocate(t.name, static_cast<std::uint32_t>(bytes), 32) : std::nullopt;
  if (!a) throw_sram_error(ctx, t.name, bytes);
  t.addr = *a;
  return *a;
}

void setup(CompiledModel& cm, const ModelSpec& model, const Target& target, Accumulate accumulate) {
  cm.target = target;
  cm.model = model;
  cm.options.placement = PlacementKind::Resident;
  cm.options.accumulate = accumulate;
  cm.options.training = false;
}

// Attention's tensors with each key/value group whole on one row, however many rows.
void heads_maps(CompiledModel& cm) {
  const std::uint32_t G = cm.layout.slices();
  const hw::DType dt = hw_dtype(cm.model.dtype);
  for (const auto& layer : cm.model.layers) {
    if (layer.kind != LayerKind::Attention) continue;
    if (!layer.causal) throw sim::InputError(fmt::format("layer '{}': decode steps need causal attention", layer.name));
    const std::uint32_t kv = layer.kv_heads ? layer.kv_heads : layer.heads;
    for (const std::string& name : {layer.inputs[0], layer.inputs[1], layer.inputs[2], layer.name}) {
      Tensor& t = cm.tensors.at(static_cast<std::uint32_t>(cm.tensor(name)));
      t.map = FeatureMap::heads(t.features, G, kv);
      t.bytes = static_cast<std::uint32_t>(t.map.max_count() * cm.layout.tokens_per_pe * hw::size_of(dt));
    }
  }
}

std::vector<Step> inference_steps(const Schedule& sched) {
  std::vector<Step> steps;
  for (const auto& s : sched.steps)
    if (s.kind != LayerKind::CrossEntropy) steps.push_back(s);
  return steps;
}

LayerProgram weights_program(const CompiledModel& cm, std::uint64_t bytes) {
  LayerProgram preload;
  preload.layer = "weights";
  preload.kind = LayerKind::Linear;
  preload.rows = cm.layout.slices();
  preload.columns = cm.layout.columns;
  preload.sram.max_bytes = bytes;
  return preload;
}

}  // namespace

std::vector<std::uint32_t> model_inputs(const CompiledModel& cm) {
  std::vector<std::uint32_t> ids;
  for (const auto& in : cm.model.inputs)
    if (in.kind != InputSpec::Kind::Labels) ids.push_back(static_cast<std::uint32_t>(cm.tensor(in.name)));
  return ids;
}

ResidentDecode compile_resident_decode(const ModelSpec& model, const Target& target, std::uint64_t prompt,
                                       std::uint64_t positions, std::uint64_t capacity, Accumulate accumulate,
                                       const ModelSpec* prompt_model) {
  if (model.sequence != 1) throw std::logic_error("compile_resident_decode: the model must have sequence 1");
  if (positions > capacity || prompt == 0 || prompt > positions)
    throw sim::InputError(
        fmt::format("{} prompt tokens and {} in all do not fit a KV cache of {} keys", prompt, positions, capacity));
  const bool parallel = prompt_model != nullptr;
  if (parallel) {
    if (prompt_model->sequence != prompt || prompt_model->batch != model.batch)
      throw std::logic_error("compile_resident_decode: the prompt model must be the model with sequence = prompt");
    for (const auto& l : model.layers)
      if (l.kind == LayerKind::Embedding && l.learned_positions)
        throw sim::InputError(
            fmt::format("layer '{}': a parallel prefill before decode steps needs a model without learned positions "
                        "(the decode steps embed one position per step)",
                        l.name));
  }
  ResidentDecode rd;
  rd.prompt = prompt;
  rd.positions = positions;
  rd.first_position = parallel ? prompt : 0;
  ResidentProgram& rp = rd.rp;
  CompiledModel& cm = rp.cm;
  setup(cm, model, target, accumulate);
  if (target.fabric.colors < ColorPlan::kFixed + 1)
    throw sim::InputError(fmt::format("the weight-resident run needs at least {} colors, the platform has {}",
                                      ColorPlan::kFixed + 1, target.fabric.colors));
  cm.layout =
      StreamingLayout::plan(target, model.batch, model.max_features(), target.fabric.colors - ColorPlan::kFixed);
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
  heads_maps(cm);
  const std::vector<Step> steps = inference_steps(sched);

  // The parallel prefill: the decode layout (one sample per column, the same rows, colors and
  // routes) with the prompt's tokens on each column, so that every key and value it leaves is
  // on the PE whose cache needs it.
  CompiledModel* pc = nullptr;
  std::vector<Step> psteps;
  if (parallel) {
    pc = &rd.prefill.emplace().cm;
    setup(*pc, *prompt_model, target, accumulate);
    pc->layout = cm.layout;
    pc->layout.tokens = model.batch * prompt;
    pc->layout.tokens_per_pe = static_cast<std::uint32_t>(prompt);
    pc->colors = cm.colors;
    pc->routes = cm.routes;
    pc->layout_reason = fmt::format(
        "the prompt in one prefill, one sample per column: {}; then one token per sample and step; linear "
        "weights and KV caches resident in SRAM",
        pc->layout.describe());
    Schedule ps = make_schedule(*pc);
    pc->host_tensors = ps.host_tensors;
    pc->tensors = ps.tensors;
    heads_maps(*pc);
    psteps = inference_steps(ps);
    if (psteps.size() != steps.size()) throw std::logic_error("compile_resident_decode: prefill and decode differ");
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (psteps[i].layer != steps[i].layer || psteps[i].kind != steps[i].kind)
        throw std::logic_error("compile_resident_decode: prefill and decode differ");
  }

  SramArena arena(target.sram_bytes());
  auto ctx_for = [&](const std::string& layer) {
    return KernelContext{target, cm.layout, cm.colors, cm.tensors, arena, true, accumulate, dt, layer, {}};
  };
  auto pctx_for = [&](const std::string& layer) {
    return KernelContext{target, pc->layout, pc->colors, pc->tensors, arena, true, accumulate, dt, layer, {}};
  };

  // Resident weights (the prefill's products and the decode's read the same), then the KV
  // caches, then every tensor.
  std::map<std::size_t, std::pair<MatmulArgs, ResidentWeights>> matmul, pmatmul;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    if (st.kind != LayerKind::Linear && st.kind != LayerKind::Gemv) continue;
    if (parallel) {
      auto [pa, w] = reserve_resident_matmul(*pc, psteps[i], arena, accumulate);
      SramArena scratch(target.sram_bytes());
      auto [a, wd] = reserve_resident_matmul(cm, st, scratch, accumulate);
      if (wd.bytes != w.bytes) throw std::logic_error("compile_resident_decode: prefill and decode weights differ");
      rd.prefill->weight_bytes += w.bytes;
      rp.weight_bytes += w.bytes;
      pmatmul[i] = {pa, w};
      matmul[i] = {a, w};
    } else {
      auto [a, w] = reserve_resident_matmul(cm, st, arena, accumulate);
      rp.weight_bytes += w.bytes;
      matmul[i] = {a, w};
    }
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

  if (parallel) {
    // The caches stay for the whole run; the prefill's tensors for the prefill, its keys and
    // values until the fills.
    const KernelContext ctx = ctx_for("tensors");
    for (const auto& [i, c] : caches) {
      allocate(arena, ctx, cm.tensors[c.first]);
      allocate(arena, ctx, cm.tensors[c.second]);
    }
    std::vector<bool> used(pc->tensors.size(), false);
    for (const auto& st : psteps) {
      for (auto t : st.reads) used[t] = true;
      for (auto t : st.writes) used[t] = true;
    }
    rd.prefill_inputs = model_inputs(*pc);
    for (auto t : rd.prefill_inputs) used[t] = true;
    const KernelContext pctx = pctx_for("tensors");
    for (std::uint32_t t = 0; t < pc->tensors.size(); ++t)
      if (used[t]) allocate(arena, pctx, pc->tensors[t]);
    pc->programs.push_back(weights_program(*pc, rd.prefill->weight_bytes));
    for (std::size_t i = 0; i < psteps.size(); ++i) {
      const Step& st = psteps[i];
      KernelContext c = pctx_for(st.layer);
      LayerProgram prog;
      if (auto it = pmatmul.find(i); it != pmatmul.end()) {
        prog = lower_resident_matmul(c, it->second.first, it->second.second);
        rd.prefill->matmuls.push_back({pc->programs.size(), it->second.first, it->second.second});
      } else if (st.kind == LayerKind::Attention) {
        // The streaming kernel on the caches' Heads maps (whole groups on rows, however many).
        const LayerSpec& layer = pc->model.layers[st.index];
        prog = lower_attention(c, attention_args(st, layer, layer.in_features, prompt));
      } else {
        prog = lower_step(c, *pc, st);
      }
      prog.reads = st.reads;
      prog.writes = st.writes;
      c.release_scratch();
      pc->programs.push_back(std::move(prog));
    }
    pc->sram_peak = arena.peak();
    std::vector<bool> keep(pc->tensors.size(), false);
    for (const auto& [i, c] : caches) {
      keep[static_cast<std::uint32_t>(psteps[i].in[1])] = true;
      keep[static_cast<std::uint32_t>(psteps[i].in[2])] = true;
    }
    for (std::uint32_t t = 0; t < pc->tensors.size(); ++t)
      if (used[t] && !keep[t]) arena.release(pc->tensors[t].addr);
    // The prefill's keys and values as the decode layout sees them (KvCacheFillArgs).
    for (const auto& [i, c] : caches) {
      const LayerSpec& layer = model.layers[steps[i].index];
      KvCacheFillStep f;
      f.args.layer = layer.name + ".kv_fill";
      f.args.kv_heads = layer.kv_heads ? layer.kv_heads : layer.heads;
      f.args.head_dim = layer.in_features;
      f.args.prompt = prompt;
      f.args.capacity = capacity;
      f.args.k_cache = c.first;
      f.args.v_cache = c.second;
      f.prefill_k = static_cast<std::uint32_t>(psteps[i].in[1]);
      f.prefill_v = static_cast<std::uint32_t>(psteps[i].in[2]);
      for (const std::uint32_t from : {f.prefill_k, f.prefill_v}) {
        const Tensor& src = pc->tensors[from];
        Tensor t;
        t.name = src.name + ".prompt";
        t.features = std::uint64_t{f.args.kv_heads} * f.args.head_dim * prompt;
        t.map = FeatureMap::heads(t.features, cm.layout.slices(), f.args.kv_heads);
        t.dtype = src.dtype;
        t.bytes = static_cast<std::uint32_t>(t.map.max_count() * hw::size_of(t.dtype));
        t.addr = src.addr;
        if (t.bytes != src.bytes) throw std::logic_error("compile_resident_decode: the prefill's keys differ in size");
        cm.tensors.push_back(t);
      }
      f.args.k = static_cast<std::uint32_t>(cm.tensors.size() - 2);
      f.args.v = f.args.k + 1;
      rd.fills.push_back(f);
    }
  }

  // Each position's own model inputs.
  const std::vector<std::uint32_t> inputs = model_inputs(cm);
  for (std::uint64_t p = rd.first_position; p < positions; ++p)
    for (auto id : inputs) {
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
    for (const auto& [i, c] : caches) used[c.first] = used[c.second] = !parallel;  // parallel: allocated above
    for (auto t : rd.inputs) used[t] = true;
    for (auto t : inputs) used[t] = false;                                   // replaced by the positions' own
    for (const auto& f : rd.fills) used[f.args.k] = used[f.args.v] = false;  // the prefill's
    for (std::uint32_t t = 0; t < cm.tensors.size(); ++t)
      if (used[t]) allocate(arena, ctx, cm.tensors[t]);
  }

  if (!parallel) cm.programs.push_back(weights_program(cm, rp.weight_bytes));
  for (auto& f : rd.fills) {
    KernelContext ctx = ctx_for(f.args.layer);
    f.program = cm.programs.size();
    cm.programs.push_back(lower_kv_cache_fill(ctx, f.args));
    ctx.release_scratch();
  }

  for (std::uint64_t p = rd.first_position; p < positions; ++p) {
    rd.position_start.push_back(cm.programs.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      Step st = steps[i];
      auto swap = [&](std::uint32_t& t) {
        for (std::size_t k = 0; k < inputs.size(); ++k)
          if (t == inputs[k]) t = rd.inputs[(p - rd.first_position) * inputs.size() + k];
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
        if (p == rd.first_position) rp.matmuls.push_back({cm.programs.size(), a, it->second.second});
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

}  // namespace wafersim::models::resident
