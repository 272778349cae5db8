// `wafersim exec` end to end: cycles and stats of hand-written programs, dumps, the run
// folder, and exit codes for bad assembly (2) and program errors or deadlocks (3).

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace exec_cli_test {
namespace {
using wafersim::test::slurp;
using wafersim::test::wafersim;

const char* kAxpy = R"(
; y = 2 x + y on every PE of a 2 x 2 block
.pe 0..1, 0..1
.data x, 0x000, f32, 1, 2, 3, 4
.data y, 0x108, f32, 10, 20, 30, 40
.dsd vx, mem, f32, base=x, len=4
.dsd vy, mem, f32, base=y, len=4
.task main, 0
.entry main
main:
  mov.f32 r1, 2.0
  fmac.f32 vy, vy, vx, r1
  ret
)";

TEST(Exec, RunsProgramsAndPrintsCyclesStatsAndDumps) {
  wafersim::test::TempDir dir;
  auto prog = dir.write("axpy.s", kAxpy);
  auto r =
      wafersim("exec tiny --program " + prog + " --dump 1,1:0x108:4:f32 --json --out " + (dir.path() / "a").string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pes_loaded"], 4);
  // Task starts at 0, mov at 2, fmac issued at 3: 2 + 4 + 4 steps -> done at 13, ret at 13.
  EXPECT_EQ(j["cycles"], 14);
  EXPECT_EQ(j["flops"], 4 * 8);
  EXPECT_EQ(j["pes"].size(), 4u);
  EXPECT_EQ(j["pes"][3]["finish_cycle"], 14);
  EXPECT_EQ(j["dumps"][0]["values"], nlohmann::json::parse("[12.0, 24.0, 36.0, 48.0]"));
  auto stats = nlohmann::json::parse(slurp(dir.path() / "a" / "stats.json"));
  EXPECT_EQ(stats["stats"]["cluster"]["wafer0"]["cores"]["flops"], 32);
  EXPECT_EQ(stats["stats"]["cluster"]["wafer0"]["cores"]["finish_cycle"], 14);
  // The same inputs give the same bytes.
  ASSERT_EQ(wafersim("exec tiny --program " + prog + " --out " + (dir.path() / "b").string()).code, 0);
  EXPECT_EQ(slurp(dir.path() / "a" / "stats.json"), slurp(dir.path() / "b" / "stats.json"));
  ASSERT_EQ(wafersim("exec tiny --program " + prog + " --no-idle-skip --out " + (dir.path() / "c").string()).code, 0);
  EXPECT_EQ(slurp(dir.path() / "a" / "stats.json"), slurp(dir.path() / "c" / "stats.json"));
}

// A run to quiescence ends at its last event, whatever the host's speed: SystemC time is not
// left at the end of a run slice (whose length follows the wall clock).
TEST(Exec, ARunEndsAtItsLastEventNotAtASliceEnd) {
  wafersim::test::TempDir dir;
  const std::string soak = std::string(WAFERSIM_SOURCE_DIR) + "/examples/programs/soak.s";
  auto r = wafersim("exec tiny --program " + soak + " --json --out " + (dir.path() / "a").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["cycles"], 78999);
  auto stats = nlohmann::json::parse(slurp(dir.path() / "a" / "stats.json"));
  EXPECT_EQ(stats["stats"]["cluster"]["wafer0"]["cycles"], 78999);
}

TEST(Exec, ProgramsTalkOverTheMeshWithStaticRoutes) {
  wafersim::test::TempDir dir;
  const std::string ex = std::string(WAFERSIM_SOURCE_DIR) + "/examples/programs/";
  auto r = wafersim("exec tiny --program " + ex + "stream.s --routes " + ex +
                    "stream-routes.yaml --dump 3,0:0x100:12:f16 --dump 3,0:0x200:1:u32 --json --out " +
                    (dir.path() / "s").string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["dumps"][0]["values"], nlohmann::json::parse("[2,4,6,8,10,12,14,16,18,20,22,24]"));
  EXPECT_EQ(j["dumps"][1]["values"][0], 25);  // the consumer's own cycle count, as annotated in stream.s
  EXPECT_EQ(j["stalls"]["fabric_in"], 5);
  auto stats = nlohmann::json::parse(slurp(dir.path() / "s" / "stats.json"));
  EXPECT_EQ(stats["stats"]["cluster"]["wafer0"]["cores"]["wavelets_in"], 12);
  // Without the routes the first wavelet has nowhere to go: a simulation error naming the router.
  auto none = wafersim("exec tiny --program " + ex + "stream.s --out " + (dir.path() / "n").string(), true);
  EXPECT_EQ(none.code, 3);
  EXPECT_NE(none.out.find("reached router (0, 0) from its ramp port, but the route table has no route for color 1"),
            std::string::npos)
      << none.out;
  // A broken route table is bad input, with its line and column.
  auto bad = wafersim("exec tiny --program " + ex + "stream.s --routes " +
                          dir.write("bad.yaml", "routes:\n  - {color: 1, at: [0, 0], from: rmap, to: east}\n") +
                          " --out " + (dir.path() / "b").string(),
                      true);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("bad.yaml:2:"), std::string::npos) << bad.out;
}

TEST(Exec, TimingOnlyGivesTheSameStatisticsWithoutValues) {
  wafersim::test::TempDir dir;
  const std::string ex = std::string(WAFERSIM_SOURCE_DIR) + "/examples/programs/";
  for (const std::string& args :
       {"--program " + ex + "stream.s --routes " + ex + "stream-routes.yaml", "--program " + ex + "axpy.s"}) {
    SCOPED_TRACE(args);
    auto f = wafersim("exec tiny " + args + " --json --force --out " + (dir.path() / "f").string());
    auto t = wafersim("exec tiny " + args + " --timing-only --json --force --out " + (dir.path() / "t").string());
    ASSERT_EQ(f.code, 0) << f.out;
    ASSERT_EQ(t.code, 0) << t.out;
    auto jf = nlohmann::json::parse(f.out), jt = nlohmann::json::parse(t.out);
    EXPECT_EQ(jt["timing_only"], true);
    EXPECT_GT(jt["cycles"], 0);
    for (const char* k : {"cycles", "instructions", "flops", "busy_cycles", "stalls", "pes"})
      EXPECT_EQ(jt[k], jf[k]) << k;
    // Every statistic of the run (cores and fabric) is the same, byte for byte.
    EXPECT_EQ(slurp(dir.path() / "t" / "stats.json"), slurp(dir.path() / "f" / "stats.json"));
    // Functional runs hold the programs' data; timing-only runs only the pages of scalar
    // stores (stream.s: 2 pages against 1; axpy.s stores its timings in its data page).
    EXPECT_LE(jt["sram_allocated_bytes"].get<std::uint64_t>(), jf["sram_allocated_bytes"].get<std::uint64_t>());
  }
  // Values are not computed, so there is nothing to dump.
  auto r = wafersim(
      "exec tiny --program " + ex + "axpy.s --timing-only --dump 0,0:0x0:1:f32 --out " + (dir.path() / "d").string(),
      true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--timing-only"), std::string::npos) << r.out;
}

TEST(Exec, BadAssemblyIsExitCodeTwoWithLineAndColumn) {
  wafersim::test::TempDir dir;
  auto prog = dir.write("bad.s", ".pe 0, 0\nmain:\n  fadd.f32 r1, r2\n  jmp nowhere\n");
  auto r = wafersim("exec tiny --program " + prog + " --out " + dir.path().string(), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find(prog + ":3:16: error: 'fadd.f32' takes 3 operands"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(prog + ":4:7: error: undefined label 'nowhere'"), std::string::npos) << r.out;
  auto v = wafersim("validate " + prog, true);
  EXPECT_EQ(v.code, 2);
  EXPECT_NE(v.out.find(prog + ":3:16:"), std::string::npos) << v.out;
  EXPECT_EQ(wafersim("validate " + dir.write("ok.s", kAxpy)).code, 0);
}

TEST(Exec, ProgramsThatDoNotFitThePlatformAreBadInput) {
  wafersim::test::TempDir dir;
  auto r = wafersim(
      "exec tiny --program " + dir.write("far.s", ".pe 9, 0\nmain: ret\n") + " --out " + (dir.path() / "o").string(),
      true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("far.s:1:1: error: PEs x 9..9, y 0..0 reach beyond the 8 x 8 grid"), std::string::npos) << r.out;
  auto c = wafersim("exec tiny --program " + dir.write("color.s", ".dsd o, fabout, f32, color=30, len=1\nmain: ret\n") +
                        " --out " + (dir.path() / "o").string(),
                    true);
  EXPECT_EQ(c.code, 2);
  EXPECT_NE(c.out.find("color.s:1:6: error: color 30 is beyond the platform's 24 colors"), std::string::npos) << c.out;
}

TEST(Exec, ProgramErrorsAreSimulationErrors) {
  wafersim::test::TempDir dir;
  auto over = wafersim("exec tiny --program " +
                           dir.write("over.s", ".task main, 0\n.entry main\nmain:\n  st [0xC000], r1\n  ret\n") +
                           " --out " + (dir.path() / "o").string(),
                       true);
  EXPECT_EQ(over.code, 3);
  EXPECT_NE(over.out.find("PE (0, 0): SRAM access at address 0xc000 (4 bytes) is beyond the 48 KiB SRAM"),
            std::string::npos)
      << over.out;
  // A receive on a color no route delivers: nothing can happen any more, a deadlock.
  auto dead = wafersim("exec tiny --program " +
                           dir.write("recv.s", ".task main, 0\n.entry main\nmain:\n  recv r1, 3\n  ret\n") + " --out " +
                           (dir.path() / "d").string(),
                       true);
  EXPECT_EQ(dead.code, 3);
  EXPECT_NE(dead.out.find("the simulation ran out of events while 1 PE(s) still had work (deadlock):\n  PE (0, 0): "
                          "task 'main' at 'recv r1, 3' at"),
            std::string::npos)
      << dead.out;
  EXPECT_NE(dead.out.find("stalled: fabric_in"), std::string::npos) << dead.out;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "d" / "stats.json"));
}

TEST(Exec, RunLimitsAreExitCodeFourAndKeepTheRunFolder) {
  wafersim::test::TempDir dir;
  auto prog = dir.write("loop.s", ".task main, 0\n.entry main\nmain:\n  jmp main\n");
  auto r = wafersim("exec tiny --program " + prog + " --max-cycles 1000 --out " + (dir.path() / "l").string(), true);
  EXPECT_EQ(r.code, 4) << r.out;
  auto run = nlohmann::json::parse(slurp(dir.path() / "l" / "run.json"));
  EXPECT_EQ(run["status"], "limit");
  EXPECT_EQ(run["cycles"], 1000);
  auto stats = nlohmann::json::parse(slurp(dir.path() / "l" / "stats.json"));
  EXPECT_EQ(stats["stats"]["cluster"]["wafer0"]["cores"]["instructions"], 998);  // one per cycle from cycle 2
}

// exec is a command sweeps can run: the example sweep over the axpy program.
TEST(Exec, SweepsRunHandWrittenPrograms) {
  wafersim::test::TempDir dir;
  // The program path in the sweep is relative to the repository root: run from there.
  auto cmd = std::string("cd ") + WAFERSIM_SOURCE_DIR + " && " + WAFERSIM_BINARY +
             " sweep sweeps/pe-fmac-latency-lanes.yaml --jobs 2 --out " + (dir.path() / "sw2").string() +
             " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string csv = slurp(dir.path() / "sw2" / "results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13) << csv;
  // The preset's latency (4) and lanes (4): the 127 cycles of `wafersim exec` on axpy.s.
  EXPECT_NE(csv.find("\n7,4,4,ok,0,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",127,0,0\n"), std::string::npos) << csv;
}

TEST(Exec, MalformedDumpsAreBadInput) {
  wafersim::test::TempDir dir;
  auto prog = dir.write("ret.s", ".task main, 0\n.entry main\nmain:\n  ret\n");
  for (const char* d :
       {"0,0:0x10:4", "0:0:0x10:4:f32", "0,0:0x1g:4:f32", "0,0:16:4:f64", "9,0:0:1:f32", "0,0:0xC000:1:f32"}) {
    auto r = wafersim("exec tiny --program " + prog + " --dump " + d + " --force --out " + (dir.path() / "o").string(),
                      true);
    EXPECT_EQ(r.code, 2) << d << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("--dump '") + d + "'"), std::string::npos) << r.out;
  }
  auto ok =
      wafersim("exec tiny --program " + prog + " --dump 0,0:0xBFFC:1:f32 --json --out " + (dir.path() / "p").string());
  ASSERT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["dumps"][0]["values"], nlohmann::json::parse("[0.0]"));
}

TEST(Exec, HelpExplainsTheCommand) {
  auto r = wafersim("exec --help");
  EXPECT_EQ(r.code, 0);
  for (const char* w : {"--program", "--routes", "--dump", "--max-cycles", "docs/isa.md"})
    EXPECT_NE(r.out.find(w), std::string::npos) << w;
}

}  // namespace
}  // namespace exec_cli_test
