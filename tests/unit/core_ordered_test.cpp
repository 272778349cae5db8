// Ordered microthreads (docs/isa.md, "Ordered microthreads"): asynchronous vector operations
// issued with the same `ut=` take their steps in issue order, each successor's first step
// `latency.forward` cycles after its predecessor's matching step. Cycle-exact on both edges
// (the first cycle a dependent operation may step, and one before), and bit-exact chains of
// fp32-accumulating FMACs whose steps span several cycles of SRAM ports. Timings of the `tiny`
// preset: task_switch 2, scalar 1, vector_start 2, fmac 4, mov 1; fp16 and bf16 4 lanes; SRAM
// 2 x 64-bit reads + 1 x 64-bit write per cycle.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/isa/assembler.h"
#include "hw/isa/disassemble.h"
#include "hw/numerics/softfloat.h"
#include "sim/config/diagnostics.h"
#include "sim/errors.h"
#include "tests/support/core_rig.h"

namespace wafersim::test::core_ordered_test {
namespace {

using hw::Stall;

// y (8 fp16 at 0x000) += x_k x 2 for k < chain, each FMAC of 2 steps on microthread 0 (or
// unordered), the sources in other bank pairs than y. The task issues `mov` at 2 and the
// FMACs at 3, 4, ...
std::string fmac_chain(unsigned chain, unsigned length, const std::string& order) {
  std::string s = fmt::format(".pe 0, 0\n.dsd y, mem, f16, base=0x000, len={}\n", length);
  for (unsigned k = 0; k < chain; ++k)
    s += fmt::format(".fill x{0}v, {1}, f16, {2}, 1.0\n.dsd x{0}, mem, f16, base={1}, len={2}\n", k, 0x408 + 0x400 * k,
                     length);
  s += ".task main, 0\n.entry main\nmain:\n  mov.f16 r3, 2.0\n";
  for (unsigned k = 0; k < chain; ++k) s += fmt::format("  fmac.f16 y, y, x{}, r3, async{}\n", k, order);
  return s + "  ret\n";
}

// Elements stepped in cycles before `c`.
std::uint64_t elements_before(CoreRig& rig, std::uint64_t c) {
  rig.run_to(c);
  return rig.counters().vector_elements;
}

TEST(OrderedMicrothreads, DependentFmacsRunBackToBackByDefault) {
  // forward 1: FMAC 1 steps 5, 6 (done 6 + 1 + 4 = 11), FMAC 2 steps 7, 8 (done 13), FMAC 3
  // steps 9, 10 (done 15): six steps in six cycles, the datapath busy in each.
  CoreRig rig;
  rig.load(fmac_chain(3, 8, ", ut=0"));
  EXPECT_EQ(elements_before(rig, 7), 8u);
  EXPECT_EQ(elements_before(rig, 8), 12u);
  EXPECT_EQ(elements_before(rig, 11), 24u);
  rig.run();
  EXPECT_EQ(rig.counters().finish_cycle, 15u);
  // Waiting for the predecessor is not a stall (unordered, FMAC 2 would stall on the datapath
  // at 6, and FMAC 3 at 7 and 8: UnorderedOperationsIgnoreTheForwardLatency).
  EXPECT_EQ(rig.counters().stall_total(), 0u);
  for (unsigned i = 0; i < 8; ++i) EXPECT_EQ(rig.word(2 * i, 2), 0x4600u) << i;  // 0 + 3 x (1 x 2) = 6
}

TEST(OrderedMicrothreads, ASuccessorStepsForwardCyclesAfterItsPredecessorsMatchingStep) {
  // forward 4, FMACs of 2 steps: the successor's first step is 4 - 2 + 1 = 3 cycles after the
  // predecessor's last (its block 0 four cycles after the predecessor's block 0). FMAC 1
  // steps 5, 6; FMAC 2 steps 9, 10; FMAC 3 steps 13, 14 (done 14 + 1 + 4 = 19).
  CoreRig rig({"wafer.pe.latency.forward=4 cycles"});
  rig.load(fmac_chain(3, 8, ", ut=0"));
  EXPECT_EQ(elements_before(rig, 9), 8u);  // cycle 8: one before FMAC 2 may step
  EXPECT_EQ(elements_before(rig, 10), 12u);
  EXPECT_EQ(elements_before(rig, 13), 16u);  // cycle 12: one before FMAC 3 may step
  EXPECT_EQ(elements_before(rig, 14), 20u);
  rig.run();
  EXPECT_EQ(rig.counters().finish_cycle, 19u);
  EXPECT_EQ(rig.counters().stall_total(), 0u);  // waiting for the predecessor is not a stall
}

TEST(OrderedMicrothreads, OperationsOfAsManyStepsAsTheForwardLatencyDoNotWait) {
  // forward 2 and FMACs of 2 steps: block 0 of a successor comes 2 cycles after the
  // predecessor's block 0 when it steps right after the predecessor's last step.
  CoreRig rig({"wafer.pe.latency.forward=2 cycles"});
  rig.load(fmac_chain(3, 8, ", ut=0"));
  EXPECT_EQ(elements_before(rig, 7), 8u);
  EXPECT_EQ(elements_before(rig, 8), 12u);
  rig.run();
  EXPECT_EQ(rig.counters().finish_cycle, 15u);
}

TEST(OrderedMicrothreads, OneStepOperationsWaitTheWholeForwardLatency) {
  // forward 4, FMACs of 1 step (4 elements): steps at 5, 9 and 13; done 13 + 1 + 4 = 18.
  CoreRig rig({"wafer.pe.latency.forward=4 cycles"});
  rig.load(fmac_chain(3, 4, ", ut=0"));
  EXPECT_EQ(elements_before(rig, 9), 4u);
  EXPECT_EQ(elements_before(rig, 10), 8u);
  EXPECT_EQ(elements_before(rig, 13), 8u);
  EXPECT_EQ(elements_before(rig, 14), 12u);
  rig.run();
  EXPECT_EQ(rig.counters().finish_cycle, 18u);
}

TEST(OrderedMicrothreads, UnorderedOperationsIgnoreTheForwardLatency) {
  // The same chain without ut=: only the datapath orders them (steps 5..10, done 15).
  CoreRig rig({"wafer.pe.latency.forward=4 cycles"});
  rig.load(fmac_chain(3, 8, ""));
  rig.run();
  EXPECT_EQ(rig.counters().finish_cycle, 15u);
  EXPECT_EQ(rig.stall(Stall::Fpu), 3u);  // FMAC 2 at 6, FMAC 3 at 7 and 8
}

TEST(OrderedMicrothreads, DifferentMicrothreadsAreNotOrdered) {
  // forward 4: FMAC 1 on ut 0, FMAC 2 on ut 1 (y and a second accumulator z): FMAC 2 steps
  // right behind FMAC 1 on the datapath (7, 8), as unordered operations would.
  CoreRig rig({"wafer.pe.latency.forward=4 cycles"});
  rig.load(
      ".pe 0, 0\n.dsd y, mem, f16, base=0x000, len=8\n.dsd z, mem, f16, base=0x810, len=8\n"
      ".fill xv, 0x408, f16, 8, 1.0\n.dsd x, mem, f16, base=0x408, len=8\n"
      ".task main, 0\n.entry main\nmain:\n  mov.f16 r3, 2.0\n"
      "  fmac.f16 y, y, x, r3, async, ut=0\n  fmac.f16 z, z, x, r3, async, ut=1\n  ret\n");
  EXPECT_EQ(elements_before(rig, 8), 12u);
  rig.run();
  EXPECT_EQ(rig.counters().finish_cycle, 13u);
}

// A chain of fp32-accumulating FMACs (bf16 sources) whose steps need three reads and two
// writes: 3 cycles per step on 2 read ports and 1 write port. The successor never takes a port
// before its predecessor's last step, so each FMAC reads the sums the previous one wrote, and
// a copy on the same microthread reads the final sums.
TEST(OrderedMicrothreads, Fp32AccumulationChainIsBitExactAndCycleExact) {
  using hw::DType;
  using hw::numerics::convert;
  using hw::numerics::from_double;
  constexpr unsigned kChain = 5, kLen = 8;
  std::string s =
      fmt::format(".pe 0, 0\n.fill accv, 0x000, f32, {0}, 0.1\n.dsd acc, mem, f32, base=0x000, len={0}\n", kLen);
  std::vector<std::vector<std::uint32_t>> xs(kChain);  // bf16 bits
  for (unsigned k = 0; k < kChain; ++k) {
    std::string vals;
    for (unsigned i = 0; i < kLen; ++i) {
      const double v = 1.0 / (3.0 + k + 7 * i);
      xs[k].push_back(from_double(DType::BF16, v));
      vals += fmt::format(", {}", v);
    }
    s += fmt::format(".data x{0}v, {1}, bf16{2}\n.dsd x{0}, mem, bf16, base={1}, len={3}\n", k, 0x408 + 0x100 * k, vals,
                     kLen);
  }
  s += fmt::format(".dsd copy, mem, f32, base=0x1000, len={}\n", kLen);
  s += ".task main, 0\n.entry main\nmain:\n  mov.bf16 r3, 1.75\n";
  for (unsigned k = 0; k < kChain; ++k) s += fmt::format("  fmac.f32.bf16 acc, acc, x{}, r3, async, ut=2\n", k);
  s += "  fmov.f32 copy, acc, async, ut=2\n  ret\n";
  CoreRig rig;
  rig.load(s);
  rig.run();
  // FMAC k's steps occupy cycles 5 + 6k .. 10 + 6k (each: 2 reads; 1 read and 1 write; 1
  // write); the copy steps at 35..38 (2 fp32 a step) and is done at 38 + 1 + 1 = 40.
  EXPECT_EQ(rig.counters().finish_cycle, 40u);
  EXPECT_EQ(rig.stall(Stall::SramPort), 4u * kChain);
  EXPECT_EQ(rig.counters().vector_ops, kChain + 1);
  const std::uint32_t r = convert(DType::F32, DType::BF16, from_double(DType::BF16, 1.75));
  for (unsigned i = 0; i < kLen; ++i) {
    std::uint32_t a = from_double(DType::F32, 0.1);
    for (unsigned k = 0; k < kChain; ++k)
      a = hw::numerics::fma(DType::F32, convert(DType::F32, DType::BF16, xs[k][i]), r, a);
    EXPECT_EQ(rig.word(0x1000 + 4 * i, 4), a) << i;
    EXPECT_EQ(rig.word(4 * i, 4), a) << i;
  }
}

TEST(OrderedMicrothreads, AZeroLengthOperationFollowsItsPredecessor) {
  // forward 1: FMAC steps 5, 6; an empty copy on the same microthread is released at 6, starts
  // at 7 and is done at 7 + 1 (mov latency) = 8, before the FMAC (done 11).
  CoreRig rig;
  rig.load(
      ".pe 0, 0\n.dsd y, mem, f16, base=0x000, len=8\n.fill xv, 0x408, f16, 8, 1.0\n"
      ".dsd x, mem, f16, base=0x408, len=8\n.dsd e, mem, f16, base=0x800, len=0\n"
      ".task main, 0\n.task after, 1\n.entry main\nmain:\n  mov.f16 r3, 2.0\n"
      "  fmac.f16 y, y, x, r3, async, ut=0\n  fmov.f16 e, e, async, ut=0, activate=after\n  ret\n"
      "after:\n  tsc r4\n  ret\n");
  rig.run();
  // `after` activated at 8, selected at 8, its tsc at 10.
  EXPECT_EQ(rig.reg(4), 10u);
  EXPECT_EQ(rig.counters().finish_cycle, 12u);
}

TEST(OrderedMicrothreads, AMicrothreadBeyondThePlatformsIsAnErrorAtLoad) {
  CoreRig rig({"wafer.pe.microthreads=4"});
  try {
    rig.load(
        ".pe 0, 0\n.dsd y, mem, f16, base=0x000, len=8\n.task main, 0\n.entry main\nmain:\n"
        "  fmov.f16 y, y, async, ut=4\n  ret\n");
    FAIL() << "expected an error";
  } catch (const sim::config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("microthread 4 is beyond the platform's 4 microthreads"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("t.s:6"), std::string::npos) << e.what();
  }
}

TEST(OrderedMicrothreads, TheAssemblerChecksTheMicrothreadAndPrintsIt) {
  const std::string head = ".pe 0, 0\n.dsd y, mem, f16, base=0x000, len=8\n.task main, 0\n.entry main\nmain:\n";
  auto error_of = [&](const std::string& line) {
    try {
      (void)hw::isa::assemble(head + line + "\n  ret\n", "t.s");
    } catch (const sim::config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("  fmov.f16 y, y, ut=1").find("t.s:6:3: error: a microthread (ut=) needs 'async'"),
            std::string::npos);
  EXPECT_NE(error_of("  fmov.f16 y, y, async, ut=64").find("microthread 64 is out of range 0 .. 63"),
            std::string::npos);
  EXPECT_NE(error_of("  fmov.f16 y, y, async, ut=1, ut=2").find("only one microthread (ut=)"), std::string::npos);
  EXPECT_NE(error_of("  add r1, r1, 1, ut=1").find("error"), std::string::npos);
  const auto placements = hw::isa::assemble(head + "  fmov.f16 y, y, async, ut=3, activate=main\n  ret\n", "t.s");
  EXPECT_EQ(placements.at(0).program->code.at(0).ut, 3u);
  EXPECT_NE(hw::isa::disassemble(placements).find("fmov.f16 y, y, async, ut=3, activate=main"), std::string::npos)
      << hw::isa::disassemble(placements);
}

// Microthread slots (held by every busy PE of a wafer) are made as they are first used,
// doubling, and never beyond the PE's 1 + microthreads.
TEST(MicrothreadSlots, GrowAsUsedUpToThePesSlotCount) {
  struct Case {
    unsigned microthreads, fmacs;
    std::size_t slots;
  };
  for (const Case& k : {Case{8, 1, 2}, Case{8, 3, 4}, Case{8, 8, 9}, Case{8, 12, 9}, Case{5, 5, 6}, Case{5, 7, 6}}) {
    CoreRig rig({fmt::format("wafer.pe.microthreads={}", k.microthreads)});
    rig.load(fmac_chain(k.fmacs, 8, ""));
    EXPECT_EQ(rig.core().operation_slots_allocated(), 1u) << "before any issue";
    rig.run();
    EXPECT_EQ(rig.core().operation_slots_allocated(), k.slots) << k.microthreads << " microthreads, " << k.fmacs;
    EXPECT_EQ(rig.counters().vector_elements, 8u * k.fmacs);
  }
}

}  // namespace
}  // namespace wafersim::test::core_ordered_test
