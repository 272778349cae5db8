#include "fabric/lane_routers.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "fabric/link_take.h"

// (Without AVX, GCC notes that 32-byte vector arguments change the ABI; these helpers are
// internal and inline, so no call crosses an ABI boundary.)
#if defined(__GNUC__) && !defined(__clang__) && !defined(__AVX__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace wafersim::fabric {
namespace {

// Eight 32-bit lanes (GCC vector extensions: AVX2 where the build targets it, SSE pairs else).
using V = std::uint32_t __attribute__((vector_size(32)));
using VS = std::int32_t __attribute__((vector_size(32)));
using VF = float __attribute__((vector_size(32)));
using V64 = std::uint64_t __attribute__((vector_size(32)));
using V8 = std::uint8_t __attribute__((vector_size(32)));

// Lanes picked from two vectors (index i < 8: a's lane i, else b's lane i - 8).
#if defined(__clang__)
#define WAFERSIM_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define WAFERSIM_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, V{__VA_ARGS__})
#endif
// Within each half: lanes 0 1 of a and b interleaved (lo), lanes 2 3 (hi), as unpacks do.
inline V interleave_lo(V a, V b) { return WAFERSIM_SHUFFLE(a, b, 0, 8, 1, 9, 4, 12, 5, 13); }
inline V interleave_hi(V a, V b) { return WAFERSIM_SHUFFLE(a, b, 2, 10, 3, 11, 6, 14, 7, 15); }
// The even (low) and odd (high) words of the 64-bit lanes of lo (lanes 0 1 4 5) and hi (2 3 6 7).
inline V even_words(V lo, V hi) { return WAFERSIM_SHUFFLE(lo, hi, 0, 2, 8, 10, 4, 6, 12, 14); }
inline V odd_words(V lo, V hi) { return WAFERSIM_SHUFFLE(lo, hi, 1, 3, 9, 11, 5, 7, 13, 15); }

inline V load(const std::uint32_t* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(std::uint32_t* p, V v) { std::memcpy(p, &v, sizeof v); }
inline V splat(std::uint32_t x) { return V{} + x; }
// Lanes as masks (all ones or zero) from comparisons.
inline V eq(V a, V b) { return reinterpret_cast<V>(a == b); }
inline V gt(V a, V b) { return reinterpret_cast<V>(reinterpret_cast<VS>(a) > reinterpret_cast<VS>(b)); }
// a where m is set, else b (m all ones or zero in each lane; 32- or 64-bit lanes).
template <typename T>
inline T select(T m, T a, T b) {
#if defined(__AVX2__)
  return reinterpret_cast<T>(
      _mm256_blendv_epi8(reinterpret_cast<__m256i>(b), reinterpret_cast<__m256i>(a), reinterpret_cast<__m256i>(m)));
#else
  return (a & m) | (b & ~m);
#endif
}
// Bit l: lane l's mask is set.
inline std::uint32_t lanes_of(V m) {
#if defined(__AVX2__)
  return static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(reinterpret_cast<__m256i>(m))));
#else
  std::uint32_t b = 0;
  for (std::uint32_t l = 0; l < 8; ++l) b |= (m[l] >> 31) << l;
  return b;
#endif
}
// Bit l: lane l is not zero.
inline std::uint32_t nonzero_lanes(V v) { return lanes_of(~eq(v, V{})); }
inline bool none(V v) {
#if defined(__AVX2__)
  const auto x = reinterpret_cast<__m256i>(v);
  return _mm256_testz_si256(x, x) != 0;
#else
  std::uint32_t o = 0;
  for (std::uint32_t l = 0; l < 8; ++l) o |= v[l];
  return o == 0;
#endif
}
// The index of the single set bit of each lane (0 .. 23; lanes without one give garbage).
inline V bit_index(V one_bit) {
  const VF f = __builtin_convertvector(reinterpret_cast<VS>(one_bit), VF);
  return (reinterpret_cast<V>(f) >> 23) - 127u;
}
// Bits 0 .. 3: bytes 0 .. 3 are zero. (Each byte's flag moved to bit 28 + byte by one
// multiplication: the partial products never share a bit, so nothing carries.)
inline V zero_byte_flags(V x) {
  const V z = reinterpret_cast<V>(reinterpret_cast<V8>(x) == V8{}) & 0x01010101u;
  return (z * 0x10204080u) >> 28;
}
// Bits 0 .. 3 as the low bits of bytes 0 .. 3 (likewise by one multiplication).
inline V nibble_bytes(V m) { return (m * 0x00204081u) & 0x01010101u; }
// The sum of the four bytes, each at most 63.
inline V byte_sum(V b) { return (b * 0x01010101u) >> 24; }
inline std::uint32_t hsum(V v) {
  std::uint32_t s = 0;
  for (std::uint32_t l = 0; l < 8; ++l) s += v[l];
  return s;
}
// 64-bit words at base[index[l]] for lanes 0 1 4 5 (lo) and 2 3 6 7 (hi); index lanes past
// those masked out read base[0].
inline void gather_heads(const std::uint64_t* base, V index, V64& lo, V64& hi) {
#if defined(__AVX2__)
  const __m256i i =
      _mm256_permutevar8x32_epi32(reinterpret_cast<__m256i>(index), _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
  const auto* b = reinterpret_cast<const long long*>(base);
  lo = reinterpret_cast<V64>(_mm256_i32gather_epi64(b, _mm256_castsi256_si128(i), 8));
  hi = reinterpret_cast<V64>(_mm256_i32gather_epi64(b, _mm256_extracti128_si256(i, 1), 8));
#else
  lo = V64{base[index[0]], base[index[1]], base[index[4]], base[index[5]]};
  hi = V64{base[index[2]], base[index[3]], base[index[6]], base[index[7]]};
#endif
}

}  // namespace

LaneRouters::LaneRouters(std::uint32_t width, std::uint32_t height, std::uint32_t depth)
    : width_(width), routers_(width * height), groups_((width * height + 7) / 8), depth_(depth) {
  if (depth_ == 0 || depth_ > kMaxDepth) throw std::logic_error("LaneRouters: queue depth must be 1 .. 127");
  if (width_ > kMaxWidth || routers_ > kMaxRouters) throw std::logic_error("LaneRouters: mesh too wide or too large");
  words_.assign(kFields * kStride, 0);
  heads_.assign(kQueues * kStride, 0);
  const std::uint32_t full = depth_ * 0x01010101u;
  for (std::uint32_t r = 0; r < groups_ * 8; ++r) {
    // (Lanes past the last router sit beyond the mesh: they are never sent anything.)
    base(kX)[r] = r % width_;
    base(kY)[r] = r / width_;
    for (std::uint32_t o = 0; o < kPorts; ++o) base(kAfter + o)[r] = ~0u;
    for (std::uint32_t o = 0; o < kPorts; ++o) base(kCredits + o)[r] = full;
  }
  injected_.assign(routers_, 0);
  ring_head_.assign(std::size_t{kQueues} * routers_, 0);
  ring_.resize(std::size_t{kQueues} * routers_ * depth_);
  wide_.assign(std::size_t{kCounters} * routers_, 0);
}

void LaneRouters::inject(std::uint32_t r, std::uint32_t c, Flit f, std::uint64_t t) {
  const std::uint32_t parity = t & 1u;
  injected_[r] = 1;
  std::uint32_t* const a = base(arrival(parity, index(Port::Ramp), kValid)) + r;
  a[kValid * kStride] = ~0u;
  a[kColor * kStride] = c;
  a[kPayload * kStride] = f.payload;
  a[kInfo * kStride] = f.info;
}

Flit LaneRouters::queued_flit(std::uint32_t r, std::uint32_t p, std::uint32_t c, std::uint32_t i) const {
  const std::uint32_t q = p * kColors + c;
  if (i >= queued(r, p, c)) throw std::out_of_range("LaneRouters::queued_flit: no such wavelet");
  if (i == 0) {
    const std::uint64_t h = head(q, r);
    return Flit{static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(h >> 32)};
  }
  const std::size_t qr = std::size_t{q} * routers_ + r;
  std::uint32_t pos = ring_head_[qr] + i - 1u;
  if (pos >= depth_) pos -= depth_;
  return ring_[qr * depth_ + pos];
}

bool LaneRouters::took_in(std::uint32_t r) const {
  for (std::uint32_t p = 0; p < kPorts; ++p)
    if (occupancy(r, p)) return true;
  return false;
}

std::uint64_t LaneRouters::allocated_bytes() const {
  return words_.capacity() * sizeof(std::uint32_t) + heads_.capacity() * sizeof(std::uint64_t) + injected_.capacity() +
         ring_head_.capacity() + ring_.capacity() * sizeof(Flit) + wide_.capacity() * sizeof(std::uint64_t);
}

void LaneRouters::fold() {
  for (std::uint32_t f = 0; f < kCounters; ++f) {
    std::uint32_t* lane = base(kForwarded + f);
    std::uint64_t* wide = &wide_[std::size_t{f} * routers_];
    for (std::uint32_t r = 0; r < routers_; ++r) {
      wide[r] += lane[r];
      lane[r] = 0;
    }
  }
}

// Counts a sweep adds up in lanes and totals once at its end.
struct LaneRouters::Acc {
  V queued[kPorts]{};  // [input]: wavelets that left its queues
  V sent[kPorts]{};    // [input]: wavelets sent into it over links (one per lane)
  V colors[2]{};       // [i]: grants of color i (low 16 bits) and of color i + 2 (high)
};

std::uint64_t LaneRouters::sweep(std::uint64_t t, bool skip_idle, Ends& ends, const Totals& totals) {
  begin_sweep();
  const Swept swept = sweep_groups(t, 0, groups_, skip_idle, ends, totals);
  end_sweep(swept.busy, swept.visits);
  return swept.granted;
}

void LaneRouters::begin_sweep() {
  if (++sweeps_since_fold_ == kFoldEvery) {
    fold();
    sweeps_since_fold_ = 0;
  }
}

LaneRouters::Swept LaneRouters::sweep_groups(std::uint64_t t, std::uint32_t first, std::uint32_t end, bool skip_idle,
                                             Ends& ends, const Totals& totals) {
  const std::uint32_t in = (t + 1) & 1u;
  Acc acc;
  Swept swept;
  // A group has work if a wavelet or credit arrives or a head requests an output.
  const std::uint32_t* const arriving = base(arrival(in, 0, kValid));
  const std::uint32_t* const requests = base(kRequests);
  const std::uint32_t* const returned = base(kReturned + in * 4);
  for (std::uint32_t g = first; g < std::min(end, groups_); ++g) {
    const std::uint32_t r0 = g * 8;
    V a{};
#pragma GCC unroll 5
    for (std::uint32_t p = 0; p < kPorts; ++p)
      a |= load(arriving + p * kStride * 4 + r0) | load(requests + p * kStride + r0);
#pragma GCC unroll 4
    for (std::uint32_t o = 0; o < 4; ++o) a |= load(returned + o * kStride + r0);
    const bool work = !none(a);
    swept.busy |= work;
    if (work || !skip_idle) {
      visit(r0, t, ends, totals, acc);
      ++swept.visits;
    }
  }
  for (std::uint32_t c = 0; c < kColors; ++c) {
    const V half = c < 2 ? acc.colors[c] & 0xffffu : acc.colors[c - 2] >> 16;
    const std::uint32_t n = hsum(half);
    totals.color_forwarded[c] += n;
    swept.granted += n;
  }
  *totals.forwarded += swept.granted;
  for (std::uint32_t p = 0; p < kPorts; ++p)
    totals.dir_queued[p] += std::uint64_t{hsum(acc.sent[p])} - hsum(acc.queued[p]);
  return swept;
}

void LaneRouters::visit(std::uint32_t r0, std::uint64_t t, Ends& ends, const Totals& totals, Acc& acc) {
  // (Locals, not members, from here: the vector stores may alias anything and would force
  // members to be reloaded after each.)
  const std::uint32_t in = (t + 1) & 1u, out = t & 1u;
  std::uint32_t* const W = words_.data() + kPad + r0;  // field f of router r0 + l: W[f * kStride + l]
  const auto F = [W](std::uint32_t f) { return W + f * kStride; };
  std::uint64_t* const heads = heads_.data() + kPad;
  const std::uint32_t routers = routers_, depth = depth_;
  std::uint8_t* const ring_heads = ring_head_.data();
  Flit* const ring = ring_.data();
  const std::int64_t width = width_;
  const std::int64_t steps[4] = {-width, 1, width, -1};
  const V x = load(F(kX)), y = load(F(kY));
  // The arrival registers and returned credits of this cycle (in) and of the next (out).
  std::uint32_t* const arrivals_in = F(arrival(in, 0, kValid));
  std::uint32_t* const arrivals_out = F(arrival(out, 0, kValid));
  const auto arrived = [arrivals_in](std::uint32_t p, ArrivalWord w) { return arrivals_in + (p * 4 + w) * kStride; };
  const auto arriving = [arrivals_out](std::uint32_t p, ArrivalWord w) { return arrivals_out + (p * 4 + w) * kStride; };
  std::uint32_t* const returned_in = F(kReturned + in * 4);
  std::uint32_t* const returned_out = F(kReturned + out * 4);

  // Take in what arrived: into an empty queue as its head (with its request), else behind it.
  V behind{};         // bit q: a wavelet queued behind the head of queue q
  V added[kPorts]{};  // [output]: requests of the new heads
#pragma GCC unroll 5
  for (std::uint32_t p = 0; p < kPorts; ++p) {
    std::uint32_t* const valid = arrived(p, kValid);
    const V v = load(valid);
    store(valid, V{});  // (senders store only in cycles they visit)
    const V c = load(arrived(p, kColor));
    const V payload = load(arrived(p, kPayload)), info = load(arrived(p, kInfo));
    std::uint32_t* const count = F(kCount + p);
    const V n0 = load(count);
    const V shift = c << 3u;
    const V empty = eq((n0 >> shift) & 0xffu, V{});
    store(count, n0 + ((v & 1u) << shift));
    const V bit = splat(1u << (p * kColors)) << c;
    const V nh = v & empty;
    behind |= v & ~empty & bit;
    // The new heads' outputs by XY routing (from a link input, only on or out: see xy_route_from).
    const V nb = nh & bit;
    const V dx = payload & 0xffffu, dy = payload >> 16;
    const V south = gt(dy, y), north = gt(y, dy);
    if (p == index(Port::North)) {
      added[index(Port::South)] |= nb & south;
      added[index(Port::Ramp)] |= nb & ~south;
    } else if (p == index(Port::South)) {
      added[index(Port::North)] |= nb & north;
      added[index(Port::Ramp)] |= nb & ~north;
    } else {
      const V east = gt(dx, x), west = gt(x, dx);
      const V column = nb & ~(east | west);
      if (p != index(Port::East)) added[index(Port::East)] |= nb & east;
      if (p != index(Port::West)) added[index(Port::West)] |= nb & west;
      added[index(Port::South)] |= column & south;
      added[index(Port::North)] |= column & north;
      added[index(Port::Ramp)] |= column & ~(south | north);
    }
    const V64 lo = reinterpret_cast<V64>(interleave_lo(payload, info));
    const V64 hi = reinterpret_cast<V64>(interleave_hi(payload, info));
#pragma GCC unroll 4
    for (std::uint32_t cc = 0; cc < kColors; ++cc) {
      const V m = nh & eq(c, splat(cc));
      std::uint64_t* const h = heads + (p * kColors + cc) * kStride + r0;
      V64 hl, hh;
      std::memcpy(&hl, h, sizeof hl);
      std::memcpy(&hh, h + 4, sizeof hh);
      hl = select(reinterpret_cast<V64>(interleave_lo(m, m)), lo, hl);
      hh = select(reinterpret_cast<V64>(interleave_hi(m, m)), hi, hh);
      std::memcpy(h, &hl, sizeof hl);
      std::memcpy(h + 4, &hh, sizeof hh);
    }
  }
  for (std::uint32_t ls = nonzero_lanes(behind); ls; ls &= ls - 1) {
    const auto l = static_cast<std::uint32_t>(__builtin_ctz(ls));
    for (std::uint32_t m = behind[l]; m; m &= m - 1) {
      const auto q = static_cast<std::uint32_t>(__builtin_ctz(m));
      const std::uint32_t p = q / kColors;
      const std::size_t qr = std::size_t{q} * routers + r0 + l;
      // (The count has it and the head.)
      std::uint32_t pos = ring_heads[qr] + (F(kCount + p)[l] >> (8 * (q % kColors)) & 0xffu) - 2u;
      if (pos >= depth) pos -= depth;
      ring[qr * depth + pos] = Flit{arrived(p, kPayload)[l], arrived(p, kInfo)[l]};
    }
  }
  // Occupancy: the wavelets queued at each input in this cycle, before the grants.
#pragma GCC unroll 5
  for (std::uint32_t p = 0; p < kPorts; ++p) {
    const V n = load(F(kCount + p));
    const V pairs = (n & 0x00ff00ffu) + (n >> 8 & 0x00ff00ffu);
    store(F(kOccupancy + p), load(F(kOccupancy + p)) + ((pairs + (pairs >> 16)) & 0xffffu));
  }

  // Arbitrate each output (round robin over queue q = input * 4 + color, after the last grant)
  // and send the granted heads.
  V popped{};
  const V slots = splat(r0) + V{0, 1, 4, 5, 2, 3, 6, 7};  // head_index order within the group
#pragma GCC unroll 5
  for (std::uint32_t o = 0; o < kPorts; ++o) {
    std::uint32_t* const cr = F(kCredits + o);
    V credits = load(cr);
    if (o < 4) {  // (the ramp output's come back through ramp_output_freed)
      std::uint32_t* const ret = returned_in + o * kStride;
      credits += load(ret);
      store(ret, V{});
      store(cr, credits);
    }
    const V blocked = zero_byte_flags(credits);  // colors without a credit
    std::uint32_t* const rqp = F(kRequests + o);
    const V rq = load(rqp) | added[o];
    const V bl = blocked * 0x11111u;  // for each input
    if (const V stalled = rq & bl; !none(stalled))
      for (std::uint32_t ls = nonzero_lanes(stalled); ls; ls &= ls - 1) {
        const auto l = static_cast<std::uint32_t>(__builtin_ctz(ls));
        const std::uint32_t st = stalled[l];
        std::uint32_t colors = (st | st >> 4 | st >> 8 | st >> 12 | st >> 16) & 15u;
        const auto n = static_cast<std::uint32_t>(__builtin_popcount(colors));
        F(kStalled + o)[l] += n;
        *totals.stalled += n;
        for (; colors; colors &= colors - 1) ++totals.color_stalled[__builtin_ctz(colors)];
      }
    const V open = rq & ~bl;
    const V any = ~eq(open, V{});
    if (none(any)) {
      store(rqp, rq);
      continue;
    }
    std::uint32_t* const after = F(kAfter + o);
    const V prev = load(after);
    const V later = open & prev;
    const V pick = select(eq(later, V{}), open, later);
    const V low = pick & (V{} - pick);
    const V q = bit_index(low) & any;
    store(after, select(any, V{} - (low + low), prev));
    store(rqp, rq & ~low);
    popped |= low;
    store(F(kForwarded + o), load(F(kForwarded + o)) - any);
    V64 glo, ghi;
    gather_heads(heads, q * static_cast<std::uint32_t>(kStride) + slots, glo, ghi);
    const V plo = reinterpret_cast<V>(glo), phi = reinterpret_cast<V>(ghi);
    const V payload = even_words(plo, phi);
    const V info = odd_words(plo, phi);
    const V color = q & (kColors - 1);
    store(cr, credits - (any & (V{} + 1u) << (color << 3)));
    if (o < 4) {
      const std::uint32_t pp = o ^ 2u;
      const std::int64_t s = steps[o];
      store(arriving(pp, kValid) + s, any);
      store(arriving(pp, kColor) + s, color);
      store(arriving(pp, kPayload) + s, payload);
      store(arriving(pp, kInfo) + s, info);
      acc.sent[pp] -= any;
    } else {
      for (std::uint32_t m = lanes_of(any); m; m &= m - 1) {
        const auto l = static_cast<std::uint32_t>(__builtin_ctz(m));
        ends.eject(r0 + l, color[l], Flit{payload[l], info[l]}, t);
      }
    }
  }
  if (none(popped)) return;

  // Pop the granted heads: credits back upstream (or to the ramp's endpoint), counters; the
  // wavelet behind a granted head becomes the head (its request from the next cycle).
  V advance{};  // bit q: queue q has a wavelet behind its popped head
  V granted{};  // grants per color, a byte each
#pragma GCC unroll 5
  for (std::uint32_t p = 0; p < kPorts; ++p) {
    const V colors = (popped >> (p * kColors)) & 15u;
    const V popped_bytes = nibble_bytes(colors);
    acc.queued[p] += byte_sum(popped_bytes);
    granted += popped_bytes;
    std::uint32_t* const count = F(kCount + p);
    const V left = load(count) - popped_bytes;
    store(count, left);
    advance |= (colors & ~zero_byte_flags(left)) << (p * kColors);
    if (p < 4) {
      store(returned_out + (p ^ 2u) * kStride + steps[p], popped_bytes);
    } else {
      for (std::uint32_t ls = nonzero_lanes(colors); ls; ls &= ls - 1) {
        const auto l = static_cast<std::uint32_t>(__builtin_ctz(ls));
        for (std::uint32_t m = colors[l]; m; m &= m - 1)
          ends.ramp_freed(r0 + l, static_cast<std::uint32_t>(__builtin_ctz(m)), t);
      }
    }
  }
  // (At most 5 a lane, and at most kMaxRouters / 8 groups: no half overflows in a sweep.)
  acc.colors[0] += granted & 0x00ff00ffu;       // colors 0 and 2
  acc.colors[1] += granted >> 8 & 0x00ff00ffu;  // colors 1 and 3
  for (std::uint32_t ls = nonzero_lanes(advance); ls; ls &= ls - 1) {
    const auto l = static_cast<std::uint32_t>(__builtin_ctz(ls));
    for (std::uint32_t m = advance[l]; m; m &= m - 1) {
      const auto q = static_cast<std::uint32_t>(__builtin_ctz(m));
      const std::size_t qr = std::size_t{q} * routers + r0 + l;
      std::uint8_t& ring_head = ring_heads[qr];
      const Flit f = ring[qr * depth + ring_head];
      ring_head = static_cast<std::uint8_t>(ring_head + 1u == depth ? 0u : ring_head + 1u);
      heads_[head_index(q, r0 + l)] = f.payload | std::uint64_t{f.info} << 32;
      F(kRequests + xy_route(F(kX)[l], F(kY)[l], f.payload))[l] |= 1u << q;
    }
  }
}

}  // namespace wafersim::fabric
