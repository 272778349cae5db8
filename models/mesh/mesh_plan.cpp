#include "models/mesh/mesh_plan.h"

#include <fmt/format.h>

#include <cmath>

#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::models::mesh {

std::uint32_t buffer_alignment(const compiler::Target& t) {
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(4, t.wafer.pe.sram.port_width.bits / 8));
}

std::uint32_t collective_stage(const compiler::Target& t) {
  const auto& lat = t.wafer.pe.latency;
  return stage_cycles(static_cast<std::uint32_t>(lat.vector_start.count()), static_cast<std::uint32_t>(lat.add.count()),
                      static_cast<std::uint32_t>(t.fabric.ramp_latency.count()));
}

namespace {

struct Fit {
  bool ok = false;
  Region region;
  Addrs addrs;
  std::uint64_t cost = 0;
};

// Allreduce lengths per layer: seven along the rows (C PEs: both norms, q/k/v, the softmax's
// max and sum, the weighted values, gate/up), two along the columns (R: o, down), one along a
// key/value head's rows (the scores).
std::uint64_t cost_of(const DecoderShape& s, std::uint32_t rows, std::uint32_t columns) {
  return 7ull * columns + 2ull * rows + rows / s.kv_heads;
}

// The region on one wafer with the least collective length whose busiest PE fits. With a
// prefill its busiest PE also holds the GEMM's blocks, and the region is the smallest square
// that does (MeshGEMM's own shape: on a rectangle the units of two along the longer lines cost
// their adds and their duplicated work), or where none does, the shortest collectives among
// the rectangles MeshGEMM runs on.
// `passes`: the prefill runs in passes of min(R, C) tokens (MeshGEMM's blocks of one token).
Fit best_region(const DecoderShape& s, const compiler::Target& t, std::uint32_t layers, bool embedding, bool head,
                std::uint32_t rows, std::uint32_t columns, std::uint64_t prefill, bool passes) {
  const std::uint32_t align = buffer_alignment(t), cap = t.sram_bytes();
  auto need = [&](std::uint32_t r, std::uint32_t c) {
    return plan_addrs(s, tile_sizes(s, r, c), layers, embedding, head, align);
  };
  auto fits = [&](std::uint32_t r, std::uint32_t c) {
    const std::uint32_t n = std::min(r, c);
    const std::uint64_t tokens = passes ? std::min<std::uint64_t>(prefill, n) : prefill;  // prefill: a pass's
    return prefill_end(need(r, c), s, tile_sizes(s, r, c), prefill ? tokens : 0, n, align, cap) <= cap;
  };
  Fit best;
  const auto kv = static_cast<std::uint32_t>(s.kv_heads);
  if (t.height() < kv) return best;
  if (rows) {  // the region asked for
    const Addrs a = need(rows, columns);
    if (fits(rows, columns)) best = Fit{true, Region{0, 0, rows, columns}, a, cost_of(s, rows, columns)};
    return best;
  }
  if (prefill)
    for (std::uint32_t n = kv; n <= std::min(t.width(), t.height()); ++n)
      if (fits(n, n)) return Fit{true, Region{0, 0, n, n}, need(n, n), cost_of(s, n, n)};
  for (std::uint32_t c = 1; c <= t.width(); ++c) {
    // A prefill's rows: those MeshGEMM runs on with c columns.
    const std::uint32_t first = prefill ? std::max(kv, (c + 1) / 2) : kv;
    const std::uint32_t last =
        prefill ? static_cast<std::uint32_t>(std::min<std::uint64_t>(t.height(), 2ull * c)) : t.height();
    if (first > last || !fits(last, c) || (prefill && !gemm_runs_on(last, c))) continue;
    // The need falls as rows are added: the fewest rows that fit.
    std::uint32_t lo = first, hi = last;
    while (lo < hi) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      if (fits(mid, c))
        hi = mid;
      else
        lo = mid + 1;
    }
    if (prefill && !gemm_runs_on(lo, c)) continue;
    const std::uint64_t cost = cost_of(s, lo, c);
    if (!best.ok || cost < best.cost) {
      best.ok = true;
      best.cost = cost;
      best.region = Region{0, 0, lo, c};
      best.addrs = need(lo, c);
    }
  }
  return best;
}

}  // namespace

MeshPlan plan_mesh(const ModelSpec& model, const MeshTarget& t) {
  MeshPlan p;
  p.shape = decoder_shape(model);
  p.systems = t.systems;
  p.sram_capacity = t.wafer.sram_bytes();
  const DecoderShape& s = p.shape;
  const auto L = static_cast<std::uint32_t>(s.layers);
  if (t.rows && (t.rows > t.wafer.height() || t.columns > t.wafer.width() || t.rows < s.kv_heads || !t.columns))
    throw sim::InputError(
        fmt::format("the mesh region {} x {} does not lie on the {} x {} PEs of a wafer with a row "
                    "for each of the model's {} key/value heads",
                    t.rows, t.columns, t.wafer.height(), t.wafer.width(), s.kv_heads));
  if (t.prefill && t.rows && !gemm_runs_on(t.rows, t.columns))
    throw sim::InputError(
        fmt::format("the prefill's MeshGEMM takes a region at most twice as long as wide (its rings shift along rows "
                    "and columns in as many steps); {} x {} is not one",
                    t.rows, t.columns));
  // The wafers of a plan on n systems (none where one does not fit); `passes`: the prefill in
  // passes of MeshGEMM's blocks of one token.
  // A pass's tokens: the prompt's, or those asked for.
  const std::uint64_t pass = t.prefill_chunk ? std::min(t.prefill_chunk, t.prefill) : t.prefill;
  auto wafers_of = [&](std::uint32_t n, bool passes) {
    std::vector<MeshWafer> wafers;
    for (std::uint32_t i = 0; i < n; ++i) {
      const compiler::Span layers = compiler::split(L, n, i);
      const Fit f = best_region(s, t.wafer, static_cast<std::uint32_t>(layers.size()), i == 0, i + 1 == n, t.rows,
                                t.columns, pass, passes);
      if (!f.ok) return std::vector<MeshWafer>{};
      wafers.push_back(MeshWafer{f.region, static_cast<std::uint32_t>(layers.lo),
                                 static_cast<std::uint32_t>(layers.size()), i == 0, i + 1 == n, f.addrs});
    }
    return wafers;
  };
  for (std::uint32_t n = 1; n <= std::min<std::uint32_t>(t.systems, L); ++n) {
    // The prompt in one pass; where its blocks do not fit, in passes of as many tokens as the
    // smallest region's shorter side (one token a block on every wafer).
    std::vector<MeshWafer> wafers = wafers_of(n, false);
    bool passes = false;
    if (wafers.empty() && t.prefill && !t.prefill_chunk) {
      wafers = wafers_of(n, true);
      passes = !wafers.empty();
    }
    if (wafers.empty()) continue;
    p.wafers = std::move(wafers);
    p.prefill = t.prefill;
    p.prefill_chunk = pass < t.prefill ? pass : 0;
    if (passes) {
      p.prefill_chunk = t.prefill;
      for (const MeshWafer& w : p.wafers)
        p.prefill_chunk = std::min<std::uint64_t>(p.prefill_chunk, std::min(w.region.rows, w.region.columns));
      if (p.prefill_chunk == t.prefill) p.prefill_chunk = 0;
    }
    for (MeshWafer& w : p.wafers) {
      const TileSizes ts = tile_sizes(s, w.region.rows, w.region.columns);
      const std::uint64_t tokens = p.prefill_chunk ? p.prefill_chunk : t.prefill;
      const std::uint32_t side = std::min(w.region.rows, w.region.columns), align = buffer_alignment(t.wafer);
      const std::uint32_t bytes = prefill_bytes(s, ts, tokens, side, align);
      p.prefill_bytes = std::max(p.prefill_bytes, bytes);
      if (!t.prefill) continue;
      w.prefill_end = prefill_end(w.addrs, s, ts, tokens, side, align, t.wafer.sram_bytes());
      w.prefill_in_logits = w.addrs.end + bytes - w.prefill_end;
    }
    p.link_bytes = n > 1 ? s.d * bytes_of(s.dtype) : 0;
    if (n > 1)
      p.link_cycles = static_cast<std::uint64_t>(std::ceil(static_cast<double>(p.link_bytes) * 8.0 / t.link_bits_per_s *
                                                           t.wafer.wafer.clock.hz)) +
                      t.link_latency.count();
    p.why = t.prefill ? fmt::format(
                            "on each wafer the smallest square region whose busiest PE holds its layers and the "
                            "prefill's blocks of {} tokens (MeshGEMM's rings), or where none does the region with "
                            "the shortest collectives (7 along its rows, 2 along its columns a layer) at most twice "
                            "as long as wide that holds them",
                            t.prefill)
                      : fmt::format(
                            "on each wafer the region with the shortest collectives (7 along its rows, 2 along its "
                            "columns a layer) whose busiest PE holds its layers");
    return p;
  }
  // Does not fit: the first wafer that does not, for the most systems, at the whole wafer (with
  // a prefill: in passes, MeshGEMM's blocks of one token, the least it needs).
  const std::uint32_t n = std::min<std::uint32_t>(t.systems, L);
  std::uint32_t i = 0;
  while (i + 1 < n && best_region(s, t.wafer, static_cast<std::uint32_t>(compiler::split(L, n, i).size()), i == 0,
                                  i + 1 == n, t.rows, t.columns, pass, !t.prefill_chunk)
                          .ok)
    ++i;
  const compiler::Span layers = compiler::split(L, n, i);
  const std::uint32_t R = t.rows ? t.rows : t.wafer.height(), C = t.rows ? t.columns : t.wafer.width();
  const Addrs a = plan_addrs(s, tile_sizes(s, R, C), static_cast<std::uint32_t>(layers.size()), i == 0, i + 1 == n,
                             buffer_alignment(t.wafer));
  const std::uint64_t least = t.prefill_chunk ? pass : std::min<std::uint64_t>(t.prefill, std::min(R, C));
  const std::uint32_t align = buffer_alignment(t.wafer), cap = t.wafer.sram_bytes();
  const std::uint64_t blocks = t.prefill ? prefill_bytes(s, tile_sizes(s, R, C), least, std::min(R, C), align) : 0;
  const std::uint64_t need = prefill_end(a, s, tile_sizes(s, R, C), t.prefill ? least : 0, std::min(R, C), align, cap);
  const std::uint64_t in_logits = a.end + blocks - need;
  const std::string prefill =
      t.prefill ? fmt::format(", the prefill's MeshGEMM blocks in passes of {} tokens {} B{}", least, blocks,
                              in_logits ? fmt::format(" ({} B of them in the decode's logits)", in_logits) : "")
                : std::string();
  const std::string shortfall =
      need > cap
          ? fmt::format("but has {} B: short by {} B", cap, need - cap)
          : fmt::format("of its {} B, but the prefill's MeshGEMM takes a region at most twice as long as wide", cap);
  throw sim::InputError(fmt::format(
      "model '{}' does not fit the mesh placement on {} system{} of this platform: {} parameters ({} at {} bytes "
      "each); with layers {}..{} on wafer {}'s {} x {} PEs its busiest PE needs {} B (weights {} B, KV "
      "caches of {} positions {} B, activations {} B{}) {}",
      model.name, n, n == 1 ? "" : "s", s.parameters(),
      units::format(units::DataSize::from_bytes(s.parameters() * bytes_of(s.dtype))), bytes_of(s.dtype), layers.lo,
      layers.hi - 1, i, R, C, need, a.weights, s.capacity, a.caches, a.activations, prefill, shortfall));
}

}  // namespace wafersim::models::mesh
