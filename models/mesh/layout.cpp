#include "models/mesh/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::models::mesh {
using compiler::Span;
using compiler::split;

std::uint64_t DecoderShape::layer_parameters() const {
  const std::uint64_t kv = kv_heads * head_dim;
  return d * (d + 2 * kv) + d * d + 3 * d * ff + 2 * d;
}

std::uint64_t DecoderShape::parameters() const { return layers * layer_parameters() + 2 * vocabulary * d + d; }

DecoderShape decoder_shape(const ModelSpec& m) {
  if (!m.transformer)
    throw sim::InputError(
        fmt::format("model '{}': the mesh placement takes a transformer (a `transformer:` section)", m.name));
  const TransformerConfig& t = *m.transformer;
  auto refuse = [&](const std::string& what) {
    throw sim::InputError(fmt::format(
        "model '{}': the mesh placement covers Llama-style decoders (RMSNorm, SwiGLU, no biases, rotary or no "
        "positions, untied head, sequential residuals, causal attention); this one has {}",
        m.name, what));
  };
  if (t.norm != "rmsnorm") refuse("norm: " + t.norm);
  if (t.activation != "swiglu") refuse("activation: " + t.activation);
  if (t.bias) refuse("biases");
  if (t.positions == "learned") refuse("learned positions");
  if (t.tied_embeddings) refuse("a head tied to the embedding");
  if (t.parallel_residual) refuse("parallel residuals");
  if (!t.causal) refuse("attention without the causal mask");
  DecoderShape s;
  s.d = t.d_model;
  s.heads = t.heads;
  s.kv_heads = t.kv_heads ? t.kv_heads : t.heads;
  if (s.d % s.heads || s.heads % s.kv_heads) refuse("heads that do not divide d_model or each other");
  s.head_dim = s.d / s.heads;
  s.ff = t.d_ff ? t.d_ff : 4 * t.d_model;
  s.vocabulary = t.vocabulary;
  s.layers = t.layers;
  s.capacity = m.sequence;
  s.dtype = m.dtype;
  if (s.dtype == models::DType::FP32) refuse("fp32 weights (the mesh kernels take 16-bit ones)");
  for (const auto& l : m.layers)
    if (l.kind == LayerKind::RmsNorm) {
      s.epsilon = l.epsilon;
      break;
    }
  return s;
}

TileSizes tile_sizes(const DecoderShape& s, std::uint32_t rows, std::uint32_t columns) {
  auto up = [](std::uint64_t a, std::uint64_t b) { return static_cast<std::uint32_t>((a + b - 1) / b); };
  TileSizes t;
  t.kc = up(s.d, columns);
  // The shortest segment of rows (rows / kv_heads, rounded down) holds the most dimensions.
  t.nd = up(s.head_dim, rows / s.kv_heads);
  t.nq = static_cast<std::uint32_t>(s.group_heads()) * t.nd;
  t.nqkv = t.nq + 2 * t.nd;
  t.nf = up(s.ff, rows);
  t.nv = up(s.vocabulary, rows);
  t.slots = up(s.capacity, columns);
  return t;
}

MeshLayout::MeshLayout(const DecoderShape& shape, const Region& region, std::uint32_t layers, bool embedding, bool head,
                       std::uint32_t stage, std::uint32_t align, std::uint32_t sram_bytes)
    : s_(shape), region_(region), layers_(layers), embedding_(embedding), head_(head), sram_bytes_(sram_bytes) {
  if (region.rows < shape.kv_heads) throw std::logic_error("MeshLayout: fewer rows than key/value heads");
  esize_ = bytes_of(shape.dtype);
  for (std::uint64_t g = 0; g < shape.kv_heads; ++g)
    seg_starts_.push_back(static_cast<std::uint32_t>(split(region.rows, shape.kv_heads, g).lo));
  const TileSizes t = tile_sizes(shape, region.rows, region.columns);
  kc_max = t.kc;
  nd_max = t.nd;
  nq_max = t.nq;
  nqkv_max = t.nqkv;
  nf_max = t.nf;
  nv_max = t.nv;
  slots_max = t.slots;
  rows_ = LineFamily::whole(Axis::Row, region.columns, stage, LineColors{{0, 1}, {2, 3}, 4});
  columns_ = LineFamily::whole(Axis::Column, region.rows, stage, LineColors{{5, 6}, {7, 8}, 9});
  segments_ = LineFamily::segmented(Axis::Column, region.rows, seg_starts_, stage, LineColors{{10, 11}, {12, 13}, 14});
  a_ = plan_addrs(shape, t, layers, embedding, head, align);
  align_ = align;
  // On a rectangle no more than twice as long as wide, the longer lines' ring takes as many
  // positions as the shorter lines have PEs (units of one or two PEs, ring.h).
  const std::uint32_t n = std::min(region.rows, region.columns);
  const bool units = gemm_runs_on(region.rows, region.columns);
  column_ring_ = Ring(Axis::Column, region.rows, units ? n : region.rows, {15, 16, 17, 18}, kPairColor);
  row_ring_ = Ring(Axis::Row, region.columns, units ? n : region.columns, {19, 20, 21, 22}, kPairColor);
}

bool gemm_runs_on(std::uint32_t rows, std::uint32_t columns) {
  const std::uint32_t n = std::min(rows, columns);
  return rows == columns || (n >= 2 && std::max(rows, columns) <= 2ull * n);
}

std::uint32_t MeshLayout::gemm_n() const {
  const std::uint32_t n = gemm_positions();
  if (n == 0) throw std::logic_error("MeshGEMM takes a region at most twice as long as wide");
  return n;
}

Span MeshLayout::col_features(std::uint32_t c) const { return split(s_.d, region_.columns, c); }

std::uint32_t MeshLayout::kv_group(std::uint32_t r) const {
  const auto it = std::upper_bound(seg_starts_.begin(), seg_starts_.end(), r);
  return static_cast<std::uint32_t>(it - seg_starts_.begin()) - 1;
}

Span MeshLayout::row_dims(std::uint32_t r) const {
  const std::uint32_t g = kv_group(r);
  const std::uint64_t seg = split(region_.rows, s_.kv_heads, g).size();
  return split(s_.head_dim, seg, r - seg_starts_[g]);
}

std::vector<std::uint64_t> MeshLayout::q_indices(std::uint32_t r) const {
  const std::uint64_t g = kv_group(r), hq = s_.group_heads();
  const Span dims = row_dims(r);
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = 0; i < hq; ++i)
    for (std::uint64_t dd = dims.lo; dd < dims.hi; ++dd) v.push_back((g * hq + i) * s_.head_dim + dd);
  return v;
}

std::vector<std::uint64_t> MeshLayout::qkv_indices(std::uint32_t r) const {
  // Indices into the concatenation [q (heads x hd) | k (kv x hd) | v (kv x hd)].
  std::vector<std::uint64_t> v = q_indices(r);
  const std::uint64_t g = kv_group(r), q = s_.heads * s_.head_dim, kv = s_.kv_heads * s_.head_dim;
  const Span dims = row_dims(r);
  for (std::uint64_t dd = dims.lo; dd < dims.hi; ++dd) v.push_back(q + g * s_.head_dim + dd);
  for (std::uint64_t dd = dims.lo; dd < dims.hi; ++dd) v.push_back(q + kv + g * s_.head_dim + dd);
  return v;
}

Span MeshLayout::row_ff(std::uint32_t r) const { return split(s_.ff, region_.rows, r); }
Span MeshLayout::row_vocab(std::uint32_t r) const { return split(s_.vocabulary, region_.rows, r); }

std::uint32_t MeshLayout::slots(std::uint32_t c, std::uint64_t n) const {
  return n > c ? static_cast<std::uint32_t>((n - 1 - c) / region_.columns + 1) : 0;
}

PrefillBlockBytes prefill_block_bytes(const DecoderShape& s, const TileSizes& t, std::uint64_t tokens,
                                      std::uint32_t n) {
  const std::uint64_t block = (tokens + n - 1) / n, e = bytes_of(s.dtype);
  const std::uint64_t k = std::max({t.kc, t.nq, t.nf}), o = std::max({t.nqkv, 2 * t.nf, t.kc});
  return {block * k * e, block * o * 4, block * t.kc * e};
}

std::uint32_t prefill_bytes(const DecoderShape& s, const TileSizes& t, std::uint64_t tokens, std::uint32_t n,
                            std::uint32_t align) {
  if (!tokens || !n) return 0;
  const PrefillBlockBytes b = prefill_block_bytes(s, t, tokens, n);
  auto up = [&](std::uint64_t v) { return (v + align - 1) / align * align; };
  return static_cast<std::uint32_t>(2 * up(b.x) + 2 * up(b.acc) + up(b.residual));
}

PrefillBuffers prefill_buffers(const Addrs& a, std::uint64_t x, std::uint64_t acc, std::uint64_t residual,
                               std::uint32_t align, std::uint32_t sram_bytes) {
  auto up = [&](std::uint64_t b) { return static_cast<std::uint32_t>((b + align - 1) / align * align); };
  PrefillBuffers p;
  p.x_bytes = up(x);
  p.acc_bytes = up(acc);
  std::array<std::uint32_t*, 5> at{&p.x[0], &p.x[1], &p.acc[0], &p.acc[1], &p.residual};
  const std::array<std::uint32_t, 5> bytes{p.x_bytes, p.x_bytes, p.acc_bytes, p.acc_bytes, up(residual)};
  std::array<bool, 5> placed{};
  const std::uint64_t all = std::uint64_t{bytes[0]} + bytes[1] + bytes[2] + bytes[3] + bytes[4];
  if (a.logits_bytes && a.end + all > sram_bytes) {
    std::array<std::size_t, 5> order{0, 1, 2, 3, 4};
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return bytes[i] > bytes[j]; });
    for (std::size_t i : order)
      if (bytes[i] && a.logits_bytes - p.in_logits >= bytes[i]) {
        *at[i] = a.logits + p.in_logits;
        p.in_logits += bytes[i];
        placed[i] = true;
      }
  }
  p.end = a.end;
  for (std::size_t i = 0; i < at.size(); ++i)
    if (!placed[i]) {
      *at[i] = p.end;
      p.end += bytes[i];
    }
  return p;
}

std::uint32_t prefill_end(const Addrs& a, const DecoderShape& s, const TileSizes& t, std::uint64_t tokens,
                          std::uint32_t n, std::uint32_t align, std::uint32_t sram_bytes) {
  if (!tokens || !n) return a.end;
  const PrefillBlockBytes b = prefill_block_bytes(s, t, tokens, n);
  return prefill_buffers(a, b.x, b.acc, b.residual, align, sram_bytes).end;
}

Addrs plan_addrs(const DecoderShape& s, const TileSizes& t, std::uint32_t layers, bool embedding, bool head,
                 std::uint32_t align) {
  Addrs a;
  std::uint32_t at = 0;
  auto take = [&](std::uint64_t bytes) {
    const std::uint32_t here = at;
    at += static_cast<std::uint32_t>((bytes + align - 1) / align * align);
    return here;
  };
  const std::uint64_t e = bytes_of(s.dtype);
  for (std::uint32_t l = 0; l < layers; ++l) {
    LayerAddrs L;
    L.wqkv = take(std::uint64_t{t.kc} * t.nqkv * e);
    L.wo = take(std::uint64_t{t.nq} * t.kc * e);
    L.wgu = take(std::uint64_t{t.kc} * 2 * t.nf * e);
    L.wd = take(std::uint64_t{t.nf} * t.kc * e);
    L.g1 = take(std::uint64_t{t.kc} * 4);
    L.g2 = take(std::uint64_t{t.kc} * 4);
    a.layers.push_back(L);
  }
  if (embedding) a.emb = take(std::uint64_t{t.nv} * t.kc * e);
  if (head) {
    a.head = take(std::uint64_t{t.kc} * t.nv * e);
    a.gf = take(std::uint64_t{t.kc} * 4);
  }
  a.weights = at;
  for (std::uint32_t l = 0; l < layers; ++l) {
    a.layers[l].kc = take(std::uint64_t{t.nd} * t.slots * e);
    a.layers[l].vc = take(std::uint64_t{t.nd} * t.slots * 4);
  }
  a.caches = at - a.weights;
  const std::uint32_t act0 = at;
  a.x = take(t.kc * e);
  a.x1 = take(t.kc * e);
  a.xn = take(t.kc * e);
  a.xw = take(std::uint64_t{t.kc} * 4);
  a.qkv = take(t.nqkv * e);
  a.att = take(t.nq * e);
  a.gu = take(2 * t.nf * e);
  a.z = take(t.nf * e);
  if (head) {
    a.logits = take(t.nv * e);
    a.logits_bytes = at - a.logits;
  }
  const std::uint64_t hq = s.group_heads();
  const std::uint64_t acc =
      std::max<std::uint64_t>({t.nqkv, t.kc, 2ull * t.nf, head ? t.nv : 0u, hq * t.slots, std::uint64_t{t.nq}, 1});
  a.acc = take(acc * 4);
  a.sc = take(std::max<std::uint64_t>(hq * t.slots, 1) * 4);
  a.stat = take(2 * hq * 4 + 16);
  a.activations = at - act0;
  a.end = at;
  return a;
}

}  // namespace wafersim::models::mesh
