#include "models/resident/resident_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "models/compiler/bound.h"
#include "models/compiler/sizes.h"
#include "sim/errors.h"
#include "sim/units/quantity.h"

namespace wafersim::models::resident {

using compiler::ceil_div;

namespace {

struct Candidate {
  const LayerSpec* spec;
  std::uint64_t flops;  // per decode token, the pipeline's balance weight
  std::uint32_t min_cols = 0;
};

// The fewest columns of `rows` rows on which the layer's PEs fit their SRAM, or width + 1.
std::uint32_t min_columns(const LayerSpec& l, const ModelSpec& m, const compiler::Target& t, std::uint32_t rows) {
  const std::uint32_t W = t.width();
  const std::uint64_t cap = t.sram_bytes();
  auto fits = [&](std::uint32_t c) { return layer_cost(l, m, t, rows, c, m.sequence).sram_bytes() <= cap; };
  if (!fits(W)) return W + 1;
  std::uint32_t lo = 1, hi = W;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (fits(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// Layers in pipeline order grouped by shelf, or nothing when they do not fit `shelves` shelves.
std::optional<std::vector<std::vector<std::size_t>>> partition(const std::vector<Candidate>& c, std::uint32_t W,
                                                               std::uint32_t shelves) {
  std::uint64_t total = 0;
  for (const auto& x : c) total += x.flops;
  std::vector<std::vector<std::size_t>> out(1);
  std::uint64_t used = 0, acc = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c[i].min_cols > W) return std::nullopt;
    const auto k = out.size() - 1;
    const double target = static_cast<double>(total) * static_cast<double>(k + 1) / shelves;
    const bool over = static_cast<double>(acc) + static_cast<double>(c[i].flops) / 2 > target;
    if (!out.back().empty() && (used + c[i].min_cols > W || (over && out.size() < shelves))) {
      if (out.size() == shelves) return std::nullopt;
      out.emplace_back();
      used = 0;
    }
    out.back().push_back(i);
    used += c[i].min_cols;
    acc += c[i].flops;
  }
  return out;
}

std::string binding(const compiler::Bound& b) { return compiler::to_string(b.binds); }

}  // namespace

ResidentPlan plan_resident(const ModelSpec& m, const ClusterTarget& ct, std::uint64_t prompt) {
  const compiler::Target& t = ct.wafer;
  const std::uint32_t W = t.width(), H = t.height();
  const std::uint64_t cap = t.sram_bytes();
  ResidentPlan plan;
  plan.prompt = prompt ? prompt : m.sequence;
  if (plan.prompt > m.sequence)
    throw sim::InputError(fmt::format("prompt of {} tokens exceeds the model's sequence ({}), the KV cache's length",
                                      plan.prompt, m.sequence));
  plan.wafers_available = std::max(ct.systems, 1u);
  plan.sram_capacity = cap;
  plan.colors_available = t.fabric.colors;

  std::vector<Candidate> cand;
  for (const auto& l : m.layers) {
    if (l.kind == LayerKind::CrossEntropy) {
      plan.skipped.push_back(l.name);
      continue;
    }
    const LayerCost one = layer_cost(l, m, t, 1, 1, m.sequence);
    cand.push_back({&l, std::max<std::uint64_t>(one.work.flops, 1)});
    plan.state_bytes += resident_state_bytes(l, m);
  }
  if (cand.empty()) throw sim::InputError(fmt::format("model '{}' has no layers to place", m.name));

  // The fewest wafers, then the fewest shelves per wafer, on which every layer fits.
  std::optional<std::vector<std::vector<std::size_t>>> groups;
  std::uint32_t shelves = 0;
  for (std::uint32_t n = 1; n <= plan.wafers_available && !groups; ++n) {
    const std::uint32_t s0 =
        static_cast<std::uint32_t>(std::max<std::uint64_t>(1, ceil_div(cand.size(), std::uint64_t{n} * W)));
    for (std::uint32_t s = s0; s <= H && s < s0 + 64 && !groups; ++s) {
      for (auto& c : cand) c.min_cols = min_columns(*c.spec, m, t, H / s);
      groups = partition(cand, W, n * s);
      if (groups) shelves = s;
    }
  }
  if (!groups) {
    // The error: every layer given the share of all the wafers' PEs its state would take.
    const std::uint64_t total_pes = std::uint64_t{plan.wafers_available} * W * H;
    const std::uint64_t total_state = std::max<std::uint64_t>(plan.state_bytes, 1);
    std::uint64_t col = 0;
    std::uint64_t worst_short = 0;
    std::string msg;
    for (const auto& c : cand) {
      const std::uint64_t state = resident_state_bytes(*c.spec, m);
      const std::uint64_t share = std::max<std::uint64_t>(
          1, static_cast<std::uint64_t>(static_cast<double>(total_pes) * static_cast<double>(state) /
                                        static_cast<double>(total_state) / H));
      const auto cols = static_cast<std::uint32_t>(std::min<std::uint64_t>(share, W));
      const LayerCost lc = layer_cost(*c.spec, m, t, H, cols, m.sequence);
      const std::uint32_t wafer =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(col / W, plan.wafers_available - 1));
      const std::uint32_t x = static_cast<std::uint32_t>(col % W);
      if (lc.sram_bytes() > cap && lc.sram_bytes() - cap > worst_short) {
        worst_short = lc.sram_bytes() - cap;
        msg = fmt::format(
            "layer '{}' does not fit the SRAM (weight-resident placement): given its share of the {} wafer{} ({} "
            "columns x {} rows), PE ({}, 0) of wafer {} needs {} B (weights {} B, KV cache {} B, buffers {} B) but has "
            "{} B: short by {} B. The model keeps {} resident (weights and the KV cache for batch {} x sequence {}) "
            "against {} of SRAM on {} wafer{}",
            c.spec->name, plan.wafers_available, plan.wafers_available == 1 ? "" : "s", cols, H, x, wafer,
            lc.sram_bytes(), lc.weight_bytes, lc.kv_bytes, lc.act_bytes, cap, worst_short,
            units::pretty(static_cast<double>(plan.state_bytes), "B"), m.batch, m.sequence,
            units::pretty(static_cast<double>(total_pes * cap), "B"), plan.wafers_available,
            plan.wafers_available == 1 ? "" : "s");
      }
      col += cols;
    }
    if (msg.empty())
      msg = fmt::format(
          "model '{}' does not fit the weight-resident placement on {} wafer{}: its {} layers need more regions "
          "(at least one column each, more where the SRAM needs it) than the wafers' {} columns in bands of rows "
          "allow",
          m.name, plan.wafers_available, plan.wafers_available == 1 ? "" : "s", cand.size(),
          std::uint64_t{plan.wafers_available} * W);
    throw sim::InputError(msg);
  }
  plan.wafers = static_cast<std::uint32_t>(ceil_div(groups->size(), shelves));  // the bands used may end early
  plan.shelves = shelves;
  plan.shelf_rows = H / shelves;
  const std::uint32_t h = plan.shelf_rows;

  // Columns within each shelf: the minimum, then one at a time to the slowest stage.
  std::vector<std::uint32_t> cols(cand.size());
  std::vector<std::uint64_t> stage(cand.size());
  for (const auto& g : *groups) {
    std::uint32_t used = 0;
    for (auto i : g) {
      cols[i] = cand[i].min_cols;
      used += cols[i];
      stage[i] = layer_cost(*cand[i].spec, m, t, h, cols[i], m.sequence).bound.cycles;
    }
    for (; used < W; ++used) {
      std::size_t best = g.front();
      for (auto i : g)
        if (stage[i] > stage[best]) best = i;
      ++cols[best];
      stage[best] = layer_cost(*cand[best].spec, m, t, h, cols[best], m.sequence).bound.cycles;
    }
  }

  // Regions: shelves in serpentine order (even shelves west to east, odd east to west) so
  // consecutive layers are neighbours.
  std::map<std::string, std::size_t> producer;
  for (std::size_t k = 0; k < groups->size(); ++k) {
    const auto wafer = static_cast<std::uint32_t>(k / shelves), band = static_cast<std::uint32_t>(k % shelves);
    std::uint32_t x = 0;
    for (auto i : (*groups)[k]) {
      ResidentLayer rl;
      rl.name = cand[i].spec->name;
      rl.kind = cand[i].spec->kind;
      const std::uint32_t lo = band % 2 == 0 ? x : W - x - cols[i];
      rl.region = {wafer, lo, lo + cols[i], band * h, band * h + h};
      x += cols[i];
      rl.state_bytes = resident_state_bytes(*cand[i].spec, m);
      producer[rl.name] = plan.layers.size();
      plan.layers.push_back(std::move(rl));
    }
  }

  // Transfers between regions; the receiving region's boundary links carry them.
  const std::uint64_t esz = bytes_of(m.dtype);
  std::vector<std::uint64_t> crossing(plan.wafers, 0);  // bytes per token from wafers <= w to > w
  std::vector<std::uint64_t> crossing_wavelets(plan.wafers, 0);
  for (std::size_t q = 0; q < plan.layers.size(); ++q) {
    ResidentLayer& rl = plan.layers[q];
    const LayerSpec& spec = *cand[q].spec;
    for (const auto& in : spec.inputs) {
      Transfer tr;
      tr.to = rl.name;
      const Shape s = m.shape_of(in);
      tr.wavelets = s.features ? s.features : 1;
      auto it = producer.find(in);
      if (it == producer.end()) {
        tr.from = "host";
      } else {
        const ResidentLayer& p = plan.layers[it->second];
        tr.from = p.name;
        tr.across_wafers = p.region.wafer != rl.region.wafer;
        if (!tr.across_wafers) {
          auto centre = [](std::uint32_t a, std::uint32_t b) { return static_cast<std::int64_t>(a + b) / 2; };
          tr.hops = static_cast<std::uint32_t>(
              std::llabs(centre(p.region.x0, p.region.x1) - centre(rl.region.x0, rl.region.x1)) +
              std::llabs(centre(p.region.y0, p.region.y1) - centre(rl.region.y0, rl.region.y1)));
        }
        for (std::uint32_t w = p.region.wafer; w < rl.region.wafer; ++w) {
          crossing[w] += tr.wavelets * esz;
          crossing_wavelets[w] += tr.wavelets;
        }
      }
      rl.in_wavelets += tr.wavelets;
      plan.transfers.push_back(tr);
    }
  }

  const double clock = t.wafer.clock.hz;
  std::uint64_t latency = 0;
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    ResidentLayer& rl = plan.layers[i];
    const LayerSpec& spec = *cand[i].spec;
    const std::uint64_t avg_context = (plan.prompt + 1) / 2;
    rl.decode = layer_cost(spec, m, t, rl.region.rows(), rl.region.columns(), m.sequence);
    rl.prefill = layer_cost(spec, m, t, rl.region.rows(), rl.region.columns(), avg_context);
    // The inputs enter over the region's boundary rows.
    const std::uint64_t boundary = ceil_div(rl.in_wavelets, rl.region.rows());
    for (LayerCost* c : {&rl.decode, &rl.prefill}) {
      c->work.link = std::max(c->work.link, boundary);
      c->bound = compiler::bound_of(c->work, t);
    }
    plan.sram_max = std::max(plan.sram_max, rl.decode.sram_bytes());
    plan.sram_mean += rl.decode.mean_bytes * static_cast<double>(rl.region.pes());
    plan.colors_max = std::max(plan.colors_max, rl.decode.colors);
    latency += rl.decode.bound.cycles;
    if (rl.decode.bound.cycles > plan.stage_cycles) {
      plan.stage_cycles = rl.decode.bound.cycles;
      plan.stage = rl.name;
      plan.stage_binds = binding(rl.decode.bound);
    }
    if (rl.prefill.bound.cycles > plan.prefill_stage_cycles) {
      plan.prefill_stage_cycles = rl.prefill.bound.cycles;
      plan.prefill_stage = rl.name;
    }
  }
  plan.sram_mean /= static_cast<double>(std::uint64_t{plan.wafers} * W * H);
  for (std::uint32_t w = 0; w + 1 < plan.wafers; ++w) {
    WaferLink wl;
    wl.from = w;
    wl.bytes = crossing[w];
    const auto io =
        static_cast<std::uint64_t>(std::ceil(static_cast<double>(crossing[w]) * 8.0 / ct.link_bits_per_s * clock));
    wl.cycles = std::max(io, ceil_div(crossing_wavelets[w], std::max(t.fabric.edge_io_channels, 1u)));
    latency += wl.cycles;
    const std::string name = fmt::format("wafer link {}->{}", w, w + 1);
    if (wl.cycles > plan.stage_cycles) {
      plan.stage_cycles = wl.cycles;
      plan.stage = name;
      plan.stage_binds = "wafer-link";
    }
    if (wl.cycles > plan.prefill_stage_cycles) {
      plan.prefill_stage_cycles = wl.cycles;
      plan.prefill_stage = name;
    }
    plan.links.push_back(wl);
  }
  plan.latency_cycles = latency;
  return plan;
}

}  // namespace wafersim::models::resident
