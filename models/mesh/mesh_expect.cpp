#include "models/mesh/mesh_expect.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "models/compiler/elementwise.h"
#include "models/mesh/kernels.h"
#include "models/reference/arith.h"

namespace wafersim::models::mesh {
using reference::Arith;
using reference::Format;
using reference::Tensor;

namespace {

Tensor matrix(Format f, std::uint64_t rows, std::uint64_t cols, double scale, std::uint64_t seed) {
  return Tensor::uniform(f, Shape{1, rows, cols}, -scale, scale, seed);
}

Tensor vector_of(Format f, std::uint64_t n, double lo, double hi, std::uint64_t seed) {
  return Tensor::uniform(f, Shape{1, 1, n}, lo, hi, seed);
}

// The arithmetic of the PEs: fp32 (Acc) and the model's format (St).
struct Ar {
  explicit Ar(Format storage) : St(storage), Acc(Format::FP32), f(storage) {}
  Arith St, Acc;
  Format f;
  [[nodiscard]] Bits widen(Bits b) const { return Acc.from(f, b); }
  [[nodiscard]] Bits round(Bits b) const { return St.from(Format::FP32, b); }
};

constexpr Bits kNegZero = 0x80000000u;
constexpr Bits kNegInf = 0xFF800000u;

// y[n] for the outputs `out` of a product reduced along `tree`: part i of the line is the
// fp32 FMAC chain from +0 over inputs(i) in order, then the tree's adds; rounded once.
template <class Inputs, class Weight>
std::vector<Bits> product(const Ar& A, const LineTree& tree, const std::vector<Bits>& x, const Inputs& inputs,
                          const Weight& weight, std::uint64_t n_out) {
  std::vector<Bits> y(n_out);
  std::vector<std::uint64_t> parts(tree.length);
  for (std::uint64_t o = 0; o < n_out; ++o) {
    for (std::uint32_t i = 0; i < tree.length; ++i) {
      Bits acc = Arith::kZero;
      for (std::uint64_t k : inputs(i)) acc = A.Acc.fma(A.widen(weight(k, o)), A.widen(x[k]), acc);
      parts[i] = acc;
    }
    y[o] = A.round(tree_reduce(tree, parts, [&](std::uint64_t a, std::uint64_t b) { return A.Acc.add(a, b); }));
  }
  return y;
}

std::vector<std::uint64_t> span_list(compiler::Span s) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = s.lo; i < s.hi; ++i) v.push_back(i);
  return v;
}

std::vector<Bits> rmsnorm(const Ar& A, const MeshLayout& l, const std::vector<Bits>& x, const Tensor& gamma) {
  const LineTree& tree = l.rows().trees[0];
  std::vector<std::uint64_t> parts(tree.length);
  for (std::uint32_t c = 0; c < tree.length; ++c) {
    Bits acc = Arith::kZero;
    for (std::uint64_t k : span_list(l.col_features(c))) acc = A.Acc.fma(A.widen(x[k]), A.widen(x[k]), acc);
    parts[c] = acc;
  }
  const Bits sum = tree_reduce(tree, parts, [&](std::uint64_t a, std::uint64_t b) { return A.Acc.add(a, b); });
  const Bits inv_d = A.Acc.of(1.0 / static_cast<double>(l.shape().d)), eps = A.Acc.of(l.shape().epsilon);
  const Bits rstd = A.Acc.rsqrt(A.Acc.add(A.Acc.mul(sum, inv_d), eps));
  std::vector<Bits> y(x.size());
  for (std::size_t j = 0; j < x.size(); ++j)
    y[j] = A.round(A.Acc.mul(A.Acc.mul(A.widen(x[j]), rstd), A.widen(gamma.bits(j))));
  return y;
}

std::vector<Bits> residual(const Ar& A, const std::vector<Bits>& x, const std::vector<Bits>& h) {
  std::vector<Bits> y(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) y[j] = A.St.add(x[j], h[j]);
  return y;
}

// Attention of the token at `t` over positions [0, t] (the cache holds the token's k, v).
std::vector<Bits> attention(const Ar& A, const MeshLayout& l, const std::vector<Bits>& qkv, const Tensor& K,
                            const Tensor& V, std::uint64_t t) {
  const DecoderShape& s = l.shape();
  const std::uint64_t hd = s.head_dim, hq = s.group_heads(), C = l.region().columns;
  const LineTree& row_tree = l.rows().trees[0];
  auto add = [&](std::uint64_t a, std::uint64_t b) { return A.Acc.add(a, b); };
  auto fmax = [&](std::uint64_t a, std::uint64_t b) { return A.Acc.max(a, b); };
  const Bits scale = A.Acc.of(1.0 / std::sqrt(static_cast<double>(hd)));
  std::vector<Bits> att(s.heads * hd);
  for (std::uint64_t h = 0; h < s.heads; ++h) {
    const std::uint32_t g = static_cast<std::uint32_t>(h / hq);
    const std::uint32_t seg0 = l.segments().starts[g];
    const LineTree& seg = l.segments().trees[g];
    std::vector<Bits> score(t + 1);
    for (std::uint64_t p = 0; p <= t; ++p) {
      std::vector<std::uint64_t> parts(seg.length);
      for (std::uint32_t j = 0; j < seg.length; ++j) {
        const compiler::Span dims = l.row_dims(seg0 + j);
        Bits acc = dims.empty() ? kNegZero : Arith::kZero;
        for (std::uint64_t d = dims.lo; d < dims.hi; ++d)
          acc = A.Acc.fma(A.widen(K.bits(K.at(p, g * hd + d))), A.widen(qkv[h * hd + d]), acc);
        parts[j] = acc;
      }
      score[p] = A.Acc.mul(tree_reduce(seg, parts, add), scale);
    }
    // Per column: its positions c, c + C, ... in slot order.
    auto column_reduce = [&](Bits start, Bits empty, auto step) {
      std::vector<std::uint64_t> parts(C);
      for (std::uint64_t c = 0; c < C; ++c) {
        Bits acc = c <= t ? start : empty;
        for (std::uint64_t p = c; p <= t; p += C) acc = step(acc, p);
        parts[c] = acc;
      }
      return parts;
    };
    const Bits m = tree_reduce(
        row_tree, column_reduce(kNegInf, kNegInf, [&](Bits a, std::uint64_t p) { return A.Acc.max(a, score[p]); }),
        fmax);
    std::vector<Bits> e(t + 1);
    for (std::uint64_t p = 0; p <= t; ++p) e[p] = A.Acc.exp(A.Acc.sub(score[p], m));
    const Bits sum = tree_reduce(
        row_tree, column_reduce(Arith::kZero, kNegZero, [&](Bits a, std::uint64_t p) { return A.Acc.add(a, e[p]); }),
        add);
    const Bits inv = A.Acc.recip(sum);
    std::vector<Bits> prob(t + 1);
    for (std::uint64_t p = 0; p <= t; ++p) prob[p] = A.Acc.mul(e[p], inv);
    for (std::uint64_t d = 0; d < hd; ++d) {
      const Bits o = tree_reduce(row_tree,
                                 column_reduce(Arith::kZero, kNegZero,
                                               [&](Bits a, std::uint64_t p) {
                                                 return A.Acc.fma(prob[p], A.widen(V.bits(V.at(p, g * hd + d))), a);
                                               }),
                                 add);
      att[h * hd + d] = A.round(o);
    }
  }
  return att;
}

}  // namespace

DecoderWeights random_weights(const DecoderShape& s, std::uint32_t layers, std::uint64_t seed) {
  const Format f = reference::format_of(s.dtype);
  const std::uint64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  auto sc = [](std::uint64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); };
  DecoderWeights w;
  std::uint64_t k = seed * 1000;
  for (std::uint32_t i = 0; i < layers; ++i) {
    DecoderWeights::Layer L;
    L.wq = matrix(f, s.d, q, sc(s.d), ++k);
    L.wk = matrix(f, s.d, kv, sc(s.d), ++k);
    L.wv = matrix(f, s.d, kv, sc(s.d), ++k);
    L.wo = matrix(f, q, s.d, sc(q), ++k);
    L.wg = matrix(f, s.d, s.ff, sc(s.d), ++k);
    L.wu = matrix(f, s.d, s.ff, sc(s.d), ++k);
    L.wd = matrix(f, s.ff, s.d, sc(s.ff), ++k);
    L.g1 = vector_of(f, s.d, 0.5, 1.5, ++k);
    L.g2 = vector_of(f, s.d, 0.5, 1.5, ++k);
    w.layers.push_back(std::move(L));
  }
  w.emb = matrix(f, s.vocabulary, s.d, 1.0, ++k);
  w.head = matrix(f, s.d, s.vocabulary, sc(s.d), ++k);
  w.gf = vector_of(f, s.d, 0.5, 1.5, ++k);
  return w;
}

DecoderCache random_cache(const DecoderShape& s, std::uint32_t layers, std::uint64_t filled, std::uint64_t seed) {
  const Format f = reference::format_of(s.dtype);
  const std::uint64_t kv = s.kv_heads * s.head_dim;
  DecoderCache c;
  for (std::uint32_t i = 0; i < layers; ++i) {
    Tensor k(f, Shape{1, s.capacity, kv}), v(f, Shape{1, s.capacity, kv});
    const Tensor rk = matrix(f, std::max<std::uint64_t>(filled, 1), kv, 1.0, seed * 7919 + 2 * i);
    const Tensor rv = matrix(f, std::max<std::uint64_t>(filled, 1), kv, 1.0, seed * 7919 + 2 * i + 1);
    for (std::uint64_t p = 0; p < filled; ++p)
      for (std::uint64_t j = 0; j < kv; ++j) {
        k.set_bits(k.at(p, j), rk.bits(rk.at(p, j)));
        v.set_bits(v.at(p, j), rv.bits(rv.at(p, j)));
      }
    c.k.push_back(std::move(k));
    c.v.push_back(std::move(v));
  }
  return c;
}

std::vector<std::uint8_t> pe_image(const MeshLayout& l, const DecoderWeights& w, const DecoderCache& cache,
                                   std::uint64_t filled, const std::vector<Bits>& x, std::uint32_t r, std::uint32_t c) {
  const Addrs& a = l.addrs();
  const DecoderShape& s = l.shape();
  const std::uint32_t e = l.esize();
  const Format f = reference::format_of(s.dtype);
  const Arith Acc(Format::FP32);
  std::vector<std::uint8_t> img(a.end, 0);
  auto put = [&](std::uint64_t addr, Bits v, std::uint32_t bytes) {
    const auto u = static_cast<std::uint32_t>(v);
    std::memcpy(img.data() + addr, &u, bytes);
  };
  const compiler::Span cf = l.col_features(c), ff = l.row_ff(r), voc = l.row_vocab(r);
  const std::vector<std::uint64_t> qkv = l.qkv_indices(r), qi = l.q_indices(r);
  const std::uint64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  for (std::uint32_t i = 0; i < l.layers(); ++i) {
    const auto& L = w.layers.at(i);
    const LayerAddrs& la = a.layers[i];
    auto wqkv = [&](std::uint64_t k, std::uint64_t o) {
      return o < q        ? L.wq.bits(L.wq.at(k, o))
             : o < q + kv ? L.wk.bits(L.wk.at(k, o - q))
                          : L.wv.bits(L.wv.at(k, o - q - kv));
    };
    for (std::uint64_t k = 0; k < cf.size(); ++k) {
      for (std::size_t n = 0; n < qkv.size(); ++n) put(la.wqkv + (k * l.nqkv_max + n) * e, wqkv(cf.lo + k, qkv[n]), e);
      for (std::uint64_t n = 0; n < ff.size(); ++n) {
        put(la.wgu + (k * 2 * l.nf_max + n) * e, L.wg.bits(L.wg.at(cf.lo + k, ff.lo + n)), e);
        put(la.wgu + (k * 2 * l.nf_max + ff.size() + n) * e, L.wu.bits(L.wu.at(cf.lo + k, ff.lo + n)), e);
      }
      put(la.g1 + k * 4, Acc.from(f, L.g1.bits(cf.lo + k)), 4);
      put(la.g2 + k * 4, Acc.from(f, L.g2.bits(cf.lo + k)), 4);
    }
    for (std::size_t k = 0; k < qi.size(); ++k)
      for (std::uint64_t n = 0; n < cf.size(); ++n)
        put(la.wo + (k * l.kc_max + n) * e, L.wo.bits(L.wo.at(qi[k], cf.lo + n)), e);
    for (std::uint64_t k = 0; k < ff.size(); ++k)
      for (std::uint64_t n = 0; n < cf.size(); ++n)
        put(la.wd + (k * l.kc_max + n) * e, L.wd.bits(L.wd.at(ff.lo + k, cf.lo + n)), e);
    const compiler::Span dims = l.row_dims(r);
    const std::uint64_t g = l.kv_group(r);
    for (std::uint64_t p = c; p < filled; p += l.region().columns) {
      const std::uint64_t slot = p / l.region().columns;
      for (std::uint64_t d = 0; d < dims.size(); ++d) {
        const std::uint64_t j = g * s.head_dim + dims.lo + d;
        put(la.kc + (d * l.slots_max + slot) * e, cache.k[i].bits(cache.k[i].at(p, j)), e);
        put(la.vc + (d * l.slots_max + slot) * 4, Acc.from(f, cache.v[i].bits(cache.v[i].at(p, j))), 4);
      }
    }
  }
  if (l.embedding())
    for (std::uint64_t v = voc.lo; v < voc.hi; ++v)
      for (std::uint64_t k = 0; k < cf.size(); ++k)
        put(a.emb + ((v - voc.lo) * l.kc_max + k) * e, w.emb.bits(w.emb.at(v, cf.lo + k)), e);
  if (l.head()) {
    for (std::uint64_t k = 0; k < cf.size(); ++k) {
      for (std::uint64_t n = 0; n < voc.size(); ++n)
        put(a.head + (k * l.nv_max + n) * e, w.head.bits(w.head.at(cf.lo + k, voc.lo + n)), e);
      put(a.gf + k * 4, Acc.from(f, w.gf.bits(cf.lo + k)), 4);
    }
  }
  if (!x.empty())
    for (std::uint64_t k = 0; k < cf.size(); ++k) put(a.x + k * e, x[cf.lo + k], e);
  return img;
}

DecodeResult expect_decode(const MeshLayout& l, const DecoderWeights& w, DecoderCache cache, std::uint64_t token,
                           std::uint64_t position, std::uint32_t simulated, std::vector<Bits> x) {
  const DecoderShape& s = l.shape();
  const Ar A(reference::format_of(s.dtype));
  const std::uint64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  const std::uint32_t R = l.region().rows, C = l.region().columns;
  if (l.embedding()) {
    x.assign(s.d, 0);
    for (std::uint64_t j = 0; j < s.d; ++j) x[j] = w.emb.bits(w.emb.at(token, j));
  }
  if (x.size() != s.d) throw std::logic_error("expect_decode: the residual stream has d_model values");
  DecodeResult out;
  const LineTree& rows = l.rows().trees[0];
  const LineTree& cols = l.columns().trees[0];
  auto col_inputs = [&](std::uint32_t c) { return span_list(l.col_features(c)); };
  for (std::uint32_t i = 0; i < simulated; ++i) {
    const auto& L = w.layers.at(i);
    DecodeResult::Layer r;
    r.xn1 = rmsnorm(A, l, x, L.g1);
    r.qkv = product(
        A, rows, r.xn1, col_inputs,
        [&](std::uint64_t k, std::uint64_t o) {
          return o < q        ? L.wq.bits(L.wq.at(k, o))
                 : o < q + kv ? L.wk.bits(L.wk.at(k, o - q))
                              : L.wv.bits(L.wv.at(k, o - q - kv));
        },
        q + 2 * kv);
    for (std::uint64_t j = 0; j < kv; ++j) {
      cache.k[i].set_bits(cache.k[i].at(position, j), r.qkv[q + j]);
      cache.v[i].set_bits(cache.v[i].at(position, j), r.qkv[q + kv + j]);
    }
    r.att = attention(A, l, r.qkv, cache.k[i], cache.v[i], position);
    const std::vector<Bits> h = product(
        A, cols, r.att, [&](std::uint32_t row) { return l.q_indices(row); },
        [&](std::uint64_t k, std::uint64_t o) { return L.wo.bits(L.wo.at(k, o)); }, s.d);
    r.x1 = residual(A, x, h);
    r.xn2 = rmsnorm(A, l, r.x1, L.g2);
    const std::vector<Bits> gate = product(
        A, rows, r.xn2, col_inputs, [&](std::uint64_t k, std::uint64_t o) { return L.wg.bits(L.wg.at(k, o)); }, s.ff);
    const std::vector<Bits> up = product(
        A, rows, r.xn2, col_inputs, [&](std::uint64_t k, std::uint64_t o) { return L.wu.bits(L.wu.at(k, o)); }, s.ff);
    std::vector<std::uint32_t> g32(gate.begin(), gate.end()), u32(up.begin(), up.end()), z32;
    compiler::run_elementwise(compiler::elementwise_forward(LayerKind::Swiglu), reference::hw_dtype(A.f),
                              {&g32, &u32, &z32});
    r.z.assign(z32.begin(), z32.end());
    const std::vector<Bits> dn = product(
        A, cols, r.z, [&](std::uint32_t row) { return span_list(l.row_ff(row)); },
        [&](std::uint64_t k, std::uint64_t o) { return L.wd.bits(L.wd.at(k, o)); }, s.d);
    x = residual(A, r.x1, dn);
    r.x = x;
    out.layers.push_back(std::move(r));
  }
  if (l.head()) {
    const std::vector<Bits> xn = rmsnorm(A, l, x, w.gf);
    out.logits = product(
        A, rows, xn, col_inputs, [&](std::uint64_t k, std::uint64_t o) { return w.head.bits(w.head.at(k, o)); },
        s.vocabulary);
  }
  out.cache = std::move(cache);
  (void)R;
  (void)C;
  return out;
}

namespace {

// One pass of the prefill over prompt tokens [base, base + n) through layers [0, simulated):
// the products over the pass's tokens (MeshGEMM's blocks of ceil(n / N)), attention in order
// over the cache the passes before it filled.
void expect_chunk(const Ar& A, const MeshLayout& l, const DecoderWeights& w, DecoderCache& cache,
                  std::vector<std::vector<Bits>>& x, std::uint64_t base, std::uint64_t n, std::uint32_t simulated) {
  const DecoderShape& s = l.shape();
  const std::uint64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  // Product g of the pass's inputs f(t) (n each), its outputs rounded: [t - base][output].
  auto gemm = [&](Gemv g, std::uint32_t layer, const auto& f) {
    const GemvShape sh = gemv_shape(s, g);
    std::vector<Bits> in;
    for (std::uint64_t t = base; t < base + n; ++t) {
      const std::vector<Bits> v = f(t);
      in.insert(in.end(), v.begin(), v.end());
    }
    const std::vector<Bits> y = expect_gemm(l, w, g, layer, in, n);
    std::vector<std::vector<Bits>> r(n, std::vector<Bits>(sh.out));
    for (std::uint64_t t = 0; t < n; ++t)
      for (std::uint64_t o = 0; o < sh.out; ++o) r[t][o] = A.round(y[t * sh.out + o]);
    return r;
  };
  for (std::uint32_t i = 0; i < simulated; ++i) {
    const auto& L = w.layers.at(i);
    Tensor& K = cache.k[i];
    Tensor& V = cache.v[i];
    const auto qkv = gemm(Gemv::Qkv, i, [&](std::uint64_t t) { return rmsnorm(A, l, x[t], L.g1); });
    std::vector<std::vector<Bits>> att(n);
    for (std::uint64_t k = 0; k < n; ++k) {  // in order: token base + k sees positions [0, base + k]
      const std::uint64_t t = base + k;
      for (std::uint64_t j = 0; j < kv; ++j) {
        K.set_bits(K.at(t, j), qkv[k][q + j]);
        V.set_bits(V.at(t, j), qkv[k][q + kv + j]);
      }
      att[k] = attention(A, l, qkv[k], K, V, t);
    }
    const auto o = gemm(Gemv::O, i, [&](std::uint64_t t) { return att[t - base]; });
    std::vector<std::vector<Bits>> x1(n);
    for (std::uint64_t k = 0; k < n; ++k) x1[k] = residual(A, x[base + k], o[k]);
    const auto gu = gemm(Gemv::GateUp, i, [&](std::uint64_t t) { return rmsnorm(A, l, x1[t - base], L.g2); });
    const auto dn = gemm(Gemv::Down, i, [&](std::uint64_t t) {
      const auto& v = gu[t - base];
      std::vector<std::uint32_t> g32(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(s.ff));
      std::vector<std::uint32_t> u32(v.begin() + static_cast<std::ptrdiff_t>(s.ff), v.end()), z32;
      compiler::run_elementwise(compiler::elementwise_forward(LayerKind::Swiglu), reference::hw_dtype(A.f),
                                {&g32, &u32, &z32});
      return std::vector<Bits>(z32.begin(), z32.end());
    });
    for (std::uint64_t k = 0; k < n; ++k) x[base + k] = residual(A, x1[k], dn[k]);
  }
}

}  // namespace

PrefillResult expect_prefill(const MeshLayout& l, const DecoderWeights& w, const std::vector<std::uint64_t>& prompt,
                             std::uint32_t simulated, std::uint64_t chunk) {
  const DecoderShape& s = l.shape();
  const Ar A(reference::format_of(s.dtype));
  const std::uint64_t P = prompt.size();
  if (!l.embedding()) throw std::logic_error("expect_prefill: the layout holds the embedding");
  PrefillResult out;
  out.cache = random_cache(s, l.layers(), 0, 0);
  std::vector<std::vector<Bits>> x(P, std::vector<Bits>(s.d));
  for (std::uint64_t t = 0; t < P; ++t)
    for (std::uint64_t j = 0; j < s.d; ++j) x[t][j] = w.emb.bits(w.emb.at(prompt[t], j));
  // The passes of the prompt: chunks of `chunk` tokens, each through every layer in turn.
  const std::uint64_t per = chunk == 0 || chunk > P ? P : chunk;
  for (std::uint64_t base = 0; base < P; base += per)
    expect_chunk(A, l, w, out.cache, x, base, std::min(per, P - base), simulated);
  out.x = std::move(x);
  return out;
}

}  // namespace wafersim::models::mesh
