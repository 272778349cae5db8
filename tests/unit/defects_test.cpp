// The physical array, its defects and the remap that presents the logical grid
// (fabric/defects, docs/defects.md): the map cell by cell, the detours' hops, the sparse
// summary against the dense remap, sampling, defect lists, and yield against the closed form.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "fabric/defects/defect_map.h"
#include "fabric/defects/remap.h"
#include "fabric/defects/remap_summary.h"
#include "fabric/defects/wafer_remap.h"
#include "fabric/defects/yield.h"
#include "platforms/platform_spec.h"
#include "sim/config/diagnostics.h"
#include "sim/errors.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::fabric::defects::defects_test {
namespace {

RedundancyConfig spare_rows(std::uint32_t spares, std::uint32_t group = 0, std::uint32_t max_offset = 1) {
  RedundancyConfig r;
  r.axis = SpareAxis::Rows;
  r.spares = spares;
  r.group = group;
  r.max_offset = max_offset;
  return r;
}

RedundancyConfig spare_columns(std::uint32_t spares, std::uint32_t group = 0, std::uint32_t max_offset = 1) {
  RedundancyConfig r = spare_rows(spares, group, max_offset);
  r.axis = SpareAxis::Columns;
  return r;
}

TEST(Defects, PhysicalArrayHoldsTheGridAndItsSpareRowsInGroups) {
  const PhysicalArray a(8, 10, spare_rows(1, 4));
  EXPECT_EQ(a.width(), 8u);
  EXPECT_EQ(a.height(), 13u);  // groups of 4, 4 and 2 rows, one spare after each
  EXPECT_EQ(a.groups(), 3u);
  EXPECT_EQ(a.group_size(2), 2u);
  EXPECT_EQ(a.group_start(1), 5u);
  EXPECT_EQ(a.group_of(9), 1u);
  EXPECT_EQ(a.group_of(10), 2u);
  EXPECT_EQ(a.cores(), 8u * 13u);
  const PhysicalArray c(10, 8, spare_columns(2));
  EXPECT_EQ(c.width(), 12u);
  EXPECT_EQ(c.height(), 8u);
  EXPECT_EQ(c.lines(), 8u);  // rows
  EXPECT_EQ(c.x_of(3, 7), 7u);
  EXPECT_EQ(c.y_of(3, 7), 3u);
}

TEST(Defects, ADefectFreeArrayMapsEachLogicalCoreToItsGroupsRow) {
  const PhysicalArray a(6, 9, spare_rows(1, 3));
  const Remap m(DefectMap(a), spare_rows(1, 3));
  ASSERT_TRUE(m.ok());
  for (std::uint32_t y = 0; y < 9; ++y)
    for (std::uint32_t x = 0; x < 6; ++x) {
      EXPECT_EQ(m.physical(x, y).x, x);
      EXPECT_EQ(m.physical(x, y).y, y + y / 3);  // the spare row after each group of 3
    }
  const RemapSummary s = m.summary();
  EXPECT_EQ(s.links, 6u * 8u + 9u * 5u);
  EXPECT_EQ(s.extra_hops, 0u);
  EXPECT_EQ(m.link_delays(sim::Cycle(1)), nullptr);
}

// One dead core at (1, 1) of a 4 x 4 grid with one spare row: column 1 moves down from row 1
// on; the link from (1, 0) south passes over the dead core, and the links between columns 0
// and 1 and between 1 and 2 are one row out of line from row 1 on.
TEST(Defects, ADeadCoreIsBypassedAndItsColumnShiftsIntoTheSpare) {
  const PhysicalArray a(4, 4, spare_rows(1));
  DefectMap d(a);
  d.kill(1, 1);
  const Remap m(d, spare_rows(1));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.physical(1, 0).y, 0u);
  EXPECT_EQ(m.physical(1, 1).y, 2u);
  EXPECT_EQ(m.physical(1, 3).y, 4u);
  EXPECT_EQ(m.extra_hops(1, 0, Port::South), 1u);
  EXPECT_EQ(m.extra_hops(1, 1, Port::North), 1u);
  EXPECT_EQ(m.extra_hops(1, 1, Port::South), 0u);
  for (std::uint32_t y = 0; y < 4; ++y) {
    EXPECT_EQ(m.extra_hops(0, y, Port::East), y >= 1 ? 1u : 0u) << y;
    EXPECT_EQ(m.extra_hops(2, y, Port::West), y >= 1 ? 1u : 0u) << y;
    EXPECT_EQ(m.extra_hops(2, y, Port::East), 0u) << y;
  }
  const RemapSummary s = m.summary();
  EXPECT_EQ(s.extra_hops, 1u + 3u + 3u);
  EXPECT_EQ(s.detour_links, 7u);
  EXPECT_EQ(s.worst_stretch(), 2u);
  const RemapSummary sparse = summarize(d, spare_rows(1));
  EXPECT_TRUE(sparse.ok);
  EXPECT_EQ(sparse.extra_hops, s.extra_hops);
  EXPECT_EQ(sparse.detour_links, s.detour_links);
  EXPECT_EQ(sparse.worst_extra, s.worst_extra);
  // The mesh's links take the detours both ways, one bypass latency per extra hop.
  const auto delays = m.link_delays(sim::Cycle(3));
  ASSERT_NE(delays, nullptr);
  EXPECT_EQ(delays->extra(1 * 4 + 1, index(Port::North)), 3u);  // router (1, 1)
  EXPECT_EQ(delays->extra(0 * 4 + 1, index(Port::South)), 3u);  // router (1, 0)
  EXPECT_EQ(delays->extra(2 * 4 + 0, index(Port::East)), 3u);   // router (0, 2)
  EXPECT_EQ(delays->extra(2 * 4 + 1, index(Port::West)), 3u);   // router (1, 2)
  EXPECT_EQ(delays->extra(0 * 4 + 0, index(Port::East)), 0u);
  EXPECT_EQ(delays->max_extra(), 3u);
}

TEST(Defects, SpareColumnsShiftRowsEast) {
  const PhysicalArray a(4, 3, spare_columns(1));
  DefectMap d(a);
  d.kill(2, 1);
  const Remap m(d, spare_columns(1));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m.physical(1, 1).x, 1u);
  EXPECT_EQ(m.physical(2, 1).x, 3u);
  EXPECT_EQ(m.physical(3, 1).x, 4u);
  EXPECT_EQ(m.extra_hops(1, 1, Port::East), 1u);
  EXPECT_EQ(m.extra_hops(2, 0, Port::South), 1u);
  EXPECT_EQ(m.extra_hops(1, 0, Port::South), 0u);
}

TEST(Defects, MoreDeadCoresThanSparesInAGroupFailAndSayWhere) {
  const PhysicalArray a(4, 8, spare_rows(1, 4));
  DefectMap d(a);
  d.kill(2, 6);
  d.kill(2, 8);  // both in column 2's second group (physical rows 5 .. 9)
  EXPECT_FALSE(Remap(d, spare_rows(1, 4)).ok());
  const RemapSummary s = summarize(d, spare_rows(1, 4));
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.failure.find("column 2, rows 4 .. 7 (group 1): 2 dead cores and 1 spare row"), std::string::npos)
      << s.failure;
  DefectMap apart(a);
  apart.kill(2, 1);
  apart.kill(2, 8);  // one per group
  EXPECT_TRUE(Remap(apart, spare_rows(1, 4)).ok());
  EXPECT_TRUE(summarize(apart, spare_rows(1, 4)).ok);
}

TEST(Defects, BypassLinksReachOnlyMaxOffsetAcross) {
  const PhysicalArray a(3, 4, spare_rows(2));
  DefectMap d(a);
  d.kill(1, 0);
  d.kill(1, 1);  // column 1 shifts two rows; columns 0 and 2 do not
  EXPECT_FALSE(Remap(d, spare_rows(2, 0, 1)).ok());
  const RemapSummary s = summarize(d, spare_rows(2, 0, 1));
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.failure.find("redundancy.max_offset = 1"), std::string::npos) << s.failure;
  const Remap any(d, spare_rows(2, 0, 0));
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any.extra_hops(0, 0, Port::East), 2u);
  EXPECT_EQ(any.summary().worst_stretch(), 3u);
}

TEST(Defects, ADeadLinkRetiresItsEastOrSouthCore) {
  const PhysicalArray a(4, 4, spare_rows(1));
  DefectMap d(a);
  d.kill_link(DeadLink{1, 2, Port::East});
  d.kill_link(DeadLink{3, 3, Port::North});
  EXPECT_TRUE(d.is_dead(2, 2));
  EXPECT_TRUE(d.is_dead(3, 3));
  EXPECT_EQ(d.dead().size(), 2u);
}

// Random maps on small arrays of every shape: the dense remap (cell by cell) and the sparse
// summary (from the dead cores' steps) agree on every figure; every logical core sits on a
// live core of its own; along a line neighbours are separated by dead cores (or their group's
// spares) only; across, they are at most max_offset apart.
TEST(Defects, EveryLogicalNeighbourIsReachableAndNoDeadCoreIsAddressed) {
  std::uint32_t checked = 0, failed = 0;
  for (const RedundancyConfig& r :
       {spare_rows(1), spare_rows(2, 3), spare_rows(3, 5, 0), spare_columns(1, 2), spare_columns(2, 0, 2)})
    for (std::uint64_t seed = 1; seed <= 60; ++seed) {
      const PhysicalArray a(7, 9, r);
      const DefectMap d = DefectMap::sample(a, 0.03 + 0.002 * static_cast<double>(seed), seed, 0);
      const Remap m(d, r);
      const RemapSummary sparse = summarize(d, r);
      ASSERT_EQ(m.ok(), sparse.ok) << "seed " << seed << ": " << m.failure() << " / " << sparse.failure;
      if (!m.ok()) {
        ++failed;
        continue;
      }
      ++checked;
      const RemapSummary dense = m.summary();
      EXPECT_EQ(dense.extra_hops, sparse.extra_hops) << seed;
      EXPECT_EQ(dense.detour_links, sparse.detour_links) << seed;
      EXPECT_EQ(dense.worst_extra, sparse.worst_extra) << seed;
      EXPECT_EQ(dense.links, sparse.links) << seed;
      std::set<std::pair<std::uint32_t, std::uint32_t>> used;
      for (std::uint32_t y = 0; y < 9; ++y)
        for (std::uint32_t x = 0; x < 7; ++x) {
          const Cell c = m.physical(x, y);
          EXPECT_FALSE(d.is_dead(a.line_of(c.x, c.y), a.position_of(c.x, c.y))) << x << "," << y;
          EXPECT_TRUE(used.insert({c.x, c.y}).second);
          for (Port p : {Port::East, Port::South}) {
            if ((p == Port::East && x + 1 == 7) || (p == Port::South && y + 1 == 9)) continue;
            const Cell n = m.physical(p == Port::East ? x + 1 : x, p == Port::South ? y + 1 : y);
            const std::uint32_t l0 = a.line_of(c.x, c.y), l1 = a.line_of(n.x, n.y);
            const std::uint32_t p0 = a.position_of(c.x, c.y), p1 = a.position_of(n.x, n.y);
            if (l0 == l1) {
              ASSERT_LT(p0, p1);
              for (std::uint32_t q = p0 + 1; q < p1; ++q)
                EXPECT_TRUE(d.is_dead(l0, q) || a.group_of(q) != a.group_of(p1)) << "a live core skipped";
              EXPECT_EQ(m.extra_hops(x, y, p), m.dead_between(l0, p0, p1));
            } else {
              EXPECT_EQ(l1, l0 + 1);
              const std::uint32_t off = p0 > p1 ? p0 - p1 : p1 - p0;
              EXPECT_EQ(m.extra_hops(x, y, p), off);
              if (r.max_offset) {
                EXPECT_LE(off, r.max_offset);
              }
            }
          }
        }
    }
  EXPECT_GT(checked, 100u);
  EXPECT_GT(failed, 10u);  // the densities reach past what the spares absorb
}

TEST(Defects, SamplingIsDeterministicPerSeedAndStream) {
  const PhysicalArray a(64, 64, spare_rows(2, 8));
  const auto one = DefectMap::sample(a, 0.01, 5, 0).dead();
  EXPECT_EQ(one, DefectMap::sample(a, 0.01, 5, 0).dead());
  EXPECT_NE(one, DefectMap::sample(a, 0.01, 5, 1).dead());
  EXPECT_NE(one, DefectMap::sample(a, 0.01, 6, 0).dead());
  // Over many streams the count is Binomial(cores, p): its mean within 4 standard errors.
  double sum = 0;
  const std::uint32_t n = 400;
  for (std::uint32_t s = 0; s < n; ++s) sum += static_cast<double>(DefectMap::sample(a, 0.01, 9, s).dead().size());
  const double mean = static_cast<double>(a.cores()) * 0.01;
  const double se = std::sqrt(mean * 0.99 / n);
  EXPECT_NEAR(sum / n, mean, 4 * se);
  EXPECT_TRUE(DefectMap::sample(a, 0, 1, 0).dead().empty());
  EXPECT_EQ(DefectMap::sample(a, 1, 1, 0).dead().size(), a.cores());
}

// Yield against the closed form for independent defects: each group of each line keeps at
// most its spares dead. Exact here (one spare per group: no offset exceeds one row; and the
// second design bridges any offset). Within 4 binomial standard errors.
TEST(Defects, YieldMatchesTheClosedFormForIndependentDefects) {
  struct Case {
    RedundancyConfig r;
    double p;
  };
  for (const Case& c : {Case{spare_rows(1, 4), 0.02}, Case{spare_rows(2, 6, 0), 0.05}, Case{spare_columns(1), 0.01}}) {
    const PhysicalArray a(16, 16, c.r);
    const double density = -std::log1p(-c.p) / 0.05;
    const YieldPoint y = yield_point(a, c.r, density, 0.05, 3000, 11);
    const double want = independent_yield(a, c.p);
    EXPECT_NEAR(y.independent_yield, want, 1e-12);
    EXPECT_GT(want, 0.2);
    EXPECT_LT(want, 0.9);
    EXPECT_NEAR(y.yield(), want, 4 * std::sqrt(want * (1 - want) / y.trials)) << c.p;
    EXPECT_NEAR(y.mean_dead, static_cast<double>(a.cores()) * c.p, 4 * std::sqrt(a.cores() * c.p / y.trials));
  }
  // By hand, one group of 5 cells per column, 16 columns, p = 0.1: (0.9^5 + 5 x 0.1 x 0.9^4)^16.
  const PhysicalArray small(16, 4, spare_rows(1));
  EXPECT_NEAR(independent_yield(small, 0.1), std::pow(std::pow(0.9, 5) + 0.5 * std::pow(0.9, 4), 16), 1e-12);
}

TEST(Defects, YieldStudiesAreDeterministicInTheirSeed) {
  const PhysicalArray a(40, 30, spare_rows(1, 6));
  YieldOptions o;
  o.density_per_mm2 = 0.3;
  o.trials = 50;
  o.seed = 4;
  o.density_factors = {0.5, 1, 2};
  o.area_factors = {1, 4};
  const std::string one = to_json(yield_study(a, spare_rows(1, 6), o)).dump();
  EXPECT_EQ(one, to_json(yield_study(a, spare_rows(1, 6), o)).dump());
  o.seed = 5;
  EXPECT_NE(one, to_json(yield_study(a, spare_rows(1, 6), o)).dump());
  // Larger cores of the same silicon: a quarter of the cores at 4 x the area.
  const PhysicalArray big = scaled_array(a, spare_rows(1, 6), 0.05, 0.2);
  EXPECT_EQ(big.logical_width(), 20u);
  EXPECT_EQ(big.logical_height(), 15u);
}

// The published WSE-3 figure (Cerebras, "100x Defect Tolerance", January 2025): about 900,000
// of about 970,000 cores active (93%) at about 0.001 defects/mm^2 on cores of about 0.05 mm^2.
TEST(Defects, Wse3PresentsItsGridAtThePublishedDefectDensity) {
  const auto spec = platforms::load_platform("wse3").spec;
  const PhysicalArray a = spec.physical_array();
  EXPECT_EQ(a.width(), 762u);
  EXPECT_EQ(a.height(), 1263u);
  EXPECT_EQ(a.cores(), 962406u);
  const YieldPoint y = yield_point(a, spec.redundancy, 0.001, spec.defects.core_area_mm2, 200, 1);
  EXPECT_NEAR(y.active_share(), 0.93, 0.005);
  EXPECT_NEAR(y.mean_dead, 962406 * 0.05 * 0.001, 3.0);
  EXPECT_GT(y.yield(), 0.95);
  EXPECT_NEAR(y.yield(), y.independent_yield, 4 * std::sqrt(0.02 * 0.98 / 200));
  EXPECT_LT(y.mean_stretch, 1.001);
  EXPECT_EQ(y.worst_stretch, 2u);
}

TEST(Defects, ADefectListNamesItsCoresAndLinks) {
  test::TempDir dir;
  const auto list = dir.path() / "defects.yaml";
  std::ofstream(list) << "cores:\n  - {at: [1, 2]}\n  - {at: [5, 8]}\nlinks:\n  - {at: [3, 3], port: south}\n";
  const auto plat = dir.path() / "p.yaml";
  std::ofstream(plat) << "base: tiny\ndefects:\n  file: defects.yaml\n";
  const auto spec = platforms::load_platform(plat.string()).spec;
  ASSERT_EQ(spec.defects.cores.size(), 2u);
  ASSERT_EQ(spec.defects.links.size(), 1u);
  const WaferRemap r = remap_wafer(spec.physical_array(), spec.redundancy, spec.defects, 0);
  EXPECT_EQ(r.summary.dead, 3u);
  ASSERT_NE(r.delays, nullptr);
}

TEST(Defects, BadDefectListsAreConfigErrorsAtTheirLine) {
  test::TempDir dir;
  const auto list = dir.path() / "defects.yaml";
  std::ofstream(list) << "cores:\n  - {at: [1, 2]}\n  - {at: [8, 1]}\nlinks:\n  - {at: [7, 3], port: east}\n"
                         "  - {at: [0, 0], prot: north}\n";
  const auto plat = dir.path() / "p.yaml";
  std::ofstream(plat) << "base: tiny\ndefects:\n  file: defects.yaml\n";
  try {
    platforms::load_platform(plat.string());
    FAIL() << "no error";
  } catch (const sim::config::ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("defects.yaml:3:"), std::string::npos) << m;
    EXPECT_NE(m.find("(8, 1) lies outside the 8 x 9 physical array"), std::string::npos) << m;
    EXPECT_NE(m.find("defects.yaml:5:"), std::string::npos) << m;
    EXPECT_NE(m.find("no neighbour beyond its east side"), std::string::npos) << m;
    EXPECT_NE(m.find("prot"), std::string::npos) << m;
  }
  std::ofstream(plat) << "base: tiny\ndefects:\n  file: defects.yaml\n  density_per_mm2: 0.1\n";
  try {
    platforms::load_platform(plat.string());
    FAIL() << "no error";
  } catch (const sim::config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("p.yaml:3:9: error: defects.file: give either a density or a file"),
              std::string::npos)
        << e.what();
  }
}

TEST(Defects, AWaferThatCannotPresentItsGridIsAnInputError) {
  const auto spec = platforms::load_platform("tiny", {"defects.density_per_mm2=20", "redundancy.spare_rows=1"}).spec;
  try {
    remap_wafer(spec.physical_array(), spec.redundancy, spec.defects, 0);
    FAIL() << "no error";
  } catch (const sim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("wafer 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("defects.seed 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wafersim::fabric::defects::defects_test

namespace wafersim::fabric::defects::defects_test {
namespace {

// `wafersim yield` on tiny (8 x 8 logical on 8 x 9 physical, one spare row): the same seed gives
// the same bytes, the point agrees with the closed form (exact here: one spare row keeps every
// offset within a row), and the curve covers every density for every core area.
TEST(YieldCommand, JsonIsDeterministicAndAgreesWithTheClosedForm) {
  const std::string args = "yield tiny --defect-density 1 --trials 400 --seed 3 --json";
  const auto a = test::wafersim(args);
  const auto b = test::wafersim(args);
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_EQ(a.out, b.out);
  const auto j = nlohmann::json::parse(a.out);
  const auto& p = j.at("point");
  EXPECT_EQ(j.at("platform"), "tiny");
  EXPECT_EQ(p.at("physical_cores"), 72);
  EXPECT_EQ(p.at("logical_cores"), 64);
  EXPECT_EQ(p.at("trials"), 400);
  EXPECT_DOUBLE_EQ(p.at("core_area_mm2").get<double>(), 0.0544);
  const double q = std::exp(-0.0544), column = std::pow(q, 9) + 9 * (1 - q) * std::pow(q, 8);
  EXPECT_NEAR(p.at("independent_yield").get<double>(), std::pow(column, 8), 1e-12);
  const double y = p.at("yield").get<double>(), sigma = std::sqrt(y * (1 - y) / 400);
  EXPECT_NEAR(y, p.at("independent_yield").get<double>(), 4 * sigma);
  EXPECT_EQ(j.at("curve").size(), 45u);
  const auto other = test::wafersim("yield tiny --defect-density 1 --trials 400 --seed 4 --json");
  EXPECT_NE(other.out, a.out);
  const auto missing = test::wafersim("yield tiny --trials 10", true);
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.out.find("--defect-density is required"), std::string::npos) << missing.out;
}

}  // namespace
}  // namespace wafersim::fabric::defects::defects_test
