// Timing-only PE runs (hw::CoreParams::timing_only, `wafersim exec --timing-only`): the same
// cycles and counters as the functional run, no values computed, no SRAM for program data.

#include <gtest/gtest.h>

#include <string>

#include "tests/support/core_rig.h"

namespace wafersim::test::timing_only_test {
namespace {

using hw::PeCoord;

// Vector work of every kind over data spread across three 4 KiB pages: fp16 and fp32 FMAC,
// a conversion, a reduction, the iterative unit, an asynchronous microthread, bank
// conflicts (x and y in one bank pair), and a stream to a second PE that consumes it as a
// fabric operand. No branch depends on a computed value.
const char* kProgram = R"(
.equ N, 64
.pe 0, 0
.fill x16, 0x0000, f16, N, 0.5
.fill y16, 0x1000, f16, N, 1.0
.fill x32, 0x1100, f32, N, 0.25
.fill y32, 0x2000, f32, N, 2.0
.fill z32, 0x2400, f32, N, 3.0
.dsd vx16, mem, f16, base=x16, len=N
.dsd vy16, mem, f16, base=y16, len=N
.dsd vx32, mem, f32, base=x32, len=N
.dsd vy32, mem, f32, base=y32, len=N
.dsd vz32, mem, f32, base=z32, len=N
.dsd vz8, mem, f32, base=z32, len=8
.dsd out, fabout, f32, color=2, len=N
.task main, 0
.task tail, 1
.entry main
main:
  mov.f16 r1, 3.0
  fmac.f16 vy16, vy16, vx16, r1
  mov.f32 r2, 1.5
  fmac.f32 vy32, vy32, vx32, r2
  fadd.f32 vz32, vz32, vy32
  fexp.f32 vz8, vz8
  fcvt.f32.f16 vx32, vx16
  fdot.f32 r3, vy32, vz32
  mov r4, 3
loop:
  fmul.f32 vy32, vy32, vz32
  sub r4, r4, 1
  bne r4, 0, loop
  fmov.f32 out, vy32, async, activate=tail
  ret
tail:
  fsum.f32 r5, vz32
  ret
.pe 1, 0
.fill acc, 0x0000, f32, N, 0.0
.dsd vacc, mem, f32, base=acc, len=N
.dsd in, fabin, f32, color=2, len=N
.task main, 0
.entry main
main:
  fadd.f32 vacc, vacc, in
  ret
)";

struct PeRun {
  explicit PeRun(bool timing_only) : rig({}, true, timing_only) {
    rig.fabric.link(PeCoord{0, 0}, hw::Color(2), PeCoord{1, 0}, hw::Color(2), 3, 4);
    rig.load(kProgram);
    cycles = rig.run();
  }
  CoreRig rig;
  std::uint64_t cycles = 0;
};

void expect_same_counters(const hw::CoreCounters& a, const hw::CoreCounters& b) {
  EXPECT_EQ(a.busy_cycles, b.busy_cycles);
  EXPECT_EQ(a.instructions, b.instructions);
  EXPECT_EQ(a.vector_ops, b.vector_ops);
  EXPECT_EQ(a.vector_elements, b.vector_elements);
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(a.task_activations, b.task_activations);
  EXPECT_EQ(a.wavelets_in, b.wavelets_in);
  EXPECT_EQ(a.wavelets_out, b.wavelets_out);
  EXPECT_EQ(a.sram_reads, b.sram_reads);
  EXPECT_EQ(a.sram_writes, b.sram_writes);
  EXPECT_EQ(a.sram_bytes_read, b.sram_bytes_read);
  EXPECT_EQ(a.sram_bytes_written, b.sram_bytes_written);
  EXPECT_EQ(a.finish_cycle, b.finish_cycle);
  for (int s = 0; s < hw::kStallCauses; ++s) EXPECT_EQ(a.stall[s], b.stall[s]) << hw::stall_name(hw::Stall(s));
}

TEST(TimingOnly, SameCyclesAndCountersAsTheFunctionalRun) {
  PeRun functional(false), timing(true);
  EXPECT_EQ(timing.cycles, functional.cycles);
  for (unsigned x = 0; x < 2; ++x) {
    SCOPED_TRACE(x);
    expect_same_counters(timing.rig.counters(x, 0), functional.rig.counters(x, 0));
  }
  // The program does real work of every kind: stalls and the stream are exercised.
  const auto& f = functional.rig.counters(0, 0);
  EXPECT_GT(f.stall[static_cast<int>(hw::Stall::SramBank)], 0u);
  EXPECT_EQ(f.wavelets_out, 64u);
  EXPECT_EQ(functional.rig.counters(1, 0).wavelets_in, 64u);
  EXPECT_EQ(f.task_activations, 2u);
}

TEST(TimingOnly, ComputesNoValuesAndAllocatesNoSramForData) {
  PeRun functional(false), timing(true);
  // Functional: PE (0, 0) holds its data in pages 0, 1 and 2, PE (1, 0) in page 0.
  EXPECT_EQ(functional.rig.cores.sram_allocated_bytes(), 4u * hw::Sram::kPageBytes);
  EXPECT_EQ(timing.rig.cores.sram_allocated_bytes(), 0u);
  // y32[0] = (2 + 0.25 x 1.5) x 3.375^3 ... nonzero in the functional run; nothing in timing-only.
  EXPECT_NE(functional.rig.word(0x2000, 4), 0u);
  EXPECT_EQ(timing.rig.word(0x2000, 4), 0u);
  EXPECT_NE(functional.rig.reg(3), 0u);
  EXPECT_EQ(timing.rig.reg(3), 0u);
}

}  // namespace
}  // namespace wafersim::test::timing_only_test
