#include "models/resident/layer_cost.h"

#include <algorithm>

#include "models/compiler/bound.h"
#include "models/compiler/compiled_model.h"
#include "models/compiler/sizes.h"

namespace wafersim::models::resident {
using compiler::ceil_div;
using compiler::words;
using compiler::Work;

const char* to_string(Cut c) {
  switch (c) {
    case Cut::RowsIn:
      return "rows-in";
    case Cut::RowsOut:
      return "rows-out";
    case Cut::Even:
      return "even";
  }
  return "?";
}

namespace {

struct Ctx {
  const compiler::Target& target;
  std::uint64_t esz;
  std::uint64_t lanes;
  std::uint32_t rows, cols;
  [[nodiscard]] std::uint64_t pes() const { return std::uint64_t{rows} * cols; }
  [[nodiscard]] std::uint64_t vec(std::uint64_t n) const { return ceil_div(n, lanes); }
};

// A matrix product y[N] = x[K] W (+ b) per token with W cut over the region.
LayerCost matrix(const Ctx& c, std::uint64_t K, std::uint64_t N, bool bias, Cut cut) {
  LayerCost r;
  r.cut = cut;
  const bool rows_in = cut == Cut::RowsIn;
  const std::uint64_t a = ceil_div(K, rows_in ? c.rows : c.cols);  // input features a PE multiplies
  const std::uint64_t b = ceil_div(N, rows_in ? c.cols : c.rows);  // output features it accumulates
  const std::uint64_t chain = rows_in ? c.rows : c.cols;           // PEs a partial sum passes
  Work& w = r.work;
  w.datapath_steps = a * c.vec(b) + (chain > 1 ? c.vec(b) : 0) + (bias ? c.vec(b) : 0) + c.vec(b);
  w.issue = a + 4;
  w.sram_reads = a * (words(b * c.esz) + words(b * 4)) + (chain > 1 ? words(b * 4) : 0);
  w.sram_writes = a * words(b * 4) + words(b * c.esz);
  w.ramp_in = a + (chain > 1 ? b : 0);
  w.ramp_out = b;
  w.link = std::max(a, b);
  w.flops = 2 * K * N + (bias ? N : 0);
  r.weight_bytes = a * b * c.esz + (bias ? b * c.esz : 0);
  r.act_bytes = 2 * a * c.esz + 2 * b * 4 + b * c.esz;
  r.mean_bytes = static_cast<double>((K * N + (bias ? N : 0)) * c.esz) / static_cast<double>(c.pes()) +
                 static_cast<double>(r.act_bytes);
  r.colors = 4;  // input multicast, two alternating partial-sum chains, output
  return r;
}

// Per-feature work (norms, softmax, elementwise): the token's features spread over every PE.
LayerCost spread(const Ctx& c, std::uint64_t features, std::uint64_t inputs, std::uint64_t passes,
                 std::uint64_t iterative_cycles, std::uint64_t params, bool reduce, std::uint64_t flops) {
  LayerCost r;
  const std::uint64_t f = ceil_div(features, c.pes());
  Work& w = r.work;
  w.datapath_steps = passes * c.vec(f) + f * iterative_cycles + (reduce ? 4 : 0);
  w.issue = passes + (iterative_cycles ? f : 0) + (reduce ? 4 : 0);
  w.sram_reads = passes * 2 * words(f * c.esz);
  w.sram_writes = passes * words(f * c.esz);
  w.ramp_in = inputs * f + (reduce && c.pes() > 1 ? 4 : 0);
  w.ramp_out = f + (reduce && c.pes() > 1 ? 2 : 0);
  w.link = std::max<std::uint64_t>(inputs * f, reduce ? 2 : 0);
  w.flops = flops;
  r.weight_bytes = params * f * c.esz;
  r.act_bytes = 2 * (inputs + 1) * f * c.esz + (reduce ? 16 : 0);
  r.mean_bytes =
      static_cast<double>(params * features * c.esz) / static_cast<double>(c.pes()) + static_cast<double>(r.act_bytes);
  r.colors = reduce ? 4 : 2;
  return r;
}

LayerCost attention(const Ctx& c, const LayerSpec& l, const ModelSpec& m, std::uint64_t context) {
  LayerCost r;
  const std::uint64_t H = l.heads, KV = l.kv_heads ? l.kv_heads : l.heads, hd = l.in_features;
  const std::uint64_t n = std::min<std::uint64_t>(std::max<std::uint64_t>(context, 1), m.sequence);
  // Key positions over the columns, key/value features over the rows; every sample's cache.
  const std::uint64_t pos = ceil_div(m.sequence, c.cols), kv_feat = ceil_div(KV * hd, c.rows);
  const std::uint64_t q_feat = ceil_div(H * hd, c.rows), heads_row = std::max<std::uint64_t>(1, ceil_div(H, c.rows));
  const std::uint64_t keys = std::min(pos, ceil_div(n, c.cols));
  const auto& lat = c.target.wafer.pe.latency;
  Work& w = r.work;
  w.datapath_steps = 2 * keys * c.vec(q_feat) + keys * heads_row * lat.exp.count() + heads_row * lat.recip.count() +
                     2 * keys * heads_row;
  w.issue = 4 * keys * heads_row + 8;
  w.sram_reads = 2 * keys * (words(q_feat * c.esz) + words(kv_feat * c.esz));
  w.sram_writes = keys * heads_row + words(q_feat * 4) + 2 * words(kv_feat * c.esz);
  const bool split_heads = c.rows > H;  // a head's dot product spans rows: partial scores summed down the column
  w.ramp_in =
      q_feat + 2 * kv_feat + (split_heads ? 2 * keys * heads_row : 0) + (c.cols > 1 ? q_feat + 2 * heads_row : 0);
  w.ramp_out = (split_heads ? keys * heads_row : 0) + q_feat + 2 * heads_row;
  w.link = std::max(q_feat + 2 * heads_row, split_heads ? keys * heads_row : 0);
  w.flops = 4 * H * n * hd + 5 * H * n;
  r.kv_bytes = 2 * m.batch * pos * kv_feat * c.esz;
  r.act_bytes = 2 * q_feat * c.esz + q_feat * 4 + heads_row * 8 + pos * heads_row * 4;
  r.mean_bytes = static_cast<double>(2 * m.batch * m.sequence * KV * hd * c.esz) / static_cast<double>(c.pes()) +
                 static_cast<double>(r.act_bytes);
  r.colors = 6;  // query multicast, key/value append, two column chains, two row chains
  return r;
}

}  // namespace

std::uint64_t resident_state_bytes(const LayerSpec& l, const ModelSpec& m) {
  const std::uint64_t esz = bytes_of(m.dtype);
  switch (l.kind) {
    case LayerKind::Linear:
    case LayerKind::Gemv:  // a head tied to the embedding keeps its own copy in its region
      return (l.in_features * l.features + (l.bias ? l.features : 0)) * esz;
    case LayerKind::Attention:
      return 2 * m.batch * m.sequence * (l.kv_heads ? l.kv_heads : l.heads) * l.in_features * esz;
    default:
      return l.parameters() * esz;
  }
}

LayerCost layer_cost(const LayerSpec& l, const ModelSpec& m, const compiler::Target& target, std::uint32_t rows,
                     std::uint32_t columns, std::uint64_t context) {
  const hw::DType dt = compiler::hw_dtype(m.dtype);
  const Ctx c{target, hw::size_of(dt), target.lanes(dt), std::max(rows, 1u), std::max(columns, 1u)};
  const auto& lat = target.wafer.pe.latency;
  const std::uint64_t exp_c = lat.exp.count(), recip_c = lat.recip.count();
  const std::uint64_t F = l.output.features;
  LayerCost r;
  switch (l.kind) {
    case LayerKind::Linear:
    case LayerKind::Gemv: {
      const LayerCost a = matrix(c, l.in_features, l.features, l.bias, Cut::RowsIn);
      const LayerCost b = matrix(c, l.in_features, l.features, l.bias, Cut::RowsOut);
      // The cut that fits the SRAM, else the faster one (the smaller on a tie).
      const auto ba = compiler::bound_of(a.work, target), bb = compiler::bound_of(b.work, target);
      const std::uint64_t cap = target.sram_bytes();
      const bool fa = a.sram_bytes() <= cap, fb = b.sram_bytes() <= cap;
      if (fa != fb)
        r = fa ? a : b;
      else
        r = bb.cycles < ba.cycles || (bb.cycles == ba.cycles && b.sram_bytes() < a.sram_bytes()) ? b : a;
      break;
    }
    case LayerKind::Embedding: {
      // Vocabulary over the rows, features over the columns: the row holding the token's entry
      // sends its features; learned positions the same way.
      const std::uint64_t vr = ceil_div(l.vocabulary, c.rows), fc = ceil_div(F, c.cols);
      const std::uint64_t pr = l.learned_positions ? ceil_div(m.sequence, c.rows) : 0;
      Work& w = r.work;
      w.datapath_steps = c.vec(fc) * (l.learned_positions ? 2 : 1);
      w.issue = 4;
      w.sram_reads = words(fc * c.esz) * (l.learned_positions ? 2 : 1);
      w.sram_writes = words(fc * c.esz);
      w.ramp_in = 1 + (l.learned_positions ? fc : 0);
      w.ramp_out = fc;
      w.link = fc;
      r.weight_bytes = (vr + pr) * fc * c.esz;
      r.act_bytes = 2 * fc * c.esz + 8;
      r.mean_bytes =
          static_cast<double>(l.parameters() * c.esz) / static_cast<double>(c.pes()) + static_cast<double>(r.act_bytes);
      r.colors = 3;
      break;
    }
    case LayerKind::LayerNorm:
      r = spread(c, l.in_features, 1, 5, 0, 2, true, 5 * l.in_features);
      r.work.datapath_steps += recip_c + 2;
      break;
    case LayerKind::RmsNorm:
      r = spread(c, l.in_features, 1, 3, 0, 1, true, 4 * l.in_features);
      r.work.datapath_steps += recip_c + 2;
      break;
    case LayerKind::Softmax:
    case LayerKind::CrossEntropy:
      r = spread(c, F, 1, 3, exp_c, 0, true, 5 * F);
      r.work.datapath_steps += recip_c;
      break;
    case LayerKind::Add:
    case LayerKind::Mul:
      r = spread(c, F, 2, 1, 0, 0, false, F);
      break;
    case LayerKind::Relu:
      r = spread(c, F, 1, 1, 0, 0, false, F);
      break;
    case LayerKind::Silu:
      r = spread(c, F, 1, 3, exp_c + recip_c, 0, false, 4 * F);
      break;
    case LayerKind::Gelu:
      r = spread(c, F, 1, 7, exp_c + recip_c, 0, false, 8 * F);
      break;
    case LayerKind::Swiglu:
      r = spread(c, F, 2, 4, exp_c + recip_c, 0, false, 5 * F);
      break;
    case LayerKind::Attention:
      r = attention(c, l, m, context);
      break;
  }
  r.bound = compiler::bound_of(r.work, target);
  return r;
}

}  // namespace wafersim::models::resident
