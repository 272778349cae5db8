// The PE core array ticked in bands of rows on a thread team (hw/core/core_array.h) beside the
// mesh swept in the same bands: programs that compute from SRAM and pass vectors down the
// columns, across every band boundary, give the same registers, SRAM, counters, engine ticks
// and statistics tree as one thread, at 2, 3, 4 and 8 threads, with and without sleeping
// cores and with the bands rebalanced in mid-run; a program error in two bands reports the
// one a single thread meets first. Part of the ThreadSanitizer suite (scripts/test --tsan).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/mesh.h"
#include "fabric/route_loader.h"
#include "hw/core/core_array.h"
#include "hw/isa/assembler.h"
#include "sim/errors.h"
#include "sim/parallel/row_bands.h"
#include "sim/parallel/team.h"
#include "sim/stats/formatters.h"
#include "sim/stats/stats.h"
#include "tests/support/manual_engine.h"

namespace wafersim::hw::parallel_cores_test {
namespace {

constexpr unsigned kThreads[] = {2, 3, 4, 8};
constexpr std::uint32_t kWidth = 8, kHeight = 32;  // four granules of 8 rows
constexpr unsigned kN = 8;                         // elements per PE
constexpr std::uint32_t kY = 0x200, kIn = 0x300, kTimer = 0x400;

// Row y sends on color 1 + y % 2 south, and takes what row y - 1 sent from the north.
std::uint32_t sent_by(std::uint32_t y) { return 1 + y % 2; }

std::string routes() {
  std::string r = "routes:\n";
  for (std::uint32_t y = 0; y < kHeight; ++y) {
    if (y + 1 < kHeight)
      r += fmt::format("  - {{color: {}, x: 0..{}, y: {}, from: ramp, to: south}}\n", sent_by(y), kWidth - 1, y);
    if (y > 0)
      r += fmt::format("  - {{color: {}, x: 0..{}, y: {}, from: north, to: ramp}}\n", sent_by(y - 1), kWidth - 1, y);
  }
  return r;
}

// Every PE: y = a x (PE-dependent loop counts, so cores finish at different cycles), then
// y += what the PE above sent, then y down to the PE below; the cycle counter at the end.
// `fault_at`: PEs that load from beyond the SRAM after the products.
std::string programs(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& fault_at = {}) {
  std::string s;
  for (std::uint32_t y = 0; y < kHeight; ++y)
    for (std::uint32_t x = 0; x < kWidth; ++x) {
      bool fault = false;
      for (const auto& [fx, fy] : fault_at) fault = fault || (fx == x && fy == y);
      s += fmt::format(R"(
.pe {x}, {y}
.fill a, 0x0, f32, {n} * 4, 1.25
.fill yv, {yv}, f32, {n}, 0.5
.dsd va, mem, f32, base=a, len={n}
.dsd vy, mem, f32, base=yv, len={n}
.dsd vin, mem, f32, base={in}, len={n}
.dsd up, fabin, f32, color={up}, len={n}
.dsd down, fabout, f32, color={down}, len={n}
.task main, 0
.entry main
main:
  mov r1, 0
  mov.f32 r3, 0.75
col:
  fmac.f32 vy, vy, va, r3
  dsd.add va, {n}
  add r1, r1, 1
  blt r1, {cols}, col
{fault}{recv}{send}  tsc r2
  st [{t}], r2
  ret
)",
                       fmt::arg("x", x), fmt::arg("y", y), fmt::arg("n", kN), fmt::arg("yv", kY), fmt::arg("in", kIn),
                       fmt::arg("up", y > 0 ? sent_by(y - 1) : 1), fmt::arg("down", sent_by(y)),
                       fmt::arg("cols", 1 + (x + 3 * y) % 4), fmt::arg("t", kTimer),
                       fmt::arg("fault", fault ? "  ld r4, [0x7ffffff0]\n" : ""),
                       fmt::arg("recv", y > 0 ? "  fmov.f32 vin, up\n  fadd.f32 vy, vy, vin\n" : ""),
                       fmt::arg("send", y + 1 < kHeight ? "  fmov.f32 down, vy\n" : ""));
    }
  return s;
}

struct Outcome {
  std::string stats;  // the cores' and the mesh's statistics tree
  std::vector<std::uint32_t> values;
  std::uint64_t cycles = 0, core_ticks = 0;
  std::uint32_t bands = 1;
  std::uint64_t jobs = 0, core_jobs = 0, rebalances = 0;
  std::string error;
};

Outcome run(unsigned threads, bool sleep, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& fault_at = {}) {
  fabric::FabricConfig f;
  f.colors = 8;
  f.edge_io_channels = 0;
  f.stats_detail = fabric::StatsDetail::Routers;
  const fabric::MeshGeometry g(kWidth, kHeight, 0);
  sim::parallel::Team team(threads);
  sim::parallel::RowBands bands(&team, kHeight, fabric::Mesh::kBandRows, threads);
  fabric::MeshOptions m;
  m.routes = std::make_shared<fabric::RouteTable>(fabric::parse_routes(routes(), "routes.yaml", g, f.colors));
  m.bands = &bands;
  fabric::Mesh mesh(f, g, m, nullptr);
  WaferConfig w;  // wse2's PE
  w.width = kWidth;
  w.height = kHeight;
  w.pe.sram.size = units::DataSize::from_bytes(48 * 1024);
  w.pe.sram.bank_width = units::DataSize::from_bytes(4);
  w.pe.sram.port_width = units::DataSize::from_bytes(8);
  LatencyConfig& l = w.pe.latency;
  l = LatencyConfig{sim::Cycle(1), sim::Cycle(2), sim::Cycle(1), sim::Cycle(2), sim::Cycle(3),
                    sim::Cycle(4), sim::Cycle(8), sim::Cycle(8), sim::Cycle(2), sim::Cycle(1)};
  CoreArray cores("cores", w, CoreArrayOptions{f.colors, sleep, false});
  cores.set_bands(&bands);
  cores.connect([&mesh](PeCoord pe) { return &mesh.ramp(pe); });
  mesh.set_arrival_listener(&cores);
  for (const auto& p : isa::assemble(programs(fault_at), "t.s")) cores.load(p);
  test::ManualEngine engine;
  engine.add(&mesh);
  engine.add(&cores);
  Outcome out;
  out.bands = bands.count();
  try {
    out.cycles = engine.run([&] { return cores.busy_count() == 0 && mesh.idle(); }, 100000);
  } catch (const sim::SimulationError& e) {
    out.error = e.what();
    return out;
  }
  sim::stats::Group root("root");
  cores.add_stats(root);
  mesh.add_stats(root.group("fabric"));
  out.stats = sim::stats::to_json(root).dump();
  for (std::uint32_t y = 0; y < kHeight; ++y)
    for (std::uint32_t x = 0; x < kWidth; ++x) {
      const Core& c = *cores.find(PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y)});
      out.values.push_back(c.sram().load(kTimer, 4));
      for (unsigned i = 0; i < kN; ++i) out.values.push_back(c.sram().load(kY + 4 * i, 4));
    }
  out.core_ticks = cores.core_ticks();
  out.jobs = team.jobs();
  out.core_jobs = cores.band_jobs();
  out.rebalances = bands.rebalances();
  return out;
}

void expect_same_at_every_count(bool sleep) {
  const Outcome serial = run(1, sleep);
  ASSERT_EQ(serial.error, "");
  ASSERT_EQ(serial.values.size(), kWidth * kHeight * (kN + 1));
  // The last row's values passed through every band boundary: every row added its products.
  EXPECT_GT(serial.cycles, 100u);
  EXPECT_EQ(serial.jobs, 0u);
  EXPECT_EQ(serial.core_jobs, 0u);
  for (const unsigned n : kThreads) {
    SCOPED_TRACE("threads " + std::to_string(n));
    const Outcome parallel = run(n, sleep);
    EXPECT_EQ(parallel.error, "");
    EXPECT_EQ(parallel.bands, std::min(n, 4u));
    EXPECT_GT(parallel.core_jobs, 50u);
    EXPECT_EQ(parallel.cycles, serial.cycles);
    EXPECT_EQ(parallel.core_ticks, serial.core_ticks);
    EXPECT_TRUE(parallel.values == serial.values);
    EXPECT_EQ(parallel.stats, serial.stats);
  }
}

TEST(ParallelCores, SleepingCoresGiveTheSameResultsAtEveryThreadCount) { expect_same_at_every_count(true); }

TEST(ParallelCores, CoresTickedEveryCycleGiveTheSameResultsAtEveryThreadCount) { expect_same_at_every_count(false); }

TEST(ParallelCores, TheBandsFollowTheBusyCores) {
  // Ticked every cycle while busy, the lower rows (waiting for the wave from above) do more
  // ticks than the upper ones: the boundaries move, and nothing else changes.
  const Outcome parallel = run(2, false);
  EXPECT_EQ(parallel.bands, 2u);
  EXPECT_GT(parallel.rebalances, 0u);
  EXPECT_EQ(parallel.stats, run(1, false).stats);
}

TEST(ParallelCores, AProgramErrorIsTheOneASingleThreadMeetsFirst) {
  // Faults in the fourth and the second band in the same cycle: the first in PE order is told.
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> faults = {{2, 25}, {2, 9}};
  const Outcome serial = run(1, true, faults);
  ASSERT_NE(serial.error.find("PE (2, 9)"), std::string::npos) << serial.error;
  for (const unsigned n : kThreads) EXPECT_EQ(run(n, true, faults).error, serial.error) << n;
}

}  // namespace
}  // namespace wafersim::hw::parallel_cores_test
