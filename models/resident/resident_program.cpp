#include "models/resident/resident_program.h"

#include <fmt/format.h>

#include <algorithm>

#include "models/compiler/routes.h"
#include "models/compiler/schedule.h"
#include "sim/errors.h"

namespace wafersim::models::resident {
using namespace compiler;

std::pair<MatmulArgs, ResidentWeights> reserve_resident_matmul(const CompiledModel& cm, const Step& st,
                                                               SramArena& arena, Accumulate accumulate) {
  const LayerSpec& layer = cm.model.layers[st.index];
  const hw::DType dt = hw_dtype(cm.model.dtype);
  const bool tied = !layer.tied_to.empty();
  MatmulArgs a;
  a.layer = st.layer;
  a.kind = layer.kind;
  a.in = static_cast<std::uint32_t>(st.in[0]);
  a.out = static_cast<std::uint32_t>(st.out);
  a.f_in = layer.in_features;
  a.f_out = layer.features;
  a.weight = static_cast<std::uint32_t>(cm.host_tensor((tied ? layer.tied_to : layer.name) + ".weight"));
  a.sf = tied ? 1 : static_cast<std::int64_t>(layer.features);
  a.so = tied ? static_cast<std::int64_t>(layer.in_features) : 1;
  a.bias = layer.bias ? cm.host_tensor(layer.name + ".bias") : -1;
  const FeatureMap& Am = cm.tensors.at(a.in).map;
  const FeatureMap& Om = cm.tensors.at(a.out).map;
  ResidentWeights w;
  w.bytes = resident_weight_bytes(cm.layout, Am, Om, a.f_out, a.bias >= 0, dt);
  const KernelContext ctx{cm.target, cm.layout, cm.colors, cm.tensors, arena, true, accumulate, dt, st.layer, {}};
  auto at = arena.allocate(st.layer + ".weights", w.bytes, 32);
  if (!at)
    throw_sram_error(ctx, "resident weights", w.bytes,
                     "weight streaming (--placement streaming: one layer's weights at a time, streamed in)");
  std::uint64_t most = 0;
  for (std::uint32_t s = 0; s < cm.layout.slices(); ++s) most = std::max(most, Am.count(s));
  w.addr = *at;
  w.bias_addr = *at + static_cast<std::uint32_t>((most * a.f_out * hw::size_of(dt) + 7) / 8 * 8);
  return {a, w};
}

ResidentProgram compile_resident_program(const ModelSpec& model, const Target& target, Accumulate accumulate) {
  ResidentProgram rp;
  CompiledModel& cm = rp.cm;
  cm.target = target;
  cm.model = model;
  cm.options.placement = PlacementKind::Resident;
  cm.options.accumulate = accumulate;
  cm.options.training = false;
  cm.options.emit = true;
  const std::uint64_t tokens = model.batch * model.sequence;
  if (target.fabric.colors < ColorPlan::kFixed + 1)
    throw sim::InputError(fmt::format("the weight-resident run needs at least {} colors, the platform has {}",
                                      ColorPlan::kFixed + 1, target.fabric.colors));
  cm.layout = StreamingLayout::plan(target, tokens, model.max_features(), target.fabric.colors - ColorPlan::kFixed);
  cm.colors = ColorPlan::make(cm.layout.rows_per_band_used, false);
  cm.layout_reason = fmt::format("sequence x hidden = {} x {}: {}; linear weights resident in SRAM", model.sequence,
                                 model.max_features(), cm.layout.describe());
  cm.routes = build_routes(target, cm.layout, cm.colors);

  Schedule sched = make_schedule(cm);
  cm.host_tensors = sched.host_tensors;
  cm.tensors = sched.tensors;
  const std::size_t n_steps = sched.steps.size();
  const auto [first, last] = tensor_lifetimes(sched);

  SramArena arena(target.sram_bytes());
  const hw::DType dt = hw_dtype(model.dtype);
  // The resident weights first: they stay for the whole run, at the bottom of SRAM.
  struct Pending {
    std::size_t step;
    MatmulArgs args;
    ResidentWeights w;
  };
  std::vector<Pending> pending;
  for (std::size_t i = 0; i < n_steps; ++i) {
    const Step& st = sched.steps[i];
    if (st.phase != Phase::Forward || (st.kind != LayerKind::Linear && st.kind != LayerKind::Gemv)) continue;
    auto [a, w] = reserve_resident_matmul(cm, st, arena, accumulate);
    rp.weight_bytes += w.bytes;
    pending.push_back({i, a, w});
  }

  // Step 0 places every resident weight (filled in by the runtime, which has the values).
  LayerProgram preload;
  preload.layer = "weights";
  preload.kind = LayerKind::Linear;
  preload.rows = cm.layout.slices();
  preload.columns = cm.layout.columns;
  preload.sram.max_bytes = rp.weight_bytes;
  cm.programs.push_back(std::move(preload));

  std::size_t next = 0;
  for (std::size_t i = 0; i < n_steps; ++i) {
    const Step& step = sched.steps[i];
    KernelContext ctx{target, cm.layout, cm.colors, cm.tensors, arena, true, accumulate, dt, step.layer, {}};
    for (std::uint32_t t = 0; t < cm.tensors.size(); ++t) {
      if (first[t] != static_cast<int>(i)) continue;
      Tensor& x = cm.tensors[t];
      const std::uint64_t bytes = std::max<std::uint64_t>(8, (x.bytes + 7) / 8 * 8);
      auto a = bytes <= arena.capacity() ? arena.allocate(x.name, static_cast<std::uint32_t>(bytes), 32) : std::nullopt;
      if (!a) throw_sram_error(ctx, x.name, bytes);
      x.addr = *a;
    }
    LayerProgram p;
    if (next < pending.size() && pending[next].step == i) {
      p = lower_resident_matmul(ctx, pending[next].args, pending[next].w);
      rp.matmuls.push_back({cm.programs.size(), pending[next].args, pending[next].w});
      ++next;
    } else {
      p = lower_step(ctx, cm, step);
    }
    p.reads = step.reads;
    p.writes = step.writes;
    ctx.release_scratch();
    cm.programs.push_back(std::move(p));
    for (std::uint32_t t = 0; t < cm.tensors.size(); ++t)
      if (last[t] == static_cast<int>(i)) arena.release(cm.tensors[t].addr);
  }
  cm.sram_peak = arena.peak();
  return rp;
}

void append_bits(std::vector<std::uint8_t>& out, std::uint32_t bits, std::uint32_t esz) {
  for (std::uint32_t b = 0; b < esz; ++b) out.push_back(static_cast<std::uint8_t>(bits >> (8 * b)));
}

}  // namespace wafersim::models::resident
