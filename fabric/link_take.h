#pragma once
// The take-in of a router's four link inputs under XY routing over 1-cycle hops (Mesh::process):
// which of the wavelets that arrived may be granted on arrival, and where they go. Two forms with
// the same results, AVX2 lanes where the build targets them (x86-64-v3) and scalar code
// otherwise; take_links() is the one the build has.

#include <cstdint>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "fabric/flit.h"
#include "fabric/port.h"

namespace wafersim::fabric {

// The output (a port index) that XY routing takes at the router at (x, y) for a packet whose
// head carries `payload`: east or west until the column is reached, then south or north, then
// the ramp.
constexpr std::uint32_t xy_route(std::uint32_t x, std::uint32_t y, std::uint32_t payload) {
  const std::uint32_t dx = destination_x(payload), dy = destination_y(payload);
  if (dx > x) return index(Port::East);
  if (dx < x) return index(Port::West);
  if (dy > y) return index(Port::South);
  if (dy < y) return index(Port::North);
  return index(Port::Ramp);
}

// xy_route() for a wavelet that arrived at link input kIn, in selects rather than branches. It
// came by XY routing, heading away from kIn: from the north (0) it goes on south or ejects, from
// the south (2) north or ejects, from the west (3) east until its column is reached, from the
// east (1) west likewise; then by the row.
template <std::uint32_t kIn>
inline std::uint32_t xy_route_from(std::uint32_t x, std::uint32_t y, std::uint32_t payload) {
  const std::uint32_t dx = destination_x(payload), dy = destination_y(payload);
  if constexpr (kIn == 0) return dy > y ? 2u : 4u;
  if constexpr (kIn == 2) return dy < y ? 0u : 4u;
  const std::uint32_t vertical = dy > y ? 2u : (dy < y ? 0u : 4u);
  if constexpr (kIn == 3) return dx > x ? 1u : vertical;
  return dx < x ? 3u : vertical;
}

// Contract: `arrived` bit p, color[p] and flit[p] are a router's arrival register for input p
// (links 0 .. 3, the ramp 4; any color and wavelet where nothing arrived), x and y its
// coordinates, nonempty[p] the colors with a wavelet queued at input p. A wavelet that arrived
// over a link came by XY routing (see xy_route_from). A candidate arrived, is a packet of one
// wavelet (head and tail) and finds its color's queue empty: bit p of `ins`. out[p] is the
// output a candidate requests (xy_route; any value for the others); `seen` and `many` are the
// outputs requested by one candidate or more and by two or more. take_links() takes in the four
// links' inputs, take_ramp() then adds the ramp's.
struct LinkTake {
  std::uint32_t ins = 0, seen = 0, many = 0;
};

// Input p's part of the take-in, its output o worked out.
inline __attribute__((always_inline)) void take_input(LinkTake& t, std::uint32_t p, std::uint32_t arrived,
                                                      std::uint32_t c, std::uint32_t info, std::uint64_t nonempty,
                                                      std::uint32_t o, std::uint32_t* out) {
  const std::uint32_t ok = (arrived >> p) & ~static_cast<std::uint32_t>(nonempty >> c) & (info >> 1) & (info >> 2) & 1u;
  const std::uint32_t ob = ok << o;
  t.many |= t.seen & ob;
  t.seen |= ob;
  out[p] = o;
  t.ins |= ok << p;
}

inline __attribute__((always_inline)) LinkTake take_links_scalar(std::uint32_t arrived, std::uint32_t x,
                                                                 std::uint32_t y, const std::uint32_t* color,
                                                                 const Flit* flit, const std::uint64_t* nonempty,
                                                                 std::uint32_t* out) {
  LinkTake t;
  // Every input, arrived or not, without branches: no predictor learns which arrived, which
  // are candidates or where they go, and mispredictions cost more than the work on the others.
  auto take = [&](auto input) __attribute__((always_inline)) {
    constexpr std::uint32_t p = decltype(input)::value;
    take_input(t, p, arrived, color[p], flit[p].info, nonempty[p], xy_route_from<p>(x, y, flit[p].payload), out);
  };
  take(std::integral_constant<std::uint32_t, 0>{});
  take(std::integral_constant<std::uint32_t, 1>{});
  take(std::integral_constant<std::uint32_t, 2>{});
  take(std::integral_constant<std::uint32_t, 3>{});
  return t;
}

// Adds the ramp's input to `t` (its wavelet may go anywhere: xy_route).
inline __attribute__((always_inline)) void take_ramp(LinkTake& t, std::uint32_t arrived, std::uint32_t x,
                                                     std::uint32_t y, const std::uint32_t* color, const Flit* flit,
                                                     const std::uint64_t* nonempty, std::uint32_t* out) {
  constexpr std::uint32_t p = index(Port::Ramp);
  take_input(t, p, arrived, color[p], flit[p].info, nonempty[p], xy_route(x, y, flit[p].payload), out);
}

#if defined(__AVX2__)
// One input per lane; the outputs by xy_route (coordinates have 16 bits: signed comparisons serve).
inline __attribute__((always_inline)) LinkTake take_links_avx2(std::uint32_t arrived, std::uint32_t x, std::uint32_t y,
                                                               const std::uint32_t* color, const Flit* flit,
                                                               const std::uint64_t* nonempty, std::uint32_t* out) {
  static_assert(sizeof(Flit) == 8, "a wavelet is its payload then its info word");
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(color));
  const __m256i f = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(flit)),
                                                _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
  const __m128i payload = _mm256_castsi256_si128(f), info = _mm256_extracti128_si256(f, 1);
  const __m128i dx = _mm_and_si128(payload, _mm_set1_epi32(0xffff)), dy = _mm_srli_epi32(payload, 16);
  const __m128i vx = _mm_set1_epi32(static_cast<int>(x)), vy = _mm_set1_epi32(static_cast<int>(y));
  __m128i o = _mm_set1_epi32(static_cast<int>(index(Port::Ramp)));
  o = _mm_blendv_epi8(o, _mm_set1_epi32(static_cast<int>(index(Port::North))), _mm_cmpgt_epi32(vy, dy));
  o = _mm_blendv_epi8(o, _mm_set1_epi32(static_cast<int>(index(Port::South))), _mm_cmpgt_epi32(dy, vy));
  o = _mm_blendv_epi8(o, _mm_set1_epi32(static_cast<int>(index(Port::West))), _mm_cmpgt_epi32(vx, dx));
  o = _mm_blendv_epi8(o, _mm_set1_epi32(static_cast<int>(index(Port::East))), _mm_cmpgt_epi32(dx, vx));
  const __m128i here = _mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(arrived)), _mm_setr_epi32(0, 1, 2, 3));
  const __m256i queued =
      _mm256_srlv_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(nonempty)), _mm256_cvtepu32_epi64(c));
  const __m128i queued32 =
      _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(queued, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
  const __m128i single = _mm_and_si128(_mm_srli_epi32(info, 1), _mm_srli_epi32(info, 2));
  const __m128i ok = _mm_and_si128(_mm_andnot_si128(queued32, _mm_and_si128(here, single)), _mm_set1_epi32(1));
  // The requested outputs of lanes a b c d: seen = a|b|c|d, many = a&b | c&d | (a|b)&(c|d).
  const __m128i ob = _mm_sllv_epi32(ok, o);
  const __m128i pair = _mm_shuffle_epi32(ob, _MM_SHUFFLE(2, 3, 0, 1));
  const __m128i both = _mm_and_si128(ob, pair), either = _mm_or_si128(ob, pair);
  const __m128i either2 = _mm_shuffle_epi32(either, _MM_SHUFFLE(1, 0, 3, 2));
  const __m128i many = _mm_or_si128(_mm_or_si128(both, _mm_shuffle_epi32(both, _MM_SHUFFLE(1, 0, 3, 2))),
                                    _mm_and_si128(either, either2));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), o);
  LinkTake t;
  t.ins = static_cast<std::uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_slli_epi32(ok, 31))));
  t.seen = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_or_si128(either, either2)));
  t.many = static_cast<std::uint32_t>(_mm_cvtsi128_si32(many));
  return t;
}
#endif

inline __attribute__((always_inline)) LinkTake take_links(std::uint32_t arrived, std::uint32_t x, std::uint32_t y,
                                                          const std::uint32_t* color, const Flit* flit,
                                                          const std::uint64_t* nonempty, std::uint32_t* out) {
#if defined(__AVX2__)
  return take_links_avx2(arrived, x, y, color, flit, nonempty, out);
#else
  return take_links_scalar(arrived, x, y, color, flit, nonempty, out);
#endif
}

}  // namespace wafersim::fabric
