// A memory-operand FMAC sustains the SIMD lanes of each preset's PE (docs/isa.md, "SRAM"):
// `fmac.f16 y, y, x, r` over 64 elements, y and x in different bank pairs, takes one step of
// `lanes` elements per cycle with no stall on `wse2` (4 lanes, 64-bit ports) and on `wse3` (8
// lanes, 128-bit ports, U); with WSE-2's 64-bit ports the 8 lanes of wse3 would stall.

#include <gtest/gtest.h>

#include <string>

#include "tests/support/core_rig.h"

namespace wafersim::test::core_lanes_test {
namespace {

// tsc r1 at 2, mov at 3, the FMAC issued at 4, tsc r2 at its completion cycle.
const char* kAxpy =
    ".pe 0, 0\n.fill yv, 0x000, f16, 64, 1.0\n.fill xv, 0x410, f16, 64, 0.5\n"
    ".dsd y, mem, f16, base=0x000, len=64\n.dsd x, mem, f16, base=0x410, len=64\n"
    ".task main, 0\n.entry main\nmain:\n  tsc r1\n  mov.f16 r3, 2.0\n  fmac.f16 y, y, x, r3\n  tsc r2\n  ret\n";

struct Case {
  const char* platform;
  std::vector<std::string> overrides;
  std::uint64_t lanes, done, port_stalls;
};

void expect_rate(const Case& c) {
  CoreRig rig(c.overrides, true, false, c.platform);
  EXPECT_EQ(rig.spec.wafer.pe.simd_lanes.fp16, c.lanes) << c.platform;
  rig.load(kAxpy);
  rig.run_to(c.done);
  EXPECT_EQ(rig.reg(2), 0u) << c.platform << ": complete before cycle " << c.done;
  rig.run();
  // Issued at 4: 2 cycles to the first step, the steps, then the FMAC latency of 4.
  EXPECT_EQ(rig.reg(2), c.done) << c.platform;
  EXPECT_EQ(rig.stall(hw::Stall::SramPort), c.port_stalls) << c.platform;
  EXPECT_EQ(rig.stall(hw::Stall::SramBank), 0u) << c.platform;
  EXPECT_EQ(rig.counters().vector_elements, 64u) << c.platform;
  EXPECT_EQ(rig.word(0, 2), 0x4000u) << c.platform;  // 1 + 0.5 x 2 = 2
}

const std::vector<std::string> kOnePe{"wafer.width=1", "wafer.height=1", "fabric.edge_io_channels=1"};

TEST(PresetLanes, Wse2SustainsFourFp16LanesFromMemory) { expect_rate({"wse2", kOnePe, 4, 4 + 2 + 16 + 4, 0}); }

TEST(PresetLanes, Wse3SustainsEightFp16LanesFromMemory) { expect_rate({"wse3", kOnePe, 8, 4 + 2 + 8 + 4, 0}); }

TEST(PresetLanes, EightLanesBehindSixtyFourBitPortsTakeThreeCyclesAStep) {
  // Each step of 8: y's two words and one of x's (the third read waits), x's second word and
  // y's first write (the second write waits), y's second write: 3 cycles, 2 port stalls.
  std::vector<std::string> o = kOnePe;
  o.insert(o.end(), {"wafer.pe.sram.port_width=64b", "wafer.pe.sram.bank_width=32b"});
  expect_rate({"wse3", o, 8, 4 + 2 + 8 * 3 + 4, 8 * 2});
}

}  // namespace
}  // namespace wafersim::test::core_lanes_test
