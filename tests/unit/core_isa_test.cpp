// Instruction semantics of the PE core (docs/isa.md "Instructions"): integer ALU, compares,
// branches, loads and stores, the cycle counter, send/receive, scalar float instructions
// and their latencies, iterative vector instructions, descriptor updates, error paths.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "hw/numerics/elementary.h"
#include "hw/numerics/softfloat.h"
#include "sim/errors.h"
#include "tests/support/core_rig.h"

namespace wafersim::test::core_isa_test {
namespace {

using hw::DType;
using hw::Stall;
namespace nx = hw::numerics;

std::string task(const std::string& body, const std::string& decls = "") {
  return ".pe 0, 0\n" + decls + ".task main, 0\n.entry main\nmain:\n" + body + "  ret\n";
}

TEST(Isa, IntegerArithmeticLogicAndShifts) {
  CoreRig rig;
  rig.load(task(R"(
  mov r1, 7
  mov r2, -3
  add r3, r1, r2        ; 4
  sub r4, r2, r1        ; -10
  mul r5, r1, r2        ; -21
  and r6, r1, 0x5       ; 5
  or r7, r1, 0x10       ; 23
  xor r8, r1, r1        ; 0
  shl r9, r1, 33        ; shifts use the low 5 bits: 7 << 1
  shr r10, r2, 28       ; 0xfffffffd >> 28 = 15
  sra r11, r2, 1        ; -2
  mov r12, 0xffffffff
  add r12, r12, 1       ; wraps to 0
)"));
  rig.run();
  EXPECT_EQ(rig.reg(3), 4u);
  EXPECT_EQ(rig.reg(4), static_cast<std::uint32_t>(-10));
  EXPECT_EQ(rig.reg(5), static_cast<std::uint32_t>(-21));
  EXPECT_EQ(rig.reg(6), 5u);
  EXPECT_EQ(rig.reg(7), 23u);
  EXPECT_EQ(rig.reg(8), 0u);
  EXPECT_EQ(rig.reg(9), 14u);
  EXPECT_EQ(rig.reg(10), 15u);
  EXPECT_EQ(rig.reg(11), static_cast<std::uint32_t>(-2));
  EXPECT_EQ(rig.reg(12), 0u);
}

TEST(Isa, ComparesAndBranchesSignedAndUnsigned) {
  CoreRig rig;
  rig.load(task(R"(
  mov r1, -1
  cmp.lt r2, r1, 0      ; signed: -1 < 0
  cmp.ltu r3, r1, 0     ; unsigned: 0xffffffff < 0 is false
  cmp.geu r4, r1, 5
  cmp.eq r5, r1, -1
  mov r6, 0             ; count a loop of 10
  mov r7, 0
loop:
  add r6, r6, 3
  add r7, r7, 1
  blt r7, 10, loop
  bgtu r1, 0, skip      ; taken (unsigned)
  mov r8, 99
skip:
  jmp end
  mov r9, 99
end:
)"));
  rig.run();
  EXPECT_EQ(rig.reg(2), 1u);
  EXPECT_EQ(rig.reg(3), 0u);
  EXPECT_EQ(rig.reg(4), 1u);
  EXPECT_EQ(rig.reg(5), 1u);
  EXPECT_EQ(rig.reg(6), 30u);
  EXPECT_EQ(rig.reg(8), 0u);
  EXPECT_EQ(rig.reg(9), 0u);
  // 1 + 4 compares + 2 movs + 10 x 3 loop + bgtu + jmp + ret = 40 instructions, one per cycle,
  // after the task switch: busy from 0 to 41.
  EXPECT_EQ(rig.counters().instructions, 40u);
  EXPECT_EQ(rig.counters().finish_cycle, 42u);
}

TEST(Isa, LoadsStoresAndTheCycleCounter) {
  CoreRig rig;
  rig.load(task(R"(
  mov r1, 0x100
  st [r1 + 4], r2
  mov r2, 0x12345678
  st [r1 + 8], r2
  ld r3, [r1 + 8]
  ld.h r4, [0x10A]      ; upper half, zero-extended
  st.h [0x110], r2      ; low half only
  ld r5, [0x110]
  tsc r6
  tsc.hi r7
)"));
  rig.run();
  EXPECT_EQ(rig.reg(3), 0x12345678u);
  EXPECT_EQ(rig.reg(4), 0x1234u);
  EXPECT_EQ(rig.reg(5), 0x5678u);
  EXPECT_EQ(rig.reg(6), 10u);  // the 9th instruction, issued at cycle 2 + 8
  EXPECT_EQ(rig.reg(7), 0u);
  EXPECT_EQ(rig.counters().sram_reads, 3u);
  EXPECT_EQ(rig.counters().sram_writes, 3u);
}

TEST(Isa, SendAndReceiveScalarsOverTheRamp) {
  // PE (0,0) sends 3 wavelets (one per cycle from 2); the link delivers them to (1,0) four
  // cycles later; (1,0) receives them from cycle 2 on, waiting for each (fabric_in).
  CoreRig rig;
  rig.load(R"(
.pe 0, 0
.task main, 0
.entry main
main:
  send 1, 100
  send 1, 200
  mov r1, 300
  send 1, r1
  ret
.pe 1, 0
.task main, 0
.entry main
main:
  recv r1, 2
  recv r2, 2
  recv r3, 2
  tsc r4
  ret
)");
  rig.fabric.link(hw::PeCoord{0, 0}, hw::Color(1), hw::PeCoord{1, 0}, hw::Color(2), 4);
  rig.run();
  EXPECT_EQ(rig.reg(1, 1, 0), 100u);
  EXPECT_EQ(rig.reg(2, 1, 0), 200u);
  EXPECT_EQ(rig.reg(3, 1, 0), 300u);
  // Sent at 2, 3, 5; visible at 6, 7, 9; received at 6, 7, 9; tsc at 10.
  EXPECT_EQ(rig.reg(4, 1, 0), 10u);
  EXPECT_EQ(rig.stall(Stall::FabricIn, 1, 0), 4u + 0u + 1u);
}

TEST(Isa, ControlWaveletsAreSentWithTheirFlag) {
  CoreRig rig;
  rig.load(task("  send.ctl 5, 7\n"));
  rig.run();
  ASSERT_EQ(rig.fabric.sent.size(), 1u);
  EXPECT_TRUE(rig.fabric.sent[0].w.control);
  EXPECT_EQ(rig.fabric.sent[0].w.payload, 7u);
  EXPECT_EQ(rig.fabric.sent[0].cycle, 2u);
}

TEST(Isa, ScalarFloatInstructionsAndTheirLatencies) {
  CoreRig rig;
  rig.load(task(R"(
  mov.f32 r1, 1.5
  mov.f32 r2, -2.25
  fadd.f32 r3, r1, r2   ; add: 2 cycles
  fmul.f32 r4, r1, r2   ; mul: 3
  fmac.f32 r5, r1, r1, r2   ; fmac: 4 (1.5 + 1.5 x -2.25)
  fmax.f32 r6, r1, r2
  fneg.f32 r7, r1
  mov.f16 r8, 0.5
  fcvt.f32.f16 r9, r8
  fexp.f16 r10, r8      ; exp: 8
  frecip.f32 r11, r2    ; recip: 8
  mov.f32 r12, nan
  fcmp.lt.f32 r13, r12, r1
  fcmp.ne.f32 r14, r12, r12
  fcmp.ge.f32 r15, r1, r2
  tsc r0
)"));
  rig.run();
  auto f = [&](unsigned r) {
    float v;
    const std::uint32_t b = rig.reg(r);
    std::memcpy(&v, &b, 4);
    return v;
  };
  EXPECT_EQ(f(3), -0.75f);
  EXPECT_EQ(f(4), -3.375f);
  EXPECT_EQ(f(5), 1.5f - 3.375f);
  EXPECT_EQ(f(6), 1.5f);
  EXPECT_EQ(f(7), -1.5f);
  EXPECT_EQ(f(9), 0.5f);
  EXPECT_EQ(rig.reg(10), nx::exp(DType::F16, 0x3800));
  EXPECT_EQ(rig.reg(11), nx::recip(DType::F32, nx::from_double(DType::F32, -2.25)));
  EXPECT_EQ(rig.reg(13), 0u);
  EXPECT_EQ(rig.reg(14), 1u);
  EXPECT_EQ(rig.reg(15), 1u);
  // Issue cycles: movs 2, 3; fadd 4 (+2); fmul 6 (+3); fmac 9 (+4); fmax 13 (+2); fneg 15 (+2);
  // mov 17; fcvt 18 (+2); fexp 20 (+8); frecip 28 (+8); mov 36; fcmp 37, 39, 41 (+2); tsc 43.
  EXPECT_EQ(rig.reg(0), 43u);
}

TEST(Isa, IterativeVectorInstructionsTakeTheirLatencyPerElement) {
  CoreRig rig;
  rig.load(task("  tsc r1\n  fexp.f32 d, s\n  tsc r2\n  frecip.f16 h, g\n  tsc r3\n",
                ".data s0, 0x0, f32, 0, 1, -1\n.data g0, 0x40, f16, 2, 4, 0\n.dsd s, mem, f32, base=0x0, len=3\n"
                ".dsd d, mem, f32, base=0x100, len=3\n.dsd g, mem, f16, base=0x40, len=3\n"
                ".dsd h, mem, f16, base=0x200, len=3\n"));
  rig.run();
  // vector_start + 3 elements x 8 cycles (no pipeline latency after the last).
  EXPECT_EQ(rig.reg(2) - rig.reg(1) - 1, 2u + 3 * 8);
  EXPECT_EQ(rig.reg(3) - rig.reg(2) - 1, 2u + 3 * 8);
  EXPECT_EQ(rig.word(0x100, 4), 0x3F800000u);
  EXPECT_EQ(rig.word(0x104, 4), nx::exp(DType::F32, 0x3F800000));
  EXPECT_EQ(rig.word(0x200, 2), 0x3800u);  // 1/2
  EXPECT_EQ(rig.word(0x202, 2), 0x3400u);  // 1/4
  EXPECT_EQ(rig.word(0x204, 2), 0x7C00u);  // 1/0 = inf
}

TEST(Isa, DescriptorsChangeAtRunTimeAndInstructionsSnapshotThem) {
  CoreRig rig;
  rig.load(task(R"(
  fmov.f32 d, s          ; copies 2 elements from 0x0 to 0x100
  dsd.base s, 0x8
  dsd.len s, 4
  dsd.len d, 4
  dsd.add d, 2           ; d now starts at 0x108
  fmov.f32 d, s          ; copies 4 elements from 0x8 to 0x108
  dsd.stride s, 2
  dsd.base d, 0x200
  dsd.len s, 2
  dsd.len d, 2
  fmov.f32 d, s          ; 0x8, 0x10 -> 0x200, 0x204
)",
                ".data v, 0x0, f32, 1, 2, 3, 4, 5, 6\n.dsd s, mem, f32, base=0x0, len=2\n"
                ".dsd d, mem, f32, base=0x100, len=2\n"));
  rig.run();
  const float expect[] = {1, 2, 3, 4, 5, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(rig.f32(0x100 + 4 * i), expect[i]) << i;
  EXPECT_EQ(rig.f32(0x200), 3.0f);
  EXPECT_EQ(rig.f32(0x204), 5.0f);
}

TEST(Isa, ZeroLengthVectorInstructionCompletesAfterStartAndLatency) {
  CoreRig rig;
  rig.load(task("  tsc r1\n  fadd.f32 d, d, d\n  tsc r2\n", ".dsd d, mem, f32, base=0x0, len=0\n"));
  rig.run();
  EXPECT_EQ(rig.reg(2) - rig.reg(1) - 1, 2u + 2u);
  EXPECT_EQ(rig.counters().vector_elements, 0u);
}

TEST(Isa, RawCopiesAndConversions) {
  CoreRig rig;
  rig.load(task("  fmov.u16 d16, s16\n  fcvt.bf16.f32 b, f\n  fcvt.f16.bf16 h, b\n",
                ".data a, 0x0, u16, 0xffff, 0x7e01, 1\n.data fv, 0x10, f32, 1.00390625, 70000, -0.0\n"
                ".dsd s16, mem, u16, base=0x0, len=3\n.dsd d16, mem, u16, base=0x100, len=3\n"
                ".dsd f, mem, f32, base=0x10, len=3\n.dsd b, mem, bf16, base=0x200, len=3\n"
                ".dsd h, mem, f16, base=0x300, len=3\n"));
  rig.run();
  EXPECT_EQ(rig.word(0x100, 2), 0xFFFFu);
  EXPECT_EQ(rig.word(0x102, 2), 0x7E01u);  // raw copy: a NaN pattern is not touched
  EXPECT_EQ(rig.word(0x200, 2), 0x3F80u);  // 1 + 2^-8 is a tie in bf16: to even (1.0)
  EXPECT_EQ(rig.word(0x202, 2), nx::convert(DType::BF16, DType::F32, nx::from_double(DType::F32, 70000)));
  EXPECT_EQ(rig.word(0x204, 2), 0x8000u);
  EXPECT_EQ(rig.word(0x302, 2), 0x7C00u);  // 70000 overflows fp16
}

TEST(Isa, AsyncCompletionActivatesATaskChain) {
  CoreRig rig;
  rig.load(R"(
.pe 0, 0
.dsd s, mem, f32, base=0x0, len=4
.dsd d, mem, f32, base=0x100, len=4
.task main, 0
.task second, 1
.entry main
main:
  fmov.f32 d, s, async, activate=second
  ret
second:
  tsc r1
  ret
)");
  rig.run();
  // Issued at 2: steps 4, 5 (two fp32 per step), done at 5 + 1 + 1 = 7; second starts at 7.
  EXPECT_EQ(rig.reg(1), 9u);
  EXPECT_EQ(rig.counters().task_activations, 2u);
}

TEST(Errors, LengthMismatchAndSparseIndexAreNamed) {
  CoreRig a;
  a.load(task("  fadd.f32 c, a, b\n",
              ".dsd a, mem, f32, base=0x0, len=4\n.dsd b, mem, f32, base=0x40, len=3\n"
              ".dsd c, mem, f32, base=0x80, len=4\n"));
  try {
    a.run();
    FAIL();
  } catch (const sim::SimulationError& e) {
    EXPECT_EQ(std::string(e.what()),
              "PE (0, 0): length mismatch: 'c' has 4 elements but 'b' has 3 ('fadd.f32 c, a, b' at t.s:8:3)");
  }
  CoreRig b;
  b.load(task("  fmac.f16 y, y, w, r1\n",
              ".dsd y, mem, f16, base=0x0, len=8\n.dsd w, fabin, f16, color=1, len=1, sparse\n"));
  b.fabric.inject(hw::PeCoord{0, 0}, hw::Wavelet{8u << 16, hw::Color(1), false}, 1);
  try {
    b.run();
    FAIL();
  } catch (const sim::SimulationError& e) {
    EXPECT_EQ(std::string(e.what()),
              "PE (0, 0): sparse index 8 is beyond descriptor 'y' of 8 elements ('fmac.f16 y, y, w, r1' at t.s:7:3)");
  }
  CoreRig c;
  c.load(".pe 0, 0\n.task t, 1\nt: ret\n");
  c.fabric.inject(hw::PeCoord{0, 0}, hw::Wavelet{9, hw::Color(0), true}, 3);
  EXPECT_THROW(c.run(), sim::SimulationError);
  CoreRig d;
  d.load(task(""));
  EXPECT_THROW(d.cores.activate(hw::PeCoord{0, 0}, 5, sim::Cycle(0)), sim::InputError);
  EXPECT_THROW(d.cores.activate(hw::PeCoord{1, 0}, 0, sim::Cycle(0)), sim::InputError);
}

TEST(Errors, FallingOffTheEndOfTheProgram) {
  CoreRig rig;
  rig.load(".pe 0, 0\n.task main, 0\n.entry main\nmain:\n  nop\n");
  try {
    rig.run();
    FAIL();
  } catch (const sim::SimulationError& e) {
    EXPECT_EQ(std::string(e.what()), "PE (0, 0): task 0 ran past the end of t.s (missing 'ret'?)");
  }
}

}  // namespace
}  // namespace wafersim::test::core_isa_test
