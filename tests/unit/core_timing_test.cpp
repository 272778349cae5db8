// The PE core's cost model, cycle-exact (docs/isa.md "Cost model"): vector instructions over
// lengths, strides and types, bank conflicts, microthreads, task activation by wavelets, and
// producer/consumer PEs over a scripted fabric. Defaults of the `tiny` preset: task_switch 2,
// scalar 1, vector_start 2, mov 1, add 2, mul 3, fmac 4, exp 8 cycles; lanes fp16 4, bf16 4,
// fp32 1; SRAM 2 x 64-bit reads + 1 x 64-bit write per cycle, 8 banks of 32 bits.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <tuple>

#include "hw/numerics/elementary.h"
#include "hw/numerics/softfloat.h"
#include "sim/config/diagnostics.h"
#include "sim/errors.h"
#include "tests/support/core_rig.h"

namespace wafersim::test::core_timing_test {
namespace {

using hw::Stall;

// A program timing one instruction: tsc r1 (cycle 2), the instruction (issued at 3), tsc r2
// (at its completion cycle C), so C = r2 and the instruction's duration is r2 - 3.
std::string timed(const std::string& decls, const std::string& instruction) {
  return ".pe 0, 0\n" + decls + ".task main, 0\n.entry main\nmain:\n  tsc r1\n  " + instruction + "\n  tsc r2\n  ret\n";
}

// Runs until just before `c` and checks that r2 (written by `tsc r2` at the completion
// cycle) is still 0, then ticks cycle c and checks r2 == c: one cycle early must fail.
void expect_completes_at(CoreRig& rig, std::uint64_t c, const std::string& what) {
  rig.run_to(c);
  EXPECT_EQ(rig.reg(2), 0u) << what << ": already complete before cycle " << c;
  rig.run_to(c + 1);
  EXPECT_EQ(rig.reg(2), c) << what;
  rig.run();
}

TEST(VectorTiming, DurationIsVectorStartPlusLatencyPlusSteps) {
  struct OpCase {
    const char* name;
    std::uint64_t latency;
    const char* form;  // operands
  };
  const OpCase ops[] = {{"fadd", 2, "c, a, b"},     {"fmul", 3, "c, a, b"}, {"fmax", 2, "c, a, b"},
                        {"fmac", 4, "c, c, a, r3"}, {"fmov", 1, "c, a"},    {"fneg", 2, "c, a"}};
  const std::pair<const char*, unsigned> types[] = {{"f16", 2}, {"bf16", 2}, {"f32", 4}};
  int checked = 0;
  for (const auto& op : ops)
    for (const auto& [type, size] : types)
      for (unsigned n : {1u, 3u, 4u, 5u, 16u, 33u}) {
        // a, b and c in different bank pairs: no conflicts, so only lanes and latency count.
        const std::string decls = fmt::format(
            ".fill a0, 0x000, {0}, {1}, 1.5\n.fill b0, 0x408, {0}, {1}, 2.25\n"
            ".dsd a, mem, {0}, base=0x000, len={1}\n.dsd b, mem, {0}, base=0x408, len={1}\n"
            ".dsd c, mem, {0}, base=0x810, len={1}\n",
            type, n);
        CoreRig rig;
        rig.load(timed(decls, fmt::format("mov.{} r3, 2.0\n  {}.{} {}", type, op.name, type, op.form)));
        const unsigned lanes = std::string(op.name) == "fmov" ? 8 / size : (size == 4 ? 1 : 4);
        const std::uint64_t steps = (n + lanes - 1) / lanes;
        // tsc r1 at 2, mov at 3, the vector instruction at 4.
        const std::uint64_t done = 4 + 2 + op.latency + steps;
        const std::string what = fmt::format("{}.{} n={}", op.name, type, n);
        expect_completes_at(rig, done, what);
        EXPECT_EQ(rig.counters().stall_total(), 0u) << what;
        EXPECT_EQ(rig.counters().vector_elements, n) << what;
        ++checked;
      }
  EXPECT_EQ(checked, 6 * 3 * 6);
}

TEST(VectorTiming, LanesComeFromThePlatform) {
  // fp32 with 2 lanes: a step of 2 fp32 reads one word per source and writes one: full rate.
  // fp16 with 2 lanes: half the steps of 4 lanes' rate.
  for (auto [key, type, lanes] :
       {std::tuple<const char*, const char*, unsigned>{"fp32", "f32", 2}, {"fp16", "f16", 2}, {"bf16", "bf16", 1}}) {
    CoreRig rig({fmt::format("wafer.pe.simd_lanes.{}={}", key, lanes)});
    rig.load(timed(fmt::format(".dsd a, mem, {0}, base=0x000, len=16\n.dsd b, mem, {0}, base=0x408, len=16\n"
                               ".dsd c, mem, {0}, base=0x810, len=16\n",
                               type),
                   fmt::format("fadd.{} c, a, b", type)));
    expect_completes_at(rig, 3 + 2 + 2 + 16 / lanes, key);
    EXPECT_EQ(rig.counters().stall_total(), 0u) << key;
  }
}

TEST(VectorTiming, ResultsAreComputedInTheirFormat) {
  CoreRig rig;
  rig.load(
      timed(".fill a0, 0x000, f32, 3, 1.5\n.fill b0, 0x408, f32, 3, 2.25\n"
            ".dsd a, mem, f32, base=0x000, len=3\n.dsd b, mem, f32, base=0x408, len=3\n"
            ".dsd c, mem, f32, base=0x810, len=3\n",
            "mov.f32 r3, 2.0\n  fmac.f32 c, b, a, r3"));
  rig.run();
  EXPECT_EQ(rig.f32(0x810), 5.25f);  // 2.25 + 1.5 x 2
  EXPECT_EQ(rig.f32(0x818), 5.25f);
  EXPECT_EQ(rig.counters().flops, 6u);
}

TEST(VectorTiming, StridedAccessIsLimitedByThePorts) {
  // fp16 stride 2: four elements span two port words per operand, so a step needs 4 reads
  // and 2 writes: cycle 1 reads a's two words, cycle 2 b's two words and the first write,
  // cycle 3 the second write (in-order issue): 3 cycles per step, 2 of them sram_port stalls.
  CoreRig rig;
  rig.load(
      timed(".dsd a, mem, f16, base=0x000, len=8, stride=2\n.dsd b, mem, f16, base=0x408, len=8, stride=2\n"
            ".dsd c, mem, f16, base=0x810, len=8, stride=2\n",
            "fadd.f16 c, a, b"));
  expect_completes_at(rig, 3 + 2 + 2 + 2 * 3, "fadd.f16 stride 2");
  EXPECT_EQ(rig.stall(Stall::SramPort), 4u);
  EXPECT_EQ(rig.counters().sram_reads, 8u);
  EXPECT_EQ(rig.counters().sram_writes, 4u);
}

TEST(VectorTiming, StridesGatherMoreWordsPerStep) {
  struct Case {
    const char* type;
    int stride;
    unsigned n;
    std::uint64_t cycles_per_step;  // issue cycles of one step
    std::uint64_t port_stalls_per_step;
  };
  // fmov moves one port word of elements per step (4 fp16 or 2 fp32):
  // - fp32 stride 3: elements 12 bytes apart, two words per step, both read in one cycle;
  // - fp16 stride 4: every element in its own word, four reads over two cycles;
  // - fp16 stride 1 and fp32 stride 1: one word read, one written.
  const Case cases[] = {
      {"f32", 3, 10, 1, 0}, {"f16", 4, 12, 2, 1}, {"f16", 1, 12, 1, 0}, {"f32", 1, 10, 1, 0}, {"f32", -3, 6, 1, 0}};
  for (const auto& c : cases) {
    const unsigned per_step = std::string(c.type) == "f16" ? 4 : 2;
    const std::uint64_t steps = (c.n + per_step - 1) / per_step;
    CoreRig rig;
    rig.load(
        timed(fmt::format(".dsd s, mem, {0}, base={1}, len={2}, stride={3}\n.dsd d, mem, {0}, base=0x800, len={2}\n",
                          c.type, c.stride < 0 ? 0x400 : 0x0, c.n, c.stride),
              fmt::format("fmov.{} d, s", c.type)));
    const std::string what = fmt::format("fmov.{} stride {}", c.type, c.stride);
    expect_completes_at(rig, 3 + 2 + 1 + steps * c.cycles_per_step, what);
    EXPECT_EQ(rig.stall(Stall::SramPort), steps * c.port_stalls_per_step) << what;
    EXPECT_EQ(rig.stall(Stall::SramBank), 0u) << what;
  }
}

TEST(VectorTiming, NegativeStrideAndCircularBuffer) {
  CoreRig rig;
  rig.load(
      timed(".data s, 0x100, f32, 10, 11, 12, 13\n.data v, 0x000, f32, 0, 1, 2, 3, 4, 5, 6, 7\n"
            ".dsd rev, mem, f32, base=0x01C, len=8, stride=-1\n"
            ".dsd cb, circ, f32, base=0x100, size=4, len=8, start=3\n"
            ".dsd d1, mem, f32, base=0x200, len=8\n.dsd d2, mem, f32, base=0x300, len=8\n"
            ".dsd d3, mem, f32, base=0x400, len=8\n",
            "fmov.f32 d1, rev\n  fmov.f32 d2, cb\n  dsd.add cb, 2\n  fmov.f32 d3, cb"));
  rig.run();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(rig.f32(0x200 + 4 * i), static_cast<float>(7 - i)) << i;
    EXPECT_EQ(rig.f32(0x300 + 4 * i), 10.0f + static_cast<float>((3 + i) % 4)) << i;
    EXPECT_EQ(rig.f32(0x400 + 4 * i), 10.0f + static_cast<float>((5 + i) % 4)) << i;
  }
  // Each copy moves 2 fp32 per step with one word read (the others buffered) and one written:
  // 2 + 1 + 4 cycles each, no stalls; tsc r1 at 2, copies at 3, 10, dsd.add at 17, copy at 18.
  EXPECT_EQ(rig.reg(2), 18u + 7u);
  EXPECT_EQ(rig.counters().stall_total(), 0u);
}

TEST(VectorTiming, CircularFmacStepsThatWrapAndThatDoNot) {
  // fp16 FMACs over a circular x of 4: from start 0 each 4-element step stays inside the buffer
  // (one run of addresses); from start 2 every step wraps (element by element). Same results
  // as the definition, and both run at one step a cycle.
  CoreRig rig;
  rig.load(
      timed(".data x, 0x000, f16, 1, 2, 3, 4\n.dsd c0, circ, f16, base=0x0, size=4, len=8\n"
            ".dsd c2, circ, f16, base=0x0, size=4, len=8, start=2\n"
            ".dsd y0, mem, f16, base=0x108, len=8\n.dsd y2, mem, f16, base=0x208, len=8\n",
            "mov.f16 r3, 1.5\n  fmac.f16 y0, y0, c0, r3\n  fmac.f16 y2, y2, c2, r3"));
  rig.run();
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ(rig.word(0x108 + 2 * i, 2), hw::numerics::from_double(hw::DType::F16, 1.5 * (1 + i % 4))) << i;
    EXPECT_EQ(rig.word(0x208 + 2 * i, 2), hw::numerics::from_double(hw::DType::F16, 1.5 * (1 + (i + 2) % 4))) << i;
  }
  EXPECT_EQ(rig.counters().stall_total(), 0u);
}

TEST(BankConflicts, TwoReadsOfOneBankPairHalveTheRate) {
  // fp16 fadd of 16 elements: 4 steps. b at 0x408 lies in the bank pair after a's: full rate.
  // b at 0x400 shares a's bank pair in every step: each step needs a second cycle.
  for (const char* b_base : {"0x408", "0x400"}) {
    CoreRig rig;
    rig.load(timed(fmt::format(".dsd a, mem, f16, base=0x000, len=16\n.dsd b, mem, f16, base={}, len=16\n"
                               ".dsd c, mem, f16, base=0x810, len=16\n",
                               b_base),
                   "fadd.f16 c, a, b"));
    const bool conflict = std::string(b_base) == "0x400";
    expect_completes_at(rig, 3 + 2 + 2 + 4 + (conflict ? 4 : 0), b_base);
    EXPECT_EQ(rig.stall(Stall::SramBank), conflict ? 4u : 0u) << b_base;
    EXPECT_EQ(rig.stall(Stall::SramPort), 0u) << b_base;
  }
}

TEST(BankConflicts, MatvecColumnOffsetAvoidsThem) {
  // fp32 y += A x with y and A word-aligned in the same bank pair: both streams read a new
  // word on every even step, in the same bank pair: 4 conflicts in 8 steps. Offsetting A by
  // 4 bytes (as Cerebras' single-tile matvec does) moves A's reads to the odd steps: only
  // the very first step (both streams start) conflicts.
  for (const char* a_base : {"0x200", "0x204"}) {
    CoreRig rig;
    rig.load(timed(fmt::format(".dsd y, mem, f32, base=0x000, len=8\n.dsd A, mem, f32, base={}, len=8\n", a_base),
                   "fmac.f32 y, y, A, r3"));
    const std::uint64_t conflicts = std::string(a_base) == "0x200" ? 4 : 1;
    expect_completes_at(rig, 3 + 2 + 4 + 8 + conflicts, a_base);
    EXPECT_EQ(rig.stall(Stall::SramBank), conflicts) << a_base;
  }
}

TEST(Tasks, DataTaskStartsWhenItsWaveletArrives) {
  CoreRig rig;
  rig.load(".pe 0, 0\n.task on_w, 4, color=3\non_w:\n  tsc r1\n  st [0x100], r0\n  ret\n");
  rig.fabric.inject(hw::PeCoord{0, 0}, hw::Wavelet{0xABCD, hw::Color(3), false}, 10);
  rig.run_to(10);
  EXPECT_EQ(rig.counters().task_activations, 0u);  // nothing before the wavelet is visible
  rig.run_to(11);
  EXPECT_EQ(rig.counters().task_activations, 1u);  // started in the cycle it became visible
  rig.run();
  EXPECT_EQ(rig.reg(1), 12u);  // first instruction after task_switch (2)
  EXPECT_EQ(rig.reg(0), 0xABCDu);
  EXPECT_EQ(rig.word(0x100, 4), 0xABCDu);
  EXPECT_EQ(rig.counters().wavelets_in, 1u);
  EXPECT_EQ(rig.counters().busy_cycles, 5u);  // cycles 10..14: switch, tsc, st, ret
}

TEST(Tasks, BlockedDataTaskWaitsForUnblockOnCompletion) {
  // main blocks the data task, starts an async copy (8 steps from cycle 5: done at 14) that
  // unblocks it on completion. The wavelet is there from cycle 10; the task starts at 14.
  CoreRig rig;
  rig.load(
      ".pe 0, 0\n.dsd s, mem, f32, base=0x000, len=16\n.dsd d, mem, f32, base=0x408, len=16\n"
      ".task main, 0\n.task on_w, 4, color=3\n.entry main\n"
      "main:\n  block on_w\n  fmov.f32 d, s, async, unblock=on_w\n  ret\n"
      "on_w:\n  tsc r1\n  ret\n");
  rig.fabric.inject(hw::PeCoord{0, 0}, hw::Wavelet{7, hw::Color(3), false}, 10);
  rig.run_to(14);
  EXPECT_EQ(rig.counters().task_activations, 1u);
  rig.run_to(15);
  EXPECT_EQ(rig.counters().task_activations, 2u);
  rig.run();
  EXPECT_EQ(rig.reg(1), 16u);
}

TEST(Tasks, ControlWaveletActivatesALocalTask) {
  CoreRig rig;
  rig.load(".pe 0, 0\n.task t5, 5\nt5:\n  tsc r1\n  ret\n");
  rig.fabric.inject(hw::PeCoord{0, 0}, hw::Wavelet{5, hw::Color(7), true}, 10);
  rig.run();
  EXPECT_EQ(rig.reg(1), 12u);
  EXPECT_EQ(rig.counters().wavelets_in, 1u);
}

TEST(Tasks, HostActivationAndPriorityByTaskId) {
  // Tasks 2 and 1 are both activated at cycle 20: the lower id runs first.
  CoreRig rig;
  rig.load(".pe 0, 0\n.task b, 2\n.task a, 1\na:\n  tsc r1\n  ret\nb:\n  tsc r2\n  ret\n");
  rig.cores.activate(hw::PeCoord{0, 0}, 2, sim::Cycle(20));
  rig.cores.activate(hw::PeCoord{0, 0}, 1, sim::Cycle(20));
  rig.run();
  EXPECT_EQ(rig.reg(1), 22u);  // a: selected at 20, first instruction at 22, ret at 23
  EXPECT_EQ(rig.reg(2), 26u);  // b: selected at 24, first instruction at 26
}

TEST(Microthreads, ATaskWaitsForAFreeMicrothread) {
  // Two microthreads, three async copies of 8 fp32 (4 steps of 2). A issues at 2 (steps 4..7,
  // done 9); B at 3 starts at 5 but A holds the write port until 7 (3 sram_port stalls), so
  // B steps 8..11 (done 13); C waits for a microthread from 4 to 8 (5 stalls), issues at 9
  // when A retires, starts at 11 behind B's last write (1 stall), steps 12..15, done at 17.
  CoreRig rig({"wafer.pe.microthreads=2"});
  rig.load(
      ".pe 0, 0\n.dsd a, mem, f32, base=0x000, len=8\n.dsd b, mem, f32, base=0x210, len=8\n"
      ".dsd c, mem, f32, base=0x410, len=8\n.dsd d, mem, f32, base=0x600, len=24\n"
      ".dsd da, mem, f32, base=0x600, len=8\n.dsd db, mem, f32, base=0x620, len=8\n"
      ".dsd dc, mem, f32, base=0x640, len=8\n"
      ".task main, 0\n.entry main\nmain:\n"
      "  fmov.f32 da, a, async\n  fmov.f32 db, b, async\n  fmov.f32 dc, c, async\n  tsc r1\n  ret\n");
  rig.run_to(9);
  EXPECT_EQ(rig.stall(Stall::Microthread), 5u);
  EXPECT_EQ(rig.counters().instructions, 2u);  // C not issued yet at cycle 8
  rig.run_to(10);
  EXPECT_EQ(rig.counters().instructions, 3u);  // ... issued at 9
  rig.run();
  EXPECT_EQ(rig.reg(1), 10u);
  EXPECT_EQ(rig.stall(Stall::Microthread), 5u);
  EXPECT_EQ(rig.stall(Stall::SramPort), 4u);
  EXPECT_EQ(rig.counters().finish_cycle, 17u);
  EXPECT_EQ(rig.counters().vector_ops, 3u);
}

// The most microthreads a PE may have (63, the slots 1 to 63 beside the synchronous one): 64
// long async copies issue one a cycle until all 63 are busy; the last waits for the first
// to retire, and all 64 complete.
TEST(Microthreads, SixtyThreeMicrothreadsAllInFlight) {
  CoreRig rig({"wafer.pe.microthreads=63"});
  std::string prog =
      ".pe 0, 0\n.dsd a, mem, f32, base=0x000, len=256\n.dsd b, mem, f32, base=0x1000, len=256\n"
      ".task main, 0\n.entry main\nmain:\n";
  for (int i = 0; i < 64; ++i) prog += "  fmov.f32 b, a, async\n";
  prog += "  ret\n";
  rig.load(prog);
  rig.run_to(80);
  EXPECT_EQ(rig.counters().instructions, 63u);  // every microthread holds a copy
  EXPECT_GT(rig.stall(Stall::Microthread), 0u);
  rig.run();
  EXPECT_EQ(rig.counters().vector_ops, 64u);
  EXPECT_EQ(rig.counters().instructions, 65u);
}

TEST(Microthreads, OneVectorStepPerCycleOnTheDatapath) {
  // Two async fp32 fadds of 4: A steps 4..7 (done 10); B is ready at 5 but the datapath is
  // A's until 7 (3 fpu stalls), steps 8..11, done at 14.
  CoreRig rig;
  rig.load(
      ".pe 0, 0\n.dsd a, mem, f32, base=0x000, len=4\n.dsd b, mem, f32, base=0x408, len=4\n"
      ".dsd c, mem, f32, base=0x810, len=4\n.dsd e, mem, f32, base=0xC18, len=4\n"
      ".dsd x, mem, f32, base=0x1000, len=4\n.dsd z, mem, f32, base=0x1100, len=4\n"
      ".task main, 0\n.entry main\nmain:\n  fadd.f32 x, a, b, async\n  fadd.f32 z, c, e, async\n  ret\n");
  rig.run();
  EXPECT_EQ(rig.stall(Stall::Fpu), 3u);
  EXPECT_EQ(rig.counters().finish_cycle, 14u);
}

TEST(Fabric, ProducerAndConsumerExchangeAVectorWithExactCycles) {
  // Producer (0,0) streams 12 fp16 on color 1; the link delivers them to (1,0) on color 2
  // three cycles later. Producer: fmov issued at 2, the first wavelet leaves at 2 + 2 + 1
  // (latency paid before the first step) = 5, one per cycle to 16, done at 17.
  // Consumer: fmov issued at 2 waits for data from 4 to 7 (4 fabric_in stalls), takes the
  // wavelets at 8..19, done at 19 + 1 + 1 = 21.
  CoreRig rig;
  rig.load(R"(
.pe 0, 0
.data x, 0x0, f16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
.dsd vx, mem, f16, base=x, len=12
.dsd out, fabout, f16, color=1, len=12
.task main, 0
.entry main
main:
  fmov.f16 out, vx
  tsc r1
  ret
.pe 1, 0
.dsd vy, mem, f16, base=0x100, len=12
.dsd in, fabin, f16, color=2, len=12
.task main, 0
.entry main
main:
  fmov.f16 vy, in
  tsc r2
  ret
)");
  rig.fabric.link(hw::PeCoord{0, 0}, hw::Color(1), hw::PeCoord{1, 0}, hw::Color(2), 3);
  rig.run_to(21);
  EXPECT_EQ(rig.reg(2, 1, 0), 0u);
  rig.run_to(22);
  EXPECT_EQ(rig.reg(2, 1, 0), 21u);
  rig.run();
  EXPECT_EQ(rig.reg(1, 0, 0), 17u);
  EXPECT_EQ(rig.stall(Stall::FabricIn, 1, 0), 4u);
  EXPECT_EQ(rig.counters(0, 0).wavelets_out, 12u);
  EXPECT_EQ(rig.counters(1, 0).wavelets_in, 12u);
  for (unsigned i = 0; i < 12; ++i)
    EXPECT_EQ(rig.word(0x100 + 2 * i, 2, 1, 0), hw::numerics::from_double(hw::DType::F16, i + 1)) << i;
}

TEST(Fabric, BackPressureStallsTheProducer) {
  // Two credits; the consumer applies exp (8 cycles per element). Producer sends at 5 and 6,
  // waits for credits (stalls 7-8 and 10-16), sends at 9 and 17, done at 18. Consumer takes
  // elements at 8, 16, 24, 32; done at 40; its only stalls are the 4 cycles before data.
  CoreRig rig;
  rig.load(R"(
.pe 0, 0
.fill x, 0x0, f16, 4, 0.5
.dsd vx, mem, f16, base=x, len=4
.dsd out, fabout, f16, color=1, len=4
.task main, 0
.entry main
main:
  fmov.f16 out, vx
  tsc r1
  ret
.pe 1, 0
.dsd vy, mem, f16, base=0x100, len=4
.dsd in, fabin, f16, color=2, len=4
.task main, 0
.entry main
main:
  fexp.f16 vy, in
  tsc r1
  ret
)");
  rig.fabric.link(hw::PeCoord{0, 0}, hw::Color(1), hw::PeCoord{1, 0}, hw::Color(2), 3, 2);
  rig.run();
  EXPECT_EQ(rig.reg(1, 0, 0), 18u);
  EXPECT_EQ(rig.stall(Stall::FabricOut, 0, 0), 9u);
  EXPECT_EQ(rig.reg(1, 1, 0), 40u);
  EXPECT_EQ(rig.stall(Stall::FabricIn, 1, 0), 4u);
  EXPECT_EQ(rig.counters(1, 0).stall_total(), 4u);
  EXPECT_EQ(rig.word(0x100, 2, 1, 0), hw::numerics::from_double(hw::DType::F16, std::exp(0.5)));
}

TEST(Fabric, SparseStreamUpdatesOnlyTheIndexedElements) {
  CoreRig rig;
  rig.load(
      timed(".fill y, 0x100, f16, 16, 1.0\n.dsd vy, mem, f16, base=y, len=16\n"
            ".dsd ws, fabin, f16, color=4, len=3, sparse\n",
            "mov.f16 r3, 2.0\n  fmac.f16 vy, vy, ws, r3"));
  for (auto [idx, value] : {std::pair<std::uint32_t, double>{2, 0.5}, {7, 3.0}, {15, -1.0}})
    rig.fabric.inject(hw::PeCoord{0, 0},
                      hw::Wavelet{idx << 16 | hw::numerics::from_double(hw::DType::F16, value), hw::Color(4), false},
                      1);
  // mov at 3, fmac issued at 4: one wavelet per step at 6, 7, 8; done at 8 + 1 + 4.
  expect_completes_at(rig, 13, "sparse fmac");
  for (unsigned i = 0; i < 16; ++i) {
    const double expect = i == 2 ? 2.0 : i == 7 ? 7.0 : i == 15 ? -1.0 : 1.0;
    EXPECT_EQ(rig.word(0x100 + 2 * i, 2), hw::numerics::from_double(hw::DType::F16, expect)) << i;
  }
  EXPECT_EQ(rig.counters().vector_elements, 3u);  // zero weights were never sent nor computed
  EXPECT_EQ(rig.counters().flops, 6u);
}

TEST(Fabric, ASecondStreamOnAHeldColorWaits) {
  // Two async reads of color 2: the second waits (queue) until the first completes.
  CoreRig rig;
  rig.load(
      ".pe 0, 0\n.dsd in, fabin, f32, color=2, len=2\n.dsd d1, mem, f32, base=0x0, len=2\n"
      ".dsd d2, mem, f32, base=0x100, len=2\n.task main, 0\n.entry main\n"
      "main:\n  fmov.f32 d1, in, async\n  fmov.f32 d2, in\n  tsc r1\n  ret\n");
  for (std::uint32_t i = 0; i < 4; ++i) rig.fabric.inject(hw::PeCoord{0, 0}, hw::Wavelet{i, hw::Color(2), false}, 1);
  rig.run();
  // First: issued 2, takes wavelets at 4, 5, done at 7; the second waits 3..6 (4 queue
  // stalls), issues at 7, takes wavelets at 9, 10, done at 12.
  EXPECT_EQ(rig.stall(Stall::Queue), 4u);
  EXPECT_EQ(rig.reg(1), 12u);
  EXPECT_EQ(rig.word(0x0, 4), 0u);
  EXPECT_EQ(rig.word(0x104, 4), 3u);
}

TEST(Reductions, AccumulateInOrderIntoARegister) {
  CoreRig rig;
  rig.load(
      timed(".data a, 0x000, f32, 1, 2, 3, 4, 5\n.data h, 0x100, f16, 1.5, 2, -1\n"
            ".data g, 0x108, f16, 2, 0.25, 8\n.dsd va, mem, f32, base=a, len=5\n"
            ".dsd vh, mem, f16, base=h, len=3\n.dsd vg, mem, f16, base=g, len=3\n",
            "fsum.f32 r5, va\n  fdot.f32.f16 r6, vh, vg\n  frmax.f32 r7, va"));
  rig.run();
  auto as_float = [](std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  };
  EXPECT_EQ(as_float(rig.reg(5)), 15.0f);
  EXPECT_EQ(as_float(rig.reg(6)), 1.5f * 2 + 2 * 0.25f - 8);
  EXPECT_EQ(as_float(rig.reg(7)), 5.0f);
  // fsum: issued 3, 5 steps of one element, add latency 2: done 3 + 2 + 2 + 5 = 12;
  // fdot: 12 + 2 + 4 + 3 = 21; frmax: 21 + 2 + 2 + 5 = 30.
  EXPECT_EQ(rig.reg(2), 30u);
}

TEST(Errors, SramOverflowNamesThePeAddressAndInstruction) {
  CoreRig rig;
  rig.load(
      ".pe 2, 1\n.dsd s, mem, f32, base=0xBFF8, len=4\n.dsd d, mem, f32, base=0x0, len=4\n"
      ".task main, 0\n.entry main\nmain:\n  fmov.f32 d, s\n  ret\n");
  try {
    rig.run();
    FAIL() << "expected an SRAM overflow";
  } catch (const sim::SimulationError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "PE (2, 1): SRAM access at address 0xc000 (4 bytes) is beyond the 48 KiB SRAM ('fmov.f32 d, s' at t.s:7:3)");
    EXPECT_EQ(e.exit_code(), sim::kExitSimulation);
  }
  CoreRig scalar;
  scalar.load(".task main, 0\n.entry main\nmain:\n  mov r1, 0xC000\n  ld r2, [r1 - 6]\n  ld r2, [r1]\n  ret\n");
  EXPECT_THROW(
      {
        try {
          scalar.run();
        } catch (const sim::SimulationError& e) {
          EXPECT_EQ(std::string(e.what()),
                    "PE (0, 0): misaligned 4-byte SRAM access at address 0xbffa ('ld r2, [r1 - 6]' at t.s:5:3)");
          throw;
        }
      },
      sim::SimulationError);
  CoreRig data;
  try {
    data.load(".pe 0, 0\n.data big, 0xBFFC, f32, 1, 2\n");
    FAIL() << "expected a load error";
  } catch (const sim::config::ConfigError& e) {
    EXPECT_EQ(e.diagnostics()[0].str(),
              "t.s:2:1: error: 8 bytes at address 0xbffc do not fit the 48 KiB SRAM of PE (0, 0)");
  }
}

TEST(Errors, AStreamThatNeverArrivesIsReportedAsADeadlock) {
  for (bool sleep : {true, false}) {  // also when every core with work is ticked every cycle
    CoreRig rig({}, sleep);
    rig.load(
        ".pe 0, 0\n.dsd in, fabin, f32, color=2, len=2\n.dsd d, mem, f32, base=0x0, len=2\n"
        ".task main, 0\n.entry main\nmain:\n  fmov.f32 d, in\n  ret\n");
    rig.fabric.inject(hw::PeCoord{0, 0}, hw::Wavelet{1, hw::Color(2), false}, 1);
    EXPECT_LT(rig.run(), 100u) << "the run must end when nothing can happen";
    try {
      rig.cores.check_finished();
      FAIL() << "expected a deadlock report";
    } catch (const sim::SimulationError& e) {
      EXPECT_NE(std::string(e.what()).find("PE (0, 0): task 'main' waits for 'fmov.f32 d, in' at t.s:7:3: element 1 of "
                                           "2, reads color 2, stalled: fabric_in"),
                std::string::npos)
          << e.what();
    }
  }
}

// A program on PEs (0, 0) and (1, 0), the first's color 1 linked to the second's color 2, run
// to its end with cores sleeping or ticked every cycle: the core ticks and both PEs' counters.
struct TwoPeRun {
  std::uint64_t ticks = 0;
  std::vector<hw::CoreCounters> counters;
};
TwoPeRun run_two_pes(const std::string& program, bool sleep, std::uint64_t latency, int depth,
                     const std::vector<std::string>& overrides = {},
                     const std::function<void(const CoreRig&)>& check = {}) {
  CoreRig rig(overrides, sleep);
  rig.load(program);
  rig.fabric.link(hw::PeCoord{0, 0}, hw::Color(1), hw::PeCoord{1, 0}, hw::Color(2), latency, depth);
  rig.run();
  if (check) check(rig);
  return TwoPeRun{rig.cores.core_ticks(), {rig.counters(0, 0), rig.counters(1, 0)}};
}

// Cores that sleep while they wait (and catch their counters up on waking) count exactly
// what cores ticked in every cycle count.
TEST(Sleep, SleepingCoresCountExactlyLikeTickedOnes) {
  const std::string program = R"(
.pe 0, 0
.fill x, 0x0, f16, 6, 0.5
.dsd vx, mem, f16, base=x, len=6
.dsd out, fabout, f16, color=1, len=6
.task main, 0
.entry main
main:
  fmov.f16 out, vx, async
  fmov.f16 out, vx
  ret
.pe 1, 0
.dsd vy, mem, f16, base=0x100, len=12
.dsd in, fabin, f16, color=2, len=12
.task main, 0
.task next, 1
.entry main
main:
  fexp.f16 vy, in, async, activate=next
  ret
next:
  tsc r1
  ret
)";
  const TwoPeRun slept = run_two_pes(program, true, 2, 2), ticked = run_two_pes(program, false, 2, 2);
  EXPECT_LT(slept.ticks * 2, ticked.ticks) << "sleeping saved fewer core ticks than expected";
  const auto& a = slept.counters;
  const auto& b = ticked.counters;
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(std::memcmp(&a[i], &b[i], sizeof(hw::CoreCounters)), 0) << "PE " << i;
    EXPECT_EQ(a[i].finish_cycle, b[i].finish_cycle);
    EXPECT_EQ(a[i].busy_cycles, b[i].busy_cycles);
  }
  EXPECT_GT(a[0].stall[static_cast<int>(Stall::FabricOut)], 0u);
  EXPECT_GT(a[0].stall[static_cast<int>(Stall::Queue)], 0u);
}

// A stream sent faster than an iterative operation takes it queues behind the front the
// consumer has seen, and the sender's credits come back while it is not short of one: neither
// wakes a sleeping core, and the counters are those of cores ticked in every cycle.
TEST(Sleep, ArrivalsBehindASeenFrontAndUnneededCreditsWakeNoCore) {
  const std::string program = R"(
.pe 0, 0
.fill x, 0x0, f16, 8, 0.25
.dsd vx, mem, f16, base=x, len=8
.dsd out, fabout, f16, color=1, len=8
.task main, 0
.entry main
main:
  fmov.f16 out, vx
  ret
.pe 1, 0
.dsd vy, mem, f16, base=0x100, len=8
.dsd in, fabin, f16, color=2, len=8
.task main, 0
.entry main
main:
  fexp.f16 vy, in
  ret
)";
  auto exps = [](const CoreRig& rig) {
    for (unsigned i = 0; i < 8; ++i)
      EXPECT_EQ(rig.word(0x100 + 2 * i, 2, 1, 0), hw::numerics::exp(hw::DType::F16, rig.word(2 * i, 2))) << i;
  };
  const std::vector<std::string> slow_exp = {"wafer.pe.latency.exp=6 cycles"};
  const TwoPeRun slept = run_two_pes(program, true, 1, 8, slow_exp, exps);
  const TwoPeRun ticked = run_two_pes(program, false, 1, 8, slow_exp, exps);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(std::memcmp(&slept.counters[i], &ticked.counters[i], sizeof(hw::CoreCounters)), 0) << "PE " << i;
  // The cores are ticked for their own work only: not for the wavelets that queue behind the
  // consumer's front (a step every six cycles) or for the credits that come back to the sender
  // while it has credits left (four more ticks each way).
  EXPECT_EQ(slept.ticks, 27u) << "arrivals behind the front or unneeded credits woke a core";
}

// A run stopped while a core sleeps, busy and stalled, counts its cycles up to the stop as a
// run ticking it in every cycle does: totals do not depend on when a core was last ticked.
TEST(CoreArrayTotals, CountTheCyclesASleepingCoreSpentUpToTheCurrentOne) {
  std::vector<hw::CoreCounters> at50;
  for (const bool sleep : {true, false}) {
    CoreRig rig({}, sleep);
    rig.load(
        ".pe 0, 0\n.dsd in, fabin, f32, color=2, len=2\n.dsd d, mem, f32, base=0x0, len=2\n"
        ".task main, 0\n.entry main\nmain:\n  fmov.f32 d, in\n  ret\n");
    rig.fabric.inject(hw::PeCoord{0, 0}, hw::Wavelet{1, hw::Color(2), false}, 1);
    rig.run_to(50);
    at50.push_back(rig.cores.totals());
    EXPECT_EQ(rig.cores.totals().busy_cycles, 50u) << "busy from cycle 0 to 49";
    EXPECT_EQ(rig.cores.accounted(hw::PeCoord{0, 0}).busy_cycles, 50u);
  }
  EXPECT_EQ(std::memcmp(&at50[0], &at50[1], sizeof(hw::CoreCounters)), 0);
  EXPECT_GT(at50[0].stall[static_cast<int>(Stall::FabricIn)], 40u);
}

TEST(VectorValues, FmacOverReversedAndBroadcastOperands) {
  // y[i] += a[7 - i] * b for 8 fp16 elements: a read backwards (stride -1), b one element
  // broadcast (stride 0). Port words (8 bytes): y 0x200 and 0x208 (read and written), a 0x008
  // then 0x000, b 0x100 once (the second step reads no word the first step has read).
  CoreRig rig;
  rig.load(
      timed(".data a0, 0x000, f16, 1, 2, 3, 4, 5, 6, 7, 8\n.data b0, 0x100, f16, 0.5\n"
            ".data y0, 0x200, f16, 10, 20, 30, 40, 50, 60, 70, 80\n"
            ".dsd a, mem, f16, base=0x00E, len=8, stride=-1\n.dsd b, mem, f16, base=0x100, len=8, stride=0\n"
            ".dsd y, mem, f16, base=0x200, len=8\n",
            "fmac.f16 y, y, a, b"));
  rig.run();
  for (unsigned i = 0; i < 8; ++i)
    EXPECT_EQ(rig.word(0x200 + 2 * i, 2), hw::numerics::from_double(hw::DType::F16, 10.0 * (i + 1) + (8 - i) * 0.5))
        << i;
  EXPECT_EQ(rig.counters().sram_reads, 5u);
  EXPECT_EQ(rig.counters().sram_writes, 2u);
  EXPECT_EQ(rig.counters().sram_bytes_read, 8u * 3 * 2);
  EXPECT_EQ(rig.counters().sram_bytes_written, 8u * 2);
}

TEST(CoreArrayTotals, FollowTheCoresAsTheyTick) {
  // tsc r1 at cycle 2, nop at 3, tsc r2 at 4, ret at 5.
  CoreRig rig;
  rig.load(timed("", "nop"));
  rig.run_to(3);
  EXPECT_EQ(rig.cores.total(&hw::CoreCounters::instructions), 1u);
  EXPECT_EQ(rig.cores.totals().instructions, rig.counters().instructions);
  rig.run_to(5);
  EXPECT_EQ(rig.cores.total(&hw::CoreCounters::instructions), 3u);
  rig.run();
  EXPECT_EQ(rig.cores.total(&hw::CoreCounters::instructions), 4u);
  EXPECT_EQ(rig.cores.finish_cycle(), 6u);
  EXPECT_EQ(rig.cores.totals().busy_cycles, rig.counters().busy_cycles);
}

}  // namespace
}  // namespace wafersim::test::core_timing_test
