// The mapping of the layer kinds that have no PE code yet (LayerNorm, RMSNorm, softmax,
// attention, embedding, cross-entropy): SRAM, edge streams, work and bound from the layout
// alone, for the kernels docs/compiler.md ("Planned kernels") describes.

#include <fmt/format.h>

#include <algorithm>

#include "models/compiler/kernels.h"
#include "models/compiler/schedule.h"
#include "sim/errors.h"

namespace wafersim::models::compiler {

namespace {

// Work of one PE, built from the kernels' building blocks.
struct PeWork {
  const Target& target;
  hw::DType dt;
  Work k;

  // `count` vector passes over n elements reading `sources` buffers each.
  void passes(std::uint64_t count, std::uint64_t n, std::uint64_t sources = 2) {
    const std::uint32_t esz = hw::size_of(dt);
    k.datapath_steps += count * ceil_div(n, target.lanes(dt));
    k.sram_reads += count * sources * words(n * esz);
    k.sram_writes += count * words(n * esz);
    k.issue += count;
  }
  // exp or recip over n elements: iterative, one element at a time.
  void iterative(std::uint64_t n, std::uint64_t cycles) {
    k.datapath_steps += n * cycles;
    k.issue += 1;
  }
  // A per-token reduction of v values per token over the column's rows: a chain south to
  // the last used row (receive, add, send), then a broadcast north to every row.
  void column_allreduce(std::uint64_t v_per_pe, std::uint32_t slices) {
    if (slices < 2) return;
    k.ramp_in += 2 * v_per_pe;
    k.ramp_out += v_per_pe;
    k.datapath_steps += v_per_pe;
    k.link = std::max(k.link, v_per_pe);
  }
  void take_max(Work& w) const {
    w.datapath_steps = std::max(w.datapath_steps, k.datapath_steps);
    w.issue = std::max(w.issue, k.issue);
    w.sram_reads = std::max(w.sram_reads, k.sram_reads);
    w.sram_writes = std::max(w.sram_writes, k.sram_writes);
    w.ramp_in = std::max(w.ramp_in, k.ramp_in);
    w.ramp_out = std::max(w.ramp_out, k.ramp_out);
    w.link = std::max(w.link, k.link);
  }
};

// Per-band edge traffic of per-slice stream lengths: the busiest channel bounds, all count.
void edge_streams(const StreamingLayout& l, const std::vector<std::uint64_t>& per_slice, bool in, Work& w) {
  for (const auto& b : l.bands) {
    std::uint64_t e = 0;
    for (std::uint32_t s : b.slices) e += per_slice[s];
    w.edge = std::max(w.edge, e);
    (in ? w.wavelets_in : w.wavelets_out) += e;
    w.link = std::max(w.link, e);  // the channel's spine carries the whole band
  }
}

}  // namespace

LayerProgram plan_without_code(KernelContext& ctx, const CompiledModel& cm, const Step& st) {
  const LayerSpec& layer = cm.model.layers[st.index];
  if (ctx.emit)
    throw NoCodeError(fmt::format(
        "layer '{}': the weight-streaming placement has no PE code for {} layers ({}) yet; 'wafersim compile' "
        "without --emit plans their mapping, 'wafersim run' needs code (docs/compiler.md, \"Layer kinds\")",
        st.layer, to_string(layer.kind), to_string(st.phase)));
  const StreamingLayout& l = ctx.layout;
  const std::uint32_t G = l.slices(), t = l.tokens_per_pe;
  const hw::DType dt = ctx.dtype;
  const std::uint32_t esz = hw::size_of(dt);
  const auto& lat = ctx.target.wafer.pe.latency;
  const std::uint64_t exp_c = lat.exp.count(), recip_c = lat.recip.count();
  const bool fwd = st.phase == Phase::Forward, bwd_w = st.phase == Phase::BackwardWeights;

  LayerProgram p;
  p.layer = st.layer;
  p.kind = layer.kind;
  p.phase = st.phase;
  p.analytical = true;
  Work& w = p.work;
  std::vector<std::uint64_t> sram(G), stream_in(G), stream_out(G);
  bool fixed_colors = false, weight_colors = false, out_color = false, row_colors = false;

  // The activation-shaped tensor whose features the layer reduces or transforms.
  const Tensor& main =
      ctx.tensors.at(static_cast<std::uint32_t>(layer.kind == LayerKind::Embedding ? st.out : st.in[0]));
  const std::uint64_t n_total = l.tokens * main.features;
  std::uint64_t scratch_max = 0;
  for (std::uint32_t s = 0; s < G; ++s) {
    const std::uint64_t c = main.map.count(s), n = c * t;
    PeWork pe{ctx.target, dt, {}};
    std::uint64_t tens = 0, scr = 0;  // bytes of the step's tensors and of its scratch
    switch (layer.kind) {
      case LayerKind::LayerNorm:
      case LayerKind::RmsNorm: {
        const bool ln = layer.kind == LayerKind::LayerNorm;
        const std::uint64_t stats = ln ? 2 : 1;  // per-token sums (x, x^2) or (x^2)
        const std::uint64_t params = ln ? 2 : 1;
        fixed_colors = G > 1;
        pe.passes(stats, n, 1);             // partial sums of the slice's features
        pe.column_allreduce(stats * t, G);  // whole-row sums, back on every row
        pe.iterative(t, recip_c + 2);       // rstd per token
        if (fwd) {
          stream_in[s] = params * c;  // gamma (and beta)
          pe.passes(ln ? 3 : 2, n);   // (x - mean) * rstd * gamma (+ beta)
          tens = 2 * n * esz;
          scr = params * c * esz + stats * t * 4;
        } else if (!bwd_w) {
          stream_in[s] = c;          // gamma again
          pe.passes(ln ? 3 : 2, n);  // xhat and g = gamma dy
          pe.passes(stats, n, 2);    // sums of g and g xhat
          pe.column_allreduce(stats * t, G);
          pe.passes(ln ? 3 : 2, n);  // dx = rstd (g - mean g - xhat mean(g xhat))
          tens = 3 * n * esz;
          scr = (n + c) * esz + 2 * stats * t * 4;
        } else {
          pe.passes(ln ? 3 : 2, n);    // xhat, dy xhat
          pe.passes(params, n, 1);     // sums over the PE's tokens
          stream_out[s] = params * c;  // summed along the row, out east in fp32
          pe.k.ramp_in += l.columns > 1 ? params * c : 0;
          pe.k.ramp_out += params * c;
          pe.k.datapath_steps += params * c;
          row_colors = out_color = true;
          tens = 2 * n * esz;
          scr = n * esz + params * c * 4;
        }
        weight_colors = fwd || !bwd_w;
        break;
      }
      case LayerKind::Softmax:
      case LayerKind::CrossEntropy: {
        const bool ce = layer.kind == LayerKind::CrossEntropy;
        fixed_colors = G > 1;
        pe.passes(1, n, 1);  // partial max
        pe.column_allreduce(t, G);
        pe.passes(1, n);         // x - max
        pe.iterative(n, exp_c);  // exp
        pe.passes(1, n, 1);      // partial sum
        pe.column_allreduce(t, G);
        pe.iterative(t, recip_c);  // 1 / sum
        if (ce) {
          pe.column_allreduce(t, G);  // the label's logit, from the row that holds it
          if (!fwd) pe.passes(2, n);  // p / sum / tokens - onehot / tokens
          tens = n * esz + t * 8;
          scr = (fwd ? n : 2 * n) * esz + 4 * t * 4;
        } else {
          pe.passes(1, n);  // y = e / sum
          if (!fwd) {
            pe.passes(2, n);  // y dy, partial sum
            pe.column_allreduce(t, G);
            pe.passes(2, n);  // y (dy - sum)
          }
          tens = (fwd ? 2 : 3) * n * esz;
          scr = n * esz + 2 * t * 4;
        }
        break;
      }
      case LayerKind::Attention: {
        // Queries of the slice's key/value groups against every key of the same sample: the
        // keys and values of the sample's other columns pass along the row.
        const std::uint64_t S = cm.model.sequence, hd = layer.in_features;
        // The heads the slice's query features touch (whole heads with a Heads map, else parts
        // of one or two heads whose dot products are summed down the column).
        const auto runs = main.map.runs(s);
        std::uint64_t heads_here = 0, last_head = ~std::uint64_t{0};
        for (const auto& r : runs)
          for (std::uint64_t h = r.lo / hd; h * hd < r.hi; ++h)
            if (h != last_head) {
              ++heads_here;
              last_head = h;
            }
        const bool split_heads = main.map.kind != FeatureMap::Kind::Heads;
        const std::uint64_t kvf = c;  // key and value features matching the slice's query features
        const std::uint64_t own = std::min<std::uint64_t>(t, S), gather = t >= S ? 0 : S - own;
        std::uint64_t keys = 0;  // over the busiest column's queries
        // Causal: the query at token p sees (p mod S) + 1 keys; F(n) sums p mod S over p < n.
        auto F = [S](std::uint64_t q) { return q / S * (S * (S - 1) / 2) + (q % S) * (q % S - (q % S > 0)) / 2; };
        for (std::uint32_t x = 0; x < l.columns; ++x) {
          const std::uint64_t a = x * std::uint64_t{t};
          keys = std::max(keys, layer.causal ? F(a + t) - F(a) + t : t * S);
        }
        const std::uint64_t scores = heads_here * keys;
        row_colors = gather > 0;
        // QK^T and PV over the slice's features of each head; backward adds dP, dQ, dK, dV.
        const std::uint64_t per_head = heads_here ? ceil_div(c, heads_here) : 0;
        const std::uint64_t macs = (fwd ? 2 : 5) * scores;
        pe.k.datapath_steps += macs * ceil_div(per_head, ctx.target.lanes(dt));
        pe.k.sram_reads += macs * 2 * words(per_head * esz);
        pe.k.sram_writes += macs * words(per_head * esz) / 2;
        if (split_heads) {  // partial scores (and backward dP) summed over the head's rows
          pe.column_allreduce((fwd ? 1 : 2) * scores, G);
          fixed_colors = G > 1;
        }
        pe.iterative(scores, exp_c);     // exp of every score (recomputed backward)
        pe.passes(fwd ? 3 : 6, scores);  // max, subtract, scale (and dS = P (dP - rowsum))
        pe.iterative(heads_here * t, recip_c);
        pe.k.ramp_in += 2 * gather * kvf;  // keys and values of the sample's other columns
        pe.k.ramp_out += 2 * own * kvf;
        if (!fwd) {  // dK and dV partials back to their owners
          pe.k.ramp_in += 2 * gather * kvf;
          pe.k.ramp_out += 2 * gather * kvf;
        }
        pe.k.link = std::max(pe.k.link, gather * kvf);
        tens = ((fwd ? 2 : 4) * n + (fwd ? 2 : 4) * own * kvf) * esz;
        // Keys and values stream past along the row (two in flight); each query keeps a running
        // max and sum per head and its output features of the slice in fp32 (online softmax),
        // backward also dK and dV partials.
        scr = 2 * 2 * kvf * esz + t * (c + 2 * heads_here) * 4 + (fwd ? 0 : 2 * kvf * 4);
        break;
      }
      case LayerKind::Embedding: {
        const std::uint64_t tables = layer.learned_positions ? 2 : 1;
        if (fwd) {
          // The host gathers every token's row (and its position's) and streams it to the
          // slice's row; each PE keeps its own tokens' columns.
          stream_in[s] = tables * l.group_tokens() * c;
          pe.k.ramp_in += tables * l.group_tokens() * c;
          pe.passes(tables, n, 1);
          tens = n * esz + t * 4;
          weight_colors = true;
        } else {
          // Each token's gradient row leaves east along the row and out of the band's channel
          // (the host adds rows of repeated tokens and the position gradient).
          stream_out[s] = l.group_tokens() * c;
          pe.k.ramp_out += n;
          pe.k.link = std::max(pe.k.link, l.group_tokens() * c);
          tens = n * esz + t * 4;
          out_color = true;
        }
        break;
      }
      default:
        throw std::logic_error(fmt::format("plan_without_code: {} has a kernel", to_string(layer.kind)));
    }
    pe.take_max(w);
    sram[s] = tens + scr;
    scratch_max = std::max(scratch_max, scr);
  }
  if (scratch_max) ctx.scratch("work", scratch_max);
  edge_streams(l, stream_in, true, w);
  edge_streams(l, stream_out, false, w);

  // Useful FLOPs: the model's count forward, and twice it backward (the usual estimate for
  // the data and parameter gradients together, split between the two steps).
  const std::uint64_t f = layer.forward_flops();
  switch (st.phase) {
    case Phase::Forward:
      w.flops = f;
      break;
    case Phase::BackwardData:
      w.flops =
          layer.kind == LayerKind::Attention ? f * 5 / 2 : (layer.kind == LayerKind::CrossEntropy ? 2 * n_total : f);
      break;
    case Phase::BackwardWeights:
      w.flops = layer.kind == LayerKind::Embedding ? 0 : f;
      break;
  }
  finish_layer(ctx, p, sram);
  p.colors = (weight_colors ? static_cast<std::uint32_t>(ctx.colors.weight.size()) : 0) + (fixed_colors ? 3 : 0) +
             (row_colors ? 2 : 0) + (out_color ? 1 : 0);
  return p;
}

}  // namespace wafersim::models::compiler
