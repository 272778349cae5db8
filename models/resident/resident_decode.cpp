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

std::vector<std::uint32_t> model_inputs(const CompiledModel& cm) {
  std::vector<std::uint32_t> ids;
  for (const auto& in : cm.model.inputs)
    if (in.kind != InputSpec::Kind::Labels) ids.push_back(static_cast<std::uint32_t>(cm.tensor(in.name)));
  return ids;
}

}  // namespace

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

void add_position_inputs(const ResidentDecode& rd, runtime::HostData& data, std::uint64_t seed,
                         runtime::HostData* prefill_data) {
  const CompiledModel& cm = rd.rp.cm;
  if (rd.prefill && !prefill_data)
    throw std::logic_error("add_position_inputs: a parallel prefill needs its own host data");
  data.preload.clear();  // the model's own inputs are replaced by the positions'
  runtime::Random rng(seed ^ 0x5eedc0de0001ull);
  std::uint64_t vocab = 2;
  for (const auto& l : cm.model.layers)
    vocab = std::max<std::uint64_t>(vocab, l.kind == LayerKind::Embedding ? l.vocabulary : 0);
  const std::vector<std::uint32_t> inputs = model_inputs(cm);
  const std::uint64_t B = cm.layout.tokens, P = rd.prompt;
  if (rd.prefill) {
    prefill_data->preload.clear();
    for (auto id : rd.prefill_inputs) {
      const Tensor& t = rd.prefill->cm.tensors.at(id);
      prefill_data->preload.emplace_back(id, runtime::Bits(B * P * (t.per_token() ? 1 : t.features)));
    }
  }
  for (std::uint64_t p = 0; p < rd.positions; ++p)
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& t = cm.tensors.at(inputs[k]);
      const std::uint64_t width = t.per_token() ? 1 : t.features;
      runtime::Bits v(B * width);
      for (auto& e : v)
        e = t.per_token() ? static_cast<std::uint32_t>(rng.below(vocab))
                          : hw::numerics::from_double(t.dtype, 2 * rng.uniform() - 1);
      if (p >= rd.first_position) {
        data.preload.emplace_back(rd.inputs.at((p - rd.first_position) * inputs.size() + k), std::move(v));
        continue;
      }
      runtime::Bits& to = prefill_data->preload.at(k).second;  // token b x prompt + p of the prefill
      for (std::uint64_t b = 0; b < B; ++b)
        for (std::uint64_t f = 0; f < width; ++f) to[(b * P + p) * width + f] = v[b * width + f];
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

PrefillKv read_prefill_kv(runtime::Executor& exec, const ResidentDecode& rd) {
  PrefillKv kv;
  for (const auto& f : rd.fills) {
    kv.k.push_back(exec.read(f.prefill_k));
    kv.v.push_back(exec.read(f.prefill_v));
  }
  return kv;
}

runtime::Check check_kv_cache_fill(runtime::Executor& exec, const ResidentDecode& rd, std::size_t fill,
                                   const PrefillKv& kv) {
  const CompiledModel& cm = rd.rp.cm;
  const KvCacheFillArgs& a = rd.fills.at(fill).args;
  const std::uint64_t B = cm.layout.tokens, KV = a.kv_heads, hd = a.head_dim, S = a.capacity, P = a.prompt;
  const hw::DType dt = hw_dtype(cm.model.dtype);
  runtime::Check c;
  c.what = a.layer + " (the prefill's keys and values in the KV cache)";
  c.reference = "the parallel prefill's keys and values";
  const runtime::Bits kc = exec.read(a.k_cache), vc = exec.read(a.v_cache);
  const runtime::Bits &k = kv.k.at(fill), &v = kv.v.at(fill);
  for (std::uint64_t b = 0; b < B; ++b)
    for (std::uint64_t e = 0; e < KV * hd; ++e)
      for (std::uint64_t j = 0; j < P; ++j) {
        const std::uint64_t at = b * KV * hd * S + e * S + j, from = (b * P + j) * KV * hd + e;
        ++c.compared;
        if (kc[at] != k.at(from) ||
            vc[at] != hw::numerics::from_double(hw::DType::F32, hw::numerics::to_double(dt, v.at(from)))) {
          if (c.first_mismatch.empty()) c.first_mismatch = fmt::format("sample {}, feature {}, key {}", b, e, j);
          ++c.mismatches;
        }
      }
  return c;
}

std::vector<runtime::Check> check_resident_step(runtime::Executor& exec, const ResidentDecode& rd, std::size_t program,
                                                const PrefillKv* kv) {
  std::vector<runtime::Check> out;
  for (const auto& a : rd.attention)
    if (a.program == program) out.push_back(check_decode_attention(exec, rd, a));
  for (std::size_t f = 0; f < rd.fills.size(); ++f)
    if (rd.fills[f].program == program) {
      if (!kv) throw std::logic_error("check_resident_step: a fill needs the prefill's keys and values");
      out.push_back(check_kv_cache_fill(exec, rd, f, *kv));
    }
  return out;
}

}  // namespace wafersim::models::resident
