// The assembly format: what it builds, and errors reported with file, line and column.

#include <gtest/gtest.h>

#include "hw/isa/assembler.h"
#include "hw/numerics/softfloat.h"
#include "sim/config/diagnostics.h"

namespace wafersim::hw::isa::assembler_test {
namespace {

// The message of the first diagnostic, or "" when the text assembles.
std::string first_error(const std::string& text) {
  try {
    assemble(text, "t.s");
  } catch (const sim::config::ConfigError& e) {
    return e.diagnostics().front().str();
  }
  return "";
}

TEST(Assembler, BuildsProgramsForEachSection) {
  auto ps = assemble(R"(
.equ N, 4
.pe 0..3, 1              ; a row of four PEs
.data x, 0x10, f32, 1.5, -2, inf, #0x7fc00001
.fill y, 0x40, f16, N*2, 0.5
.dsd vx, mem, f32, base=x, len=N, stride=1
.dsd vy, circ, f16, base=y, size=8, len=N+1, start=3
.dsd in, fabin, f16, color=5, len=N, sparse
.dsd out, fabout, f32, color=6, len=N
.task main, 3
.task on_w, 9, color=5
.entry main
main:  mov r1, N - 1
loop:  sub r1, r1, 1
       bne r1, 0, loop
       fmac.f32 out, vx, vx, r2, async, activate=main
       fmac.f16 vy, vy, in, r3
       ld r4, [r1 + 8]
       st.h [0x20], r4
       ret
on_w:  ret
.pe 5, 5
main: ret
)",
                     "t.s");
  ASSERT_EQ(ps.size(), 2u);
  const Placement& p = ps[0];
  EXPECT_EQ(p.x0, 0);
  EXPECT_EQ(p.x1, 3);
  EXPECT_EQ(p.y0, 1);
  EXPECT_EQ(p.y1, 1);
  const Program& g = *p.program;
  ASSERT_EQ(g.data.size(), 2u);
  EXPECT_EQ(g.data[0].addr, 0x10u);
  ASSERT_EQ(g.data[0].bytes.size(), 16u);
  EXPECT_EQ(g.data[0].bytes[2], 0xc0);  // 1.5f = 0x3fc00000, little-endian
  EXPECT_EQ(g.data[0].bytes[7], 0xc0);  // -2.0f = 0xc0000000
  EXPECT_EQ(g.data[0].bytes[15], 0x7f);
  EXPECT_EQ(g.data[0].bytes[12], 0x01);  // raw NaN bits kept
  EXPECT_EQ(g.data[1].bytes.size(), 16u);
  EXPECT_EQ(g.data[1].bytes[1], 0x38);  // 0.5 in f16 = 0x3800
  ASSERT_EQ(g.descriptors.size(), 4u);
  EXPECT_EQ(g.descriptors[1].init.kind, Descriptor::Kind::Circ);
  EXPECT_EQ(g.descriptors[1].init.length, 5u);
  EXPECT_EQ(g.descriptors[1].init.start, 3u);
  EXPECT_TRUE(g.descriptors[2].init.sparse);
  ASSERT_EQ(g.tasks.size(), 2u);
  EXPECT_EQ(g.tasks[0].id, 3);
  EXPECT_EQ(g.tasks[0].entry, 0u);
  EXPECT_TRUE(g.tasks[1].data);
  EXPECT_EQ(g.tasks[1].color, 5);
  EXPECT_EQ(g.tasks[1].entry, 8u);
  EXPECT_EQ(g.entry_tasks, std::vector<std::uint8_t>{3});
  ASSERT_EQ(g.code.size(), 9u);
  EXPECT_EQ(g.code[0].ops[1].imm, 3);  // N - 1
  EXPECT_EQ(g.code[2].op, Op::Branch);
  EXPECT_EQ(g.code[2].ops[2].imm, 1);  // loop
  EXPECT_TRUE(g.code[3].vector);
  EXPECT_TRUE(g.code[3].async);
  EXPECT_EQ(g.code[3].on_done, OnDone::Activate);
  EXPECT_EQ(g.code[4].type, DType::F16);
  EXPECT_EQ(g.code[5].ops[1].kind, Operand::Kind::Mem);
  EXPECT_EQ(g.code[5].ops[1].imm, 8);
  EXPECT_EQ(g.code[6].width, 2);
  EXPECT_EQ(g.where[4].line, 17);
  EXPECT_EQ(g.where[4].column, 8);
  EXPECT_EQ(g.describe(4), "'fmac.f16 vy, vy, in, r3' at t.s:17:8");
  EXPECT_EQ(ps[1].program->code.size(), 1u);
}

TEST(Assembler, FloatLiteralsRoundOnce) {
  auto ps = assemble(".pe 0,0\nmain: mov.f16 r1, 0.1\nmov.bf16 r2, -0.1\nmov.f32 r3, 1e-46\n", "t.s");
  const auto& c = ps[0].program->code;
  EXPECT_EQ(c[0].ops[1].imm, 0x2E66);
  EXPECT_EQ(c[1].ops[1].imm, 0xBDCD);
  EXPECT_EQ(c[2].ops[1].imm, 0);  // below half the smallest subnormal: +0
}

// Each malformed line is reported at its line and column.
TEST(Assembler, SyntaxErrorsCarryLineAndColumn) {
  EXPECT_EQ(first_error(".pe 0, 0\nmain:\n    fmca.f32 r1, r2, r3\n"),
            "t.s:3:5: error: unknown instruction 'fmca.f32'; did you mean 'fmac'?");
  EXPECT_EQ(first_error("main:\n  add r1, r2\n"),
            "t.s:2:11: error: 'add' takes 3 operands: expected add rD, rA, rB|VALUE");
  EXPECT_EQ(first_error("  add r1, r2, r3, r4\n"),
            "t.s:1:19: error: too many operands for 'add': expected add rD, rA, rB|VALUE");
  EXPECT_EQ(first_error("  mov r16, 1\n"), "t.s:1:7: error: no register 'r16': registers are r0 .. r15");
  EXPECT_EQ(
      first_error("  mov r1, UNDEFINED\n"),
      "t.s:1:11: error: undefined symbol 'UNDEFINED' (constants are defined with .equ, .data or .fill before use)");
  EXPECT_EQ(first_error("  jmp nowhere\n  ret\n"), "t.s:1:7: error: undefined label 'nowhere'");
  EXPECT_EQ(first_error(".dsd v, mem, f32, base=2, len=4\n"),
            "t.s:1:24: error: base address 2 is not aligned to 4 bytes for f32");
  EXPECT_EQ(first_error(".dsd v, mem, f32, bse=0, len=4\n"),
            "t.s:1:19: error: unknown key 'bse' for a mem descriptor; did you mean 'base'?");
  EXPECT_EQ(first_error(".dsd v, mem, f32, len=4\n"), "t.s:1:6: error: mem descriptor 'v' needs base=");
  EXPECT_EQ(first_error(".dsd v, mem, f32, base=0, len=4\n  fadd.f16 v, v, v\n"),
            "t.s:2:12: error: 'v' holds f32 but this operand of 'fadd.f16' is f16");
  EXPECT_EQ(first_error(".dsd i, fabin, f32, color=1, len=4\n  fmov.f32 i, r1\n"),
            "t.s:2:12: error: 'i' is a fabric input and cannot be a destination");
  EXPECT_EQ(first_error("  fadd.f64 r1, r2, r3\n"),
            "t.s:1:3: error: 'fadd.f64': unknown type '.f64' (expected f16, bf16 or f32)");
  EXPECT_EQ(first_error("  ld r1, [r2 * 4]\n"),
            "t.s:1:14: error: expected '+' or '-' after the base register, found '*'");
  EXPECT_EQ(first_error("  mov r1, 12abc\n"), "t.s:1:11: error: malformed number '12a'");
  EXPECT_EQ(first_error("  mov r1, 1 $ 2\n"), "t.s:1:13: error: unexpected character '$'");
  EXPECT_EQ(first_error(".pe 0..7, 0\n.pe 3, 0\nmain: ret\n"),
            "t.s:2:1: error: PEs of this section already have a program from t.s:1:1");
  EXPECT_EQ(first_error(".task t, 64\n"), "t.s:1:10: error: task id 64 is out of range 0 .. 63");
  EXPECT_EQ(first_error(".task t, 1\n"),
            "t.s:1:1: error: task 't' has no code: add the label 't:' before its first instruction");
  EXPECT_EQ(first_error(".pee 0, 0\n"), "t.s:1:1: error: unknown directive '.pee'; did you mean '.pe'?");
  EXPECT_EQ(first_error("  fadd.f32 r1, r2, r3, async\n"),
            "t.s:1:3: error: only vector instructions (with a descriptor operand) can be async");
  EXPECT_EQ(first_error("  mov.f16 r1, 1.5x\n"), "t.s:1:15: error: malformed number '1.5x'");
  EXPECT_EQ(first_error(".dsd i, fabin, f16, color=1, len=8, repeat=0\n"),
            "t.s:1:44: error: repeat 0 is out of range 1 .. 65535");
  EXPECT_EQ(first_error(".dsd i, fabin, f16, color=1, len=8, repeat=2, sparse\n"),
            "t.s:1:6: error: a sparse stream indexes memory by each wavelet: it cannot repeat wavelets");
  EXPECT_EQ(first_error(".dsd o, fabout, f16, color=1, len=8, repeat=2\n"),
            "t.s:1:38: error: unknown key 'repeat' for a fabout descriptor");
}

TEST(Assembler, AFabricInputRepeatsEachWaveletOverItsElements) {
  auto ps = assemble(".dsd in, fabin, f16, color=5, len=8, repeat=4\nmain: ret\n", "t.s");
  const Descriptor& d = ps.at(0).program->descriptors.at(0).init;
  EXPECT_EQ(d.repeat, 4u);
  EXPECT_EQ(d.length, 8u);
  EXPECT_FALSE(d.sparse);
  EXPECT_EQ(
      assemble(".dsd in, fabin, f16, color=5, len=8\nmain: ret\n", "t.s").at(0).program->descriptors.at(0).init.repeat,
      1u);
}

TEST(Assembler, ReportsEveryErrorAtOnce) {
  try {
    assemble("  bogus r1\n  mov r1, r2\n  add r1\n  nope\n", "many.s");
    FAIL() << "expected errors";
  } catch (const sim::config::ConfigError& e) {
    ASSERT_EQ(e.diagnostics().size(), 3u);
    EXPECT_EQ(e.diagnostics()[0].location.line, 1);
    EXPECT_EQ(e.diagnostics()[1].location.line, 3);
    EXPECT_EQ(e.diagnostics()[2].location.line, 4);
    EXPECT_EQ(e.exit_code(), sim::kExitBadInput);
  }
}

TEST(Assembler, MissingFileIsAnInputError) {
  try {
    assemble_file("/nonexistent/prog.s");
    FAIL();
  } catch (const sim::config::ConfigError& e) {
    EXPECT_EQ(e.diagnostics()[0].str(), "/nonexistent/prog.s: error: cannot read the program file: no such file");
  }
}

}  // namespace
}  // namespace wafersim::hw::isa::assembler_test
