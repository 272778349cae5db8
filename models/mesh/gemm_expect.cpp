// The host's side of the prefill's MeshGEMM (kernel_gemm.cpp): the input blocks each PE
// starts with, and the fp32 outputs in the order the PEs add them (each partial sum's FMAC
// chain from +0 over the ring positions its block visits, each PE's inputs in order).

#include <cstring>
#include <stdexcept>

#include "models/mesh/kernels.h"
#include "models/mesh/mesh_expect.h"
#include "models/reference/arith.h"

namespace wafersim::models::mesh {
using reference::Arith;
using reference::Format;

std::vector<std::uint64_t> gemm_input_indices(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c) {
  auto span = [](compiler::Span s) {
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = s.lo; i < s.hi; ++i) v.push_back(i);
    return v;
  };
  switch (g) {
    case Gemv::O:
      return l.q_indices(r);
    case Gemv::Down:
      return span(l.row_ff(r));
    default:
      return span(l.col_features(c));
  }
}

std::vector<std::uint64_t> gemm_output_indices(const MeshLayout& l, Gemv g, std::uint32_t r, std::uint32_t c) {
  std::vector<std::uint64_t> v;
  auto add = [&](compiler::Span s, std::uint64_t offset) {
    for (std::uint64_t i = s.lo; i < s.hi; ++i) v.push_back(offset + i);
  };
  switch (g) {
    case Gemv::Qkv:
      return l.qkv_indices(r);
    case Gemv::GateUp:
      add(l.row_ff(r), 0);
      add(l.row_ff(r), l.shape().ff);
      return v;
    case Gemv::Head:
      add(l.row_vocab(r), 0);
      return v;
    default:
      add(l.col_features(c), 0);
      return v;
  }
}

Bits gemm_weight(const DecoderShape& s, const DecoderWeights& w, Gemv g, std::uint32_t layer, std::uint64_t k,
                 std::uint64_t o) {
  const std::uint64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  if (g == Gemv::Head) return w.head.bits(w.head.at(k, o));
  const auto& L = w.layers.at(layer);
  switch (g) {
    case Gemv::Qkv:
      return o < q        ? L.wq.bits(L.wq.at(k, o))
             : o < q + kv ? L.wk.bits(L.wk.at(k, o - q))
                          : L.wv.bits(L.wv.at(k, o - q - kv));
    case Gemv::O:
      return L.wo.bits(L.wo.at(k, o));
    case Gemv::GateUp:
      return o < s.ff ? L.wg.bits(L.wg.at(k, o)) : L.wu.bits(L.wu.at(k, o - s.ff));
    case Gemv::Down:
      return L.wd.bits(L.wd.at(k, o));
    default:
      return 0;
  }
}

GemmPe gemm_pe(const MeshLayout& l, std::uint32_t r, std::uint32_t c) {
  return GemmPe{l.column_ring().position(r), l.row_ring().position(c)};
}

void place_gemm_inputs(std::vector<std::uint8_t>& img, const MeshLayout& l, Gemv g, const GemmAddrs& a,
                       const std::vector<Bits>& x, std::uint64_t tokens, std::uint32_t r, std::uint32_t c) {
  const std::uint32_t N = l.gemm_n(), e = l.esize();
  const std::uint64_t in = gemv_shape(l.shape(), g).in;
  if (x.size() != tokens * in) throw std::logic_error("place_gemm_inputs: tokens x inputs values");
  if (img.size() < a.end) img.resize(a.end, 0);
  const GemmPe pe = gemm_pe(l, r, c);
  const std::uint64_t j = (pe.a + pe.b) % N;
  const std::vector<std::uint64_t> ks = gemm_input_indices(l, g, r, c);
  for (std::uint32_t t = 0; t < a.block; ++t) {
    const std::uint64_t token = j * a.block + t;
    if (token >= tokens) break;
    for (std::size_t i = 0; i < ks.size(); ++i) {
      const auto u = static_cast<std::uint32_t>(x[token * in + ks[i]]);
      std::memcpy(img.data() + a.x[0] + (t * a.kmax + i) * e, &u, e);
    }
  }
}

std::vector<Bits> expect_gemm(const MeshLayout& l, const DecoderWeights& w, Gemv g, std::uint32_t layer,
                              const std::vector<Bits>& x, std::uint64_t tokens) {
  const std::uint32_t kmax = gemm_addrs(l, g, tokens, l.align()).kmax;
  const DecoderShape& s = l.shape();
  const Format f = reference::format_of(s.dtype);
  const Arith Acc(Format::FP32);
  const std::uint32_t N = l.gemm_n();
  const GemvShape shape = gemv_shape(s, g);
  const bool along_rows = reduces_along_rows(g);
  const Ring& visit = along_rows ? l.row_ring() : l.column_ring();
  const std::uint64_t block = (tokens + N - 1) / N;
  std::vector<Bits> y(tokens * shape.out, 0);
  // Line `line` of the partial sums' ring family (a row for products reduced along rows).
  const std::uint32_t lines = along_rows ? l.region().rows : l.region().columns;
  for (std::uint32_t line = 0; line < lines; ++line) {
    const std::uint32_t a = along_rows ? l.column_ring().position(line) : l.row_ring().position(line);
    const std::vector<std::uint64_t> outs =
        along_rows ? gemm_output_indices(l, g, line, 0) : gemm_output_indices(l, g, 0, line);
    for (std::uint64_t token = 0; token < tokens; ++token) {
      const std::uint64_t j = token / block;
      for (std::uint64_t o : outs) {
        // PE `at`'s FMACs of the token onto `acc`: its inputs in order, then the busiest PE's
        // inputs beyond its own (zero weights and inputs).
        auto fmacs = [&](std::uint32_t at, Bits acc) {
          const std::vector<std::uint64_t> ks =
              along_rows ? gemm_input_indices(l, g, line, at) : gemm_input_indices(l, g, at, line);
          for (std::uint64_t k : ks)
            acc = Acc.fma(Acc.from(f, gemm_weight(s, w, g, layer, k, o)), Acc.from(f, x[token * shape.in + k]), acc);
          for (std::size_t k = ks.size(); k < kmax; ++k) acc = Acc.fma(Arith::kZero, Arith::kZero, acc);
          return acc;
        };
        Bits acc = Arith::kZero;
        for (std::uint32_t step = 0; step < N; ++step) {
          const std::uint32_t pos = static_cast<std::uint32_t>((j + 2ull * N - a - step) % N);
          const std::uint32_t sender = visit.index(pos);
          acc = fmacs(sender, acc);
          if (visit.members(pos) == 2)  // the other member's sums, from zero, added by the sender
            acc = Acc.add(acc, fmacs(sender == visit.first(pos) ? sender + 1 : sender - 1, Arith::kZero));
        }
        y[token * shape.out + o] = acc;
      }
    }
  }
  return y;
}

}  // namespace wafersim::models::mesh
