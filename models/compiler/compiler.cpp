#include "models/compiler/compiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "models/compiler/kernels.h"
#include "models/compiler/routes.h"
#include "models/compiler/schedule.h"
#include "sim/errors.h"

namespace wafersim::models::compiler {

namespace {

// Whether a layer's programs depend on a token's position in its sample (so that a group
// must hold whole samples for every group to run group 0's programs).
bool needs_whole_samples(const ModelSpec& m) {
  for (const auto& l : m.layers)
    if (l.kind == LayerKind::Attention || (l.kind == LayerKind::Embedding && l.learned_positions)) return true;
  return false;
}

// The programs and streams of group 0 repeated on every other row group: the same program
// on the same slice, the same streams on the group's channels. Whole-wafer figures (edge
// wavelets, mean SRAM, the region's rows) count every group; the busiest PE, link and
// channel are those of one group (the groups share no router and no channel).
void replicate(LayerProgram& p, const StreamingLayout& l) {
  if (l.groups == 1) return;
  std::map<std::uint32_t, std::uint32_t> slice_of;
  for (std::uint32_t s = 0; s < l.slices(); ++s) slice_of[l.rows[s]] = s;
  const std::size_t n_code = p.code.size(), n_streams = p.streams.size();
  const auto per_group = static_cast<std::uint32_t>(l.bands.size());
  for (std::uint32_t g = 1; g < l.groups; ++g) {
    for (std::size_t i = 0; i < n_code; ++i) {
      hw::isa::Placement pl = p.code[i];
      const auto a = slice_of.find(pl.y0), b = slice_of.find(pl.y1);
      if (a == slice_of.end() || b == slice_of.end())
        throw std::logic_error(fmt::format("layer '{}': a program placed off the layout's rows", p.layer));
      const std::uint32_t y0 = l.group_rows[g][a->second], y1 = l.group_rows[g][b->second];
      if (y1 - y0 !=
          static_cast<std::uint32_t>(pl.y1 - pl.y0))  // a placement over several rows keeps its shape in every group
        throw std::logic_error(
            fmt::format("layer '{}': rows {}..{} differ in shape in row group {}", p.layer, pl.y0, pl.y1, g));
      pl.y0 = static_cast<std::uint16_t>(y0);
      pl.y1 = static_cast<std::uint16_t>(y1);
      p.code.push_back(pl);
    }
    for (std::size_t i = 0; i < n_streams; ++i) {
      EdgeStream st = p.streams[i];
      st.channel += g * per_group;
      p.streams.push_back(st);
    }
  }
  p.work.wavelets_in *= l.groups;
  p.work.wavelets_out *= l.groups;
  p.sram.mean_bytes *= l.groups;
  p.rows *= l.groups;
}

}  // namespace

namespace {

CompiledModel compile_with(const ModelSpec& model, const Target& target, const CompileOptions& options,
                           bool split_heads, Recompute recompute, bool& recomputed);
// Allocates each step's tensors, lowers it and releases what it was the last to use.
void lower_steps(CompiledModel& cm, const Schedule& sched, SramArena& arena, hw::DType dt,
                 const std::vector<int>& first, const std::vector<int>& last);

// One layout of the attention heads: with Recompute::Auto, without recomputation when the
// activations alone fit, else (or when the kernels' buffers then do not fit) with it.
CompiledModel compile_heads(const ModelSpec& model, const Target& target, const CompileOptions& options,
                            bool split_heads) {
  const Recompute r = options.training ? options.recompute : Recompute::None;
  bool recomputed = false;
  if (r != Recompute::Auto) return compile_with(model, target, options, split_heads, r, recomputed);
  try {
    return compile_with(model, target, options, split_heads, Recompute::Auto, recomputed);
  } catch (const sim::InputError&) {
    if (recomputed) throw;
  }
  return compile_with(model, target, options, split_heads, Recompute::Blocks, recomputed);
}

}  // namespace

CompiledModel compile(const ModelSpec& model, const Target& target, const CompileOptions& options) {
  // Heads split over rows hold up to one more dimension of every query head of a group per
  // row than even slices would: when a mapping (without code) does not fit the SRAM that
  // way, even slices are tried, with the attention planned analytically.
  try {
    return compile_heads(model, target, options, true);
  } catch (const sim::InputError&) {
    bool split = false;
    for (const auto& l : model.layers) split = split || l.kind == LayerKind::Attention;
    if (options.emit || !split) throw;
  }
  CompiledModel cm = compile_heads(model, target, options, false);
  cm.layout_reason += "; attention heads in even slices (split over rows they do not fit the SRAM)";
  return cm;
}

namespace {

CompiledModel compile_with(const ModelSpec& model, const Target& target, const CompileOptions& options,
                           bool split_heads, Recompute recompute, bool& recomputed) {
  if (options.placement == PlacementKind::Resident)
    throw sim::InputError("the weight-resident placement is not implemented yet; use --placement streaming");
  CompiledModel cm;
  cm.target = target;
  cm.model = model;
  cm.options = options;
  const std::uint64_t tokens = model.batch * model.sequence;
  // Attention backward sends records west along the rows, attention without the causal mask
  // also keys and values: two more colors.
  bool west = false;
  for (const auto& l : model.layers) west = west || (l.kind == LayerKind::Attention && (options.training || !l.causal));
  const std::uint32_t fixed = ColorPlan::kFixed + (west ? ColorPlan::kWest : 0);
  if (target.fabric.colors < fixed + 1)
    throw sim::InputError(fmt::format("the weight-streaming placement needs at least {} colors, the platform has {}",
                                      fixed + 1, target.fabric.colors));
  // One group or row groups (docs/compiler.md, "Weight streaming: layout").
  const std::uint32_t rows_per_band = target.fabric.colors - fixed;
  const std::uint64_t H = model.max_features();
  const bool whole = needs_whole_samples(model);
  std::uint32_t groups = 1;
  switch (options.layout) {
    case LayoutChoice::Columns:
      cm.layout_why = "columns (forced)";
      break;
    case LayoutChoice::Groups: {
      const GroupChoice c = choose_groups(target, tokens, model.batch, whole, H, rows_per_band, 2);
      if (c.groups == 1) throw sim::InputError("layout 'groups': " + c.why);
      groups = c.groups;
      cm.layout_why = "groups (forced): " + c.why;
      break;
    }
    case LayoutChoice::Auto: {
      const GroupChoice c = choose_groups(target, tokens, model.batch, whole, H, rows_per_band, 1);
      groups = c.groups;
      cm.layout_why = (groups > 1 ? "groups: " : "columns: ") + c.why;
      break;
    }
  }
  cm.layout = StreamingLayout::plan(target, tokens, H, rows_per_band, groups);
  cm.colors = ColorPlan::make(cm.layout.rows_per_band_used, west);
  cm.layout_reason =
      fmt::format("sequence x hidden = {} x {}: {}; {}", model.sequence, H, cm.layout.describe(), cm.layout_why);
  if (options.emit) cm.routes = build_routes(target, cm.layout, cm.colors);

  Schedule sched = make_schedule(cm, split_heads);
  // Activations kept for the backward pass: all of them, or with each block's recomputed.
  const std::uint64_t kept = activation_peak(sched);
  recomputed = recompute == Recompute::Blocks || (recompute == Recompute::Auto && kept > target.sram_bytes());
  std::uint64_t with_recompute = kept;
  if (recomputed) {
    sched = recompute_blocks(std::move(sched), model);
    with_recompute = activation_peak(sched);
    for (const auto& st : sched.steps) cm.recomputed = cm.recomputed || st.recompute;
  }
  if (options.training)
    cm.recompute_why = cm.recomputed
                           ? fmt::format(
                                 "activations for the backward pass: {} B per PE at the peak with each block's "
                                 "recomputed before its backward, {} B if all were kept",
                                 with_recompute, kept)
                           : fmt::format("activations for the backward pass: {} B per PE at the peak, all kept", kept);
  cm.host_tensors = sched.host_tensors;
  cm.tensors = sched.tensors;

  // SRAM: a tensor lives from its first to its last use.
  const auto [first, last] = tensor_lifetimes(sched);

  SramArena arena(target.sram_bytes());
  const hw::DType dt = hw_dtype(model.dtype);
  try {
    lower_steps(cm, sched, arena, dt, first, last);
  } catch (const NoCodeError&) {
    throw;
  } catch (const sim::InputError& e) {
    if (!options.training) throw;
    throw sim::InputError(fmt::format("{} ({})", e.what(), cm.recompute_why));
  }
  cm.sram_peak = arena.peak();
  return cm;
}

void lower_steps(CompiledModel& cm, const Schedule& sched, SramArena& arena, hw::DType dt,
                 const std::vector<int>& first, const std::vector<int>& last) {
  const Target& target = cm.target;
  const CompileOptions& options = cm.options;
  const std::size_t n_steps = sched.steps.size();
  for (std::size_t i = 0; i < n_steps; ++i) {
    const Step& step = sched.steps[i];
    KernelContext ctx{target,       cm.layout,          cm.colors, cm.tensors, arena,
                      options.emit, options.accumulate, dt,        step.layer, {}};
    for (std::uint32_t t = 0; t < cm.tensors.size(); ++t) {
      if (first[t] != static_cast<int>(i)) continue;
      Tensor& x = cm.tensors[t];
      const std::uint64_t bytes = std::max<std::uint64_t>(8, (x.bytes + 7) / 8 * 8);
      auto a = bytes <= arena.capacity() ? arena.allocate(x.name, static_cast<std::uint32_t>(bytes), 32) : std::nullopt;
      if (!a) throw_sram_error(ctx, x.name, bytes);
      x.addr = *a;
    }
    LayerProgram p;
    try {
      p = lower_step(ctx, cm, step);
    } catch (const NoCodeError&) {
      if (!options.plan_missing_code) throw;
      ctx.release_scratch();
      ctx.emit = false;
      p = lower_step(ctx, cm, step);
    }
    replicate(p, cm.layout);
    p.reads = step.reads;
    p.writes = step.writes;
    p.recompute = step.recompute;
    ctx.release_scratch();
    cm.programs.push_back(std::move(p));
    for (std::uint32_t t = 0; t < cm.tensors.size(); ++t)
      if (last[t] == static_cast<int>(i)) arena.release(cm.tensors[t].addr);
  }
}

}  // namespace

}  // namespace wafersim::models::compiler
