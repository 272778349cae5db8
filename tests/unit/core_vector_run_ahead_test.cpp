// Running a vector operation's steps ahead (hw::Core::run_ahead_vector): while the main thread
// waits for a synchronous operation or a microthread and one operation alone is live, its
// steps that take no new wavelet, pop, send or finish are taken in one tick, each at its own
// cycle with that cycle's ports. The counters, the SRAM and the registers are those of the
// core stepping them a tick each (no horizon), in fewer core ticks; a horizon stops it at the
// same state. Timing as in core_timing_test.cpp (the `tiny` preset).

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "sim/types.h"
#include "tests/support/core_rig.h"

namespace wafersim::test::core_vector_run_ahead_test {
namespace {

using hw::Stall;

struct Outcome {
  std::uint64_t ticks = 0, cycles = 0;
  hw::CoreCounters counters{};
  std::vector<std::uint32_t> sram;  // the first `words` 32-bit words
  std::uint32_t r2 = 0, r3 = 0, r4 = 0;
};

// `program` on PE (0, 0), run to its end (or to cycle `stop`), its main thread and vector
// operations ahead up to `horizon` (Cycle(0): not at all); `wavelets` arrive on color 1, one
// every `gap` cycles from cycle 1: fp16 0.5, 1.5, 2.5, ...
Outcome run(const std::string& program, sim::Cycle horizon, bool timing_only = false, std::uint64_t stop = 0,
            std::uint32_t words = 0x140, unsigned wavelets = 0, unsigned gap = 1) {
  CoreRig rig({}, true, timing_only);
  rig.cores.set_run_ahead(horizon);
  rig.load(program);
  const std::uint32_t values[] = {0x3800, 0x3e00, 0x4100, 0x4300, 0x4480, 0x4580};
  for (unsigned k = 0; k < wavelets; ++k)
    rig.fabric.inject(hw::PeCoord{0, 0}, hw::Wavelet{values[k % 6], hw::Color(1), false}, 1 + k * gap);
  Outcome r;
  if (stop) {
    rig.run_to(stop);
    r.cycles = stop;
  } else {
    r.cycles = rig.run();
  }
  r.ticks = rig.cores.core_ticks();
  r.counters = rig.cores.accounted(hw::PeCoord{0, 0});
  for (std::uint32_t a = 0; a < words * 4; a += 4) r.sram.push_back(rig.word(a, 4));
  r.r2 = rig.reg(2);
  r.r3 = rig.reg(3);
  r.r4 = rig.reg(4);
  return r;
}

void expect_same(const Outcome& ahead, const Outcome& each) {
  EXPECT_EQ(ahead.cycles, each.cycles);
  EXPECT_EQ(std::memcmp(&ahead.counters, &each.counters, sizeof(hw::CoreCounters)), 0);
  EXPECT_EQ(ahead.counters.busy_cycles, each.counters.busy_cycles);
  EXPECT_EQ(ahead.counters.vector_elements, each.counters.vector_elements);
  EXPECT_EQ(ahead.sram, each.sram);
  EXPECT_EQ(ahead.r2, each.r2);
  EXPECT_EQ(ahead.r3, each.r3);
  EXPECT_EQ(ahead.r4, each.r4);
}

// `program` stepped a tick each (no horizon) and ahead without one, checked to end the same.
struct Both {
  Outcome each, ahead;
};
Both run_both(const std::string& program, bool timing_only = false, unsigned wavelets = 0, unsigned gap = 1) {
  Both r{run(program, sim::Cycle(0), timing_only, 0, 0x140, wavelets, gap),
         run(program, sim::Cycle::never(), timing_only, 0, 0x140, wavelets, gap)};
  expect_same(r.ahead, r.each);
  return r;
}

// PE (0, 0)'s program: `data` (fills and descriptors), then the main task's `body`, which
// r2 timestamps at its end.
std::string pe_program(const std::string& data, const std::string& body) {
  return ".pe 0, 0\n" + data + ".task main, 0\n.entry main\nmain:\n" + body + "  tsc r2\n  ret\n";
}

// x (0.75) and y (0.25), 64 fp16 elements each; a step's words of x and y are in different
// banks.
const std::string kXy = R"(.fill x, 0x0, f16, 64, 0.75
.fill y, 0x108, f16, 64, 0.25
.dsd vx, mem, f16, base=x, len=64
.dsd vy, mem, f16, base=y, len=64
)";

// y = x * 0.5 + y (16 steps of 4), synchronous: the main thread waits.
const std::string kSyncFmac = pe_program(kXy, "  mov r1, 0x3800\n  fmac.f16 vy, vy, vx, r1\n");

TEST(VectorRunAhead, ASynchronousOperationsStepsTakeOneTick) {
  const auto [each, ahead] = run_both(kSyncFmac);
  EXPECT_EQ(each.counters.vector_elements, 64u);
  EXPECT_EQ(ahead.sram[0x108 / 4], 0x39003900u) << "0.75 * 0.5 + 0.25 = 0.625 in both halves";
  // Its first step, then the 14 steps before its last in the same tick, then the last step.
  EXPECT_EQ(each.ticks - ahead.ticks, 14u);
}

// Operations other than an FMAC compute their elements taken ahead in one call, in order: a
// sum into y, a copy of a scalar, an fp16 dot product into a register and its fp32 sum.
TEST(VectorRunAhead, OtherOperationsGiveTheSameElementsAndReductions) {
  const std::string program = pe_program(kXy + ".fill z, 0x200, f16, 64, 1.5\n.dsd vz, mem, f16, base=z, len=64\n",
                                         "  fadd.f16 vy, vy, vx\n  mov r1, 0x3c00\n  fmov.f16 vz, r1\n"
                                         "  fdot.f16 r3, vy, vx\n  fsum.f16 r4, vy\n");
  for (const bool timing_only : {false, true}) {
    const auto [each, ahead] = run_both(program, timing_only);
    EXPECT_EQ(each.counters.vector_elements, 4u * 64u) << timing_only;
    EXPECT_LT(ahead.ticks + 52u, each.ticks) << timing_only;  // at least 13 of each one's 16 steps
    if (!timing_only) {
      EXPECT_EQ(ahead.sram[0x108 / 4], 0x3c003c00u) << "0.25 + 0.75 = 1";
      EXPECT_EQ(ahead.sram[0x200 / 4], 0x3c003c00u);
    }
  }
}

// Stalls ahead are counted at their cycles: fp32 sums of fp16 products, whose 4 sums a step
// (16 bytes) need two cycles of the one 8-byte write port, and fp16 operands whose words of a
// step share banks (x's word k and y's word 64 + k), so that every step waits a cycle.
TEST(VectorRunAhead, PortAndBankStallsAheadAreCountedAtTheirCycles) {
  const std::string f32 = pe_program(kXy + ".fill p, 0x200, f32, 64, 0.25\n.dsd vp, mem, f32, base=p, len=64\n",
                                     "  mov r1, 0x3800\n  fmac.f32.f16 vp, vp, vx, r1\n");
  std::string banks = kSyncFmac;
  banks.replace(banks.find("0x108"), 5, "0x100");
  for (const auto& [program, stall] : {std::pair{f32, Stall::SramPort}, std::pair{banks, Stall::SramBank}})
    for (const bool timing_only : {false, true}) {
      const auto [each, ahead] = run_both(program, timing_only);
      EXPECT_GE(each.counters.stall[static_cast<int>(stall)], 8u) << program << timing_only;
      EXPECT_LT(ahead.ticks + 10, each.ticks) << program << timing_only;
    }
}

// Steps ahead that issue the accesses of the step before them shifted by whole port words are
// taken together (hw::VectorOp::shifts), checked against the core stepping each step in its
// own tick. y = x * 0.5 + y over 64 fp16 elements, y's word of step k being 34 + k, with x:
// - two bytes into a word, so that each step reads two words of x, the first of them the last
//   step's (read once), except for the first step, which stalls a cycle on the two read ports;
// - and y read backwards (stride -1), both operands' words descending;
// - as a circular buffer of 16 elements, starting again every fourth step;
// - as one two bytes into a word, copied to y: the first step of each pass reads two words of
//   x, the others one;
// - with stride 2 (two words a step, against y's one), whose words do not move alike and
//   whose steps each stall on the read ports.
// In all but the last, every step but the first and the last runs ahead.
TEST(VectorRunAhead, StepsThatRepeatAShiftedStepAreTakenTogetherExactly) {
  auto program = [](const std::string& x, const std::string& y, const std::string& op = "fmac.f16 vy, vy, vx, r1") {
    return pe_program(".fill x, 0x0, f16, 128, 0.75\n.fill y, 0x110, f16, 64, 0.25\n.dsd vy, mem, f16, " + y +
                          "\n.dsd vx, " + x + "\n",
                      "  mov r1, 0x3800\n  " + op + "\n");
  };
  const std::string y = "base=0x110, len=64";
  const std::pair<std::string, std::uint64_t> cases[] = {
      {program("mem, f16, base=0x2, len=64", y), 14},
      {program("mem, f16, base=0x7e, len=64, stride=-1", "base=0x18e, len=64, stride=-1"), 14},
      {program("circ, f16, base=0x18, size=16, len=64", y), 14},
      {program("circ, f16, base=0x1a, size=16, len=64", y, "fmov.f16 vy, vx"), 14},
      {program("mem, f16, base=0x0, len=64, stride=2", y), 0},
  };
  for (const auto& [p, saved] : cases)
    for (const bool timing_only : {false, true}) {
      const auto [each, ahead] = run_both(p, timing_only);
      EXPECT_EQ(each.counters.vector_elements, 64u) << p;
      if (saved) {
        EXPECT_EQ(each.ticks - ahead.ticks, saved) << p;
      }
    }
  // The misaligned source reads x's 17 words once each, and y's 16.
  const Outcome misaligned = run(cases[0].first, sim::Cycle::never());
  EXPECT_EQ(misaligned.counters.sram_reads, 17u + 16u);
  EXPECT_EQ(misaligned.sram[0x110 / 4], 0x39003900u) << "0.75 * 0.5 + 0.25 = 0.625";
}

// A fabric input feeding 16 elements a wavelet (repeat=16), its four steps of 4 taking the
// new wavelet, two steps, and the step that pops it: the two between run ahead, the second of
// them repeating the first shifted, and the steps ahead stop before the one that pops. When
// the next wavelet is in front after that pop, its first three steps run ahead from the tick
// that popped, saving the tick of its first step: wavelets a cycle apart queue (3 ticks more
// saved, for wavelets 2 to 4); farther apart, fewer are in front at the pop (one fewer at gaps
// of 5, 6 and 8 cycles), and one that arrives after the pop wakes the core for its first step.
TEST(VectorRunAhead, StepsAheadStopBeforeTheStepThatPopsTheirWavelet) {
  const std::string program = pe_program(R"(.fill x, 0x0, f16, 64, 0.75
.fill y, 0x110, f16, 64, 0.25
.dsd vx, mem, f16, base=x, len=64
.dsd vy, mem, f16, base=y, len=64
.dsd w_in, fabin, f16, color=1, len=64, repeat=16
)",
                                         "  fmac.f16 vy, vy, vx, w_in\n");
  const std::pair<unsigned, std::uint64_t> gaps[] = {{1, 11}, {5, 10}, {6, 9}, {8, 8}};  // (gap, ticks saved)
  for (const bool timing_only : {false, true})
    for (const auto& [gap, saved] : gaps) {
      const auto [each, ahead] = run_both(program, timing_only, 4, gap);
      EXPECT_EQ(each.counters.vector_elements, 64u);
      EXPECT_EQ(each.counters.wavelets_in, 4u);
      EXPECT_EQ(each.ticks - ahead.ticks, saved) << timing_only << " gap " << gap;
      if (!timing_only) {
        EXPECT_EQ(ahead.sram[0x110 / 4], 0x39003900u) << "0.75 * 0.5 + 0.25 = 0.625";
        EXPECT_EQ(ahead.sram[(0x110 + 2 * 48) / 4], 0x41c041c0u) << "the fourth wavelet's: 0.75 * 3.5 + 0.25 = 2.875";
      }
    }
}

// An asynchronous operation while the main thread works through register-only instructions:
// it runs ahead to the cycle of the main thread's next instruction, which issues in its own
// tick. The fmac issues at cycle 3 and steps from 5 to 20; the six multiplies issue at 4 to 9
// (run ahead from the tick at 3) and tsc at 10. The tick at 5 takes the steps at 6 to 9; the
// ticks at 4 and 6 to 9 are saved. From 11 the task has ended, and with no task running no
// step runs ahead.
TEST(VectorRunAhead, StepsRunAheadToTheMainThreadsNextInstruction) {
  std::string body = "  mov r1, 0x3800\n  fmac.f16 vy, vy, vx, r1, async\n";
  for (int i = 0; i < 6; ++i) body += "  mul r5, r5, 3\n";
  const std::string program = pe_program(kXy, body);
  const auto [each, ahead] = run_both(program);
  EXPECT_EQ(each.ticks - ahead.ticks, 5u);
}

// Nine ordered operations on eight microthreads: the main thread stalls on the ninth until the
// first retires, and meanwhile the first alone steps (the others wait for their predecessors).
TEST(VectorRunAhead, AMainThreadShortOfMicrothreadsWaitsAsWhenSteppedEachTick) {
  std::string body = "  mov r1, 0x3800\n";
  for (int i = 0; i < 9; ++i) body += "  fmac.f16 vy, vy, vx, r1, async, ut=0\n";
  const std::string program = pe_program(kXy, body);
  const auto [each, ahead] = run_both(program);
  EXPECT_GT(each.counters.stall[static_cast<int>(Stall::Microthread)], 10u);
  EXPECT_EQ(each.counters.vector_elements, 9u * 64u);
  // The first operation issues at cycle c and steps from c + 2 to c + 17; the main thread issues
  // the next seven at c + 1 to c + 7 and finds no microthread for the ninth at c + 8. From
  // then the first alone steps, and its steps at c + 9 to c + 16 (not its last) run ahead.
  // After the ninth issues, the task ends, and with no task running no step runs ahead.
  EXPECT_EQ(each.ticks - ahead.ticks, 8u);
}

// A horizon inside the operation: the steps before it are taken ahead, none at or after it,
// so a run stopped there has the counters and SRAM of the run stepped a tick each.
TEST(VectorRunAhead, AHorizonStopsAtTheSameState) {
  for (const std::uint64_t stop : {9u, 12u, 15u}) {
    const Outcome each = run(kSyncFmac, sim::Cycle(0), false, stop);
    const Outcome ahead = run(kSyncFmac, sim::Cycle(stop), false, stop);
    expect_same(ahead, each);
    EXPECT_LT(each.counters.vector_elements, 64u) << stop;
    EXPECT_GT(each.counters.vector_elements, 0u) << stop;
    // Without the horizon the steps after the stop are taken already.
    EXPECT_GT(run(kSyncFmac, sim::Cycle::never(), false, stop).counters.vector_elements, each.counters.vector_elements)
        << stop;
  }
}

}  // namespace
}  // namespace wafersim::test::core_vector_run_ahead_test
