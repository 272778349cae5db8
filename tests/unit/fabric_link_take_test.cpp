// The take-in of a router's inputs (fabric/link_take.h): the four links' in the scalar form, and
// in the AVX2 form where the build has it, then the ramp's, against a plain statement of the
// rule, on random arrival registers of wavelets that came by XY routing.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>

#include "fabric/link_take.h"

namespace wafersim::fabric::fabric_link_take_test {
namespace {

struct Register {
  std::uint32_t arrived = 0, x = 0, y = 0;
  std::array<std::uint32_t, kPorts> color{};
  std::array<Flit, kPorts> flit{};
  std::array<std::uint64_t, kPorts> nonempty{};
};

// A router of a w x h mesh and what its five inputs hold: wavelets that came by XY routing over
// a link (heading away from the input they arrived at) or from the ramp (for anywhere) where bit
// p of `arrived` is set, leftovers of any kind elsewhere; single-wavelet packets, queued colors
// and shared outputs all common.
Register random_register(std::mt19937_64& rng) {
  auto below = [&rng](std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); };
  Register g;
  const std::uint32_t w = 1 + below(below(2) ? 8 : 1000), h = 1 + below(below(2) ? 8 : 1000);
  g.x = below(w);
  g.y = below(h);
  g.arrived = below(32);
  for (std::uint32_t p = 0; p < kPorts; ++p) {
    std::uint32_t dx = below(w), dy = below(h);
    if (g.arrived >> p & 1u) {  // heading south from the north (0), north from the south (2), ...
      if (p == 0 || p == 2) dx = g.x;
      if (p == 0) dy = g.y + below(h - g.y);
      if (p == 2) dy = below(g.y + 1);
      if (p == 3) dx = g.x + below(w - g.x);
      if (p == 1) dx = below(g.x + 1);
    } else if (below(2)) {
      dx = below(1u << 16);
      dy = below(1u << 16);
    }
    const std::uint32_t kind = below(8);  // mostly head and tail, else any of control/head/tail
    const std::uint32_t info = (kind < 5 ? Flit::kHead | Flit::kTail : below(8)) | below(1000) << 3;
    g.flit[p] = Flit{pack_destination(dx, dy), info};
    g.color[p] = below(4) ? below(4) : below(64);
    g.nonempty[p] = below(3) ? 0 : rng() & rng();
  }
  return g;
}

// The rule, stated plainly: a candidate arrived, is head and tail, and finds its queue empty.
LinkTake reference(const Register& g, std::array<std::uint32_t, kPorts>& out) {
  LinkTake t;
  std::array<std::uint32_t, kPorts> wanting{};
  for (std::uint32_t p = 0; p < kPorts; ++p) {
    const Flit& f = g.flit[p];
    const bool candidate = (g.arrived >> p & 1u) && f.head() && f.tail() && !((g.nonempty[p] >> g.color[p]) & 1u);
    if (!candidate) continue;
    t.ins |= 1u << p;
    out[p] = xy_route(g.x, g.y, f.payload);
    ++wanting[out[p]];
  }
  for (std::uint32_t o = 0; o < kPorts; ++o) {
    if (wanting[o] >= 1) t.seen |= 1u << o;
    if (wanting[o] >= 2) t.many |= 1u << o;
  }
  return t;
}

template <class Take>
void expect_the_rule(Take take) {
  std::mt19937_64 rng(20261201);
  std::uint32_t with_candidates = 0, with_shared_output = 0, ejecting = 0, from_the_ramp = 0;
  for (int trial = 0; trial < 50000; ++trial) {
    const Register g = random_register(rng);
    std::array<std::uint32_t, kPorts> want{}, got{};
    const LinkTake r = reference(g, want);
    LinkTake t = take(g.arrived, g.x, g.y, g.color.data(), g.flit.data(), g.nonempty.data(), got.data());
    if (g.arrived & bit(Port::Ramp))  // as Mesh::process does
      take_ramp(t, g.arrived, g.x, g.y, g.color.data(), g.flit.data(), g.nonempty.data(), got.data());
    ASSERT_EQ(t.ins, r.ins) << "trial " << trial;
    ASSERT_EQ(t.seen, r.seen) << "trial " << trial;
    ASSERT_EQ(t.many, r.many) << "trial " << trial;
    for (std::uint32_t p = 0; p < kPorts; ++p) {
      if (r.ins >> p & 1u) {
        ASSERT_EQ(got[p], want[p]) << "trial " << trial << ", input " << p;
      }
    }
    with_candidates += r.ins != 0;
    with_shared_output += r.many != 0;
    ejecting += (r.seen >> index(Port::Ramp)) & 1u;
    from_the_ramp += (r.ins >> index(Port::Ramp)) & 1u;
  }
  // The draws reach every case the rule distinguishes.
  EXPECT_GT(with_candidates, 20000u);
  EXPECT_GT(with_shared_output, 2000u);
  EXPECT_GT(ejecting, 1000u);
  EXPECT_GT(from_the_ramp, 5000u);
}

TEST(LinkTake, ScalarFormFollowsTheRule) { expect_the_rule(take_links_scalar); }

TEST(LinkTake, Avx2FormFollowsTheRule) {
#if defined(__AVX2__)
  expect_the_rule(take_links_avx2);
#else
  GTEST_SKIP() << "built without AVX2 (WAFERSIM_ARCH at the baseline): the mesh uses the scalar form";
#endif
}

TEST(LinkTake, XyRouteGoesAlongTheRowThenTheColumn) {
  const std::uint32_t x = 5, y = 7;
  EXPECT_EQ(xy_route(x, y, pack_destination(9, 0)), index(Port::East));
  EXPECT_EQ(xy_route(x, y, pack_destination(6, 7)), index(Port::East));
  EXPECT_EQ(xy_route(x, y, pack_destination(4, 99)), index(Port::West));
  EXPECT_EQ(xy_route(x, y, pack_destination(5, 8)), index(Port::South));
  EXPECT_EQ(xy_route(x, y, pack_destination(5, 6)), index(Port::North));
  EXPECT_EQ(xy_route(x, y, pack_destination(5, 7)), index(Port::Ramp));
}

}  // namespace
}  // namespace wafersim::fabric::fabric_link_take_test
