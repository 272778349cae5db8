// Hostile input (docs/reliability.md, "Bad input"): every reader is bounded and refuses what
// is not a regular file, YAML aliases cannot blow a file up, text is UTF-8 where it is read,
// counts cannot overflow silently, numeric options refuse NaN and infinity, and sweeps too
// large to plan are refused before they start. Each test asserts the exit code and the message.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "sim/config/diagnostics.h"
#include "sim/config/loader.h"
#include "sim/config/utf8.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::hostile_input_test {
namespace {

using test::wafersim;

std::string program() { return std::string(WAFERSIM_SOURCE_DIR) + "/examples/programs/tasks.s"; }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Nine levels of ten aliases each: 10^9 nodes when expanded, 500 bytes of text.
std::string laughs() {
  std::string y = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    y += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) y += (k ? ", *a" : "*a") + std::to_string(i - 1);
    y += "]\n";
  }
  return y;
}

const char* kAliasMessage =
    "aliases expand the document beyond the limit of 100000 nodes and 4 MiB of text they may add";

TEST(HostileInput, AliasExpansionIsBoundedInEveryYamlReader) {
  test::TempDir tmp;
  const std::string file = tmp.write("laughs.yaml", "name: laughs\n" + laughs());
  for (const std::string& args : {"validate " + file, "info " + file, "compile " + file + " --platform tiny",
                                  "exec tiny --program " + program() + " --routes " + file}) {
    const auto r = wafersim(args, true);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, file + ":")) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, kAliasMessage)) << args << "\n" << r.out;
  }
  const std::string base = tmp.write("child.yaml", "base: laughs.yaml\n");
  EXPECT_TRUE(has(wafersim("validate " + base, true).out, kAliasMessage));
  const std::string sweep = tmp.write("sweep.yaml", "sweep:\n  name: s\n" + laughs());
  const auto s = wafersim("sweep " + sweep + " --list", true);
  EXPECT_EQ(s.code, 2) << s.out;
  EXPECT_TRUE(has(s.out, kAliasMessage)) << s.out;
}

TEST(HostileInput, AliasExpansionIsBoundedInASetValue) {
  std::string value = laughs();
  for (auto& c : value)
    if (c == '\n') c = ',';
  const auto r = wafersim("validate tiny --set 'fabric.extra={" + value + "}'", true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "<command line>:1:")) << r.out;
  EXPECT_TRUE(has(r.out, kAliasMessage)) << r.out;
}

TEST(HostileInput, AFewAliasesStillWork) {
  const auto root = sim::config::Loader::parse("a: &v {x: 1, y: 2}\nb: *v\nc: *v\n", "ok.yaml");
  ASSERT_NE(root.find("c"), nullptr);
  EXPECT_EQ(root.find("c")->find("y")->text(), "2");
}

TEST(HostileInput, ReadersRefuseWhatIsNotARegularFile) {
  test::TempDir tmp;
  const std::string fifo = (tmp.path() / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string dir = tmp.path().string();
  struct Case {
    std::string args, file, kind;
  };
  for (const Case& c : std::vector<Case>{
           {"exec tiny --program /dev/zero", "/dev/zero", "a device"},
           {"exec tiny --program " + fifo, fifo, "a FIFO"},
           {"exec tiny --program " + dir, dir, "a directory"},
           {"exec tiny --program " + program() + " --routes " + dir, dir, "a directory"},
           {"exec tiny --program " + program() + " --routes " + fifo, fifo, "a FIFO"},
           {"validate " + fifo, fifo, "a FIFO"},
           {"info " + dir, dir, "a directory"},
           {"traffic tiny --replay /dev/zero", "/dev/zero", "a device"},
           {"traffic tiny --replay " + fifo, fifo, "a FIFO"},
           {"traffic tiny --replay " + dir, dir, "a directory"},
           {"diff /dev/zero /dev/zero", "/dev/zero", "a device"},
           {"diff " + fifo + " " + fifo, fifo, "a FIFO"},
       }) {
    const bool runs = c.args.rfind("exec", 0) == 0 || c.args.rfind("traffic", 0) == 0;
    const auto r = wafersim(c.args + (runs ? " -o " + (tmp.path() / "out").string() : ""), true);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, c.file)) << c.args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "not a readable file (" + c.kind + ")")) << c.args << "\n" << r.out;
  }
  // A run folder whose rerun record is a FIFO: refused, never opened.
  std::filesystem::create_directories(tmp.path() / "run");
  const std::string record = (tmp.path() / "run" / "rerun.json").string();
  ASSERT_EQ(::mkfifo(record.c_str(), 0600), 0);
  const auto r = wafersim("rerun " + (tmp.path() / "run").string(), true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, record + ": error: cannot read the rerun record: not a readable file (a FIFO)")) << r.out;
}

TEST(HostileInput, AnOversizedProgramIsRefusedByItsSize) {
  test::TempDir tmp;
  const std::string big = (tmp.path() / "big.s").string();
  ASSERT_EQ(::truncate(tmp.write("big.s", "").c_str(), 17 << 20), 0);
  const auto r = wafersim("exec tiny --program " + big, true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, big + ": error: cannot read the program file: 17 MiB is larger than the limit of 16 MiB"))
      << r.out;
}

TEST(HostileInput, TextThatIsNotUtf8IsRefusedWhereItIsRead) {
  test::TempDir tmp;
  const std::string file = tmp.write("bad.yaml", "base: tiny\nname: caf\xe9\n");
  const auto r = wafersim("validate " + file, true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, file + ":2:10: error: byte 0xE9 is not valid UTF-8")) << r.out;
  const auto p = wafersim("exec tiny --program " + tmp.write("bad.s", "; \xff\n"), true);
  EXPECT_EQ(p.code, 2);
  EXPECT_TRUE(has(p.out, "bad.s:1:3: error: byte 0xFF is not valid UTF-8")) << p.out;
  // Arguments: a --set value, a platform file name, an output path; before anything runs.
  const std::string out = (tmp.path() / "o").string();
  for (const std::string& args : {"run tiny --cycles 10 --set \"name=$(printf 'x\\377')\" -o " + out,
                                  "run \"$(printf 'p\\377.yaml')\" --cycles 10 -o " + out,
                                  "run tiny --cycles 10 -o \"" + out + "$(printf '\\377')\""}) {
    const auto a = wafersim(args, true);
    EXPECT_EQ(a.code, 2) << args << "\n" << a.out;
    EXPECT_TRUE(has(a.out, "is not valid UTF-8 (byte 0xFF at offset")) << args << "\n" << a.out;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(sim::config::invalid_utf8_at("\xed\xa0\x80"), 0u);  // a surrogate
  EXPECT_EQ(sim::config::invalid_utf8_at("\xc0\xaf"), 0u);      // an overlong '/'
  EXPECT_EQ(sim::config::invalid_utf8_at("h\xc3\xa9!"), std::string_view::npos);
}

TEST(HostileInput, CountsThatWouldOverflowAreRefusedWithTheKey) {
  const auto r =
      wafersim("compile tiny-mlp --platform tiny --model-set batch=32768 --model-set sequence=1048576", true);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out,
                  "batch x sequence = 34359738368 tokens over 8 columns is 4294967296 tokens per PE, more than "
                  "a PE can address (2^32): the model does not fit this wafer"))
      << r.out;
  const auto run = wafersim("run tiny --model tiny-mlp --model-set batch=32768 --model-set sequence=1048576", true);
  EXPECT_EQ(run.code, 2) << run.out;
  EXPECT_TRUE(has(run.out, "4294967296 tokens per PE")) << run.out;
  const auto flops =
      wafersim("compile gpt3-xl --platform tiny --model-set batch=1048576 --model-set sequence=1048576", true);
  EXPECT_EQ(flops.code, 2) << flops.out;
  EXPECT_TRUE(has(flops.out,
                  "<command line>:1:7: error: batch: batch x sequence = 1048576 x 1048576 = 1099511627776 "
                  "tokens: layer 'h0.q' would count 9.23e+18 FLOPs"))
      << flops.out;
  EXPECT_TRUE(has(flops.out, "past what 64-bit counters hold (2^60)")) << flops.out;
}

TEST(HostileInput, NumericOptionsRefuseNanAndInfinity) {
  for (const char* text : {"nan", "inf", "-inf", "NaN", "1e999"}) {
    const std::string v = text;
    const auto r = wafersim("run tiny --cycles 10 --max-wall " + v, true);
    EXPECT_EQ(r.code, 2) << v << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "expected a number of seconds of at least 0, found '" + v + "'")) << r.out;
    EXPECT_LT(r.out.size(), 400u) << r.out;
    const auto t = wafersim("traffic tiny --rate 0.1 --hotspot-fraction " + v, true);
    EXPECT_EQ(t.code, 2) << v << "\n" << t.out;
    EXPECT_TRUE(has(t.out, "expected a finite number, found '" + v + "'") ||
                has(t.out, "expected a number, found '" + v + "'"))
        << t.out;
  }
  const auto rate = wafersim("traffic tiny --rate -0.1", true);
  EXPECT_EQ(rate.code, 2);
  EXPECT_TRUE(has(rate.out, "--rate: expected a load in wavelets per node per cycle of at least 0, found '-0.1'"))
      << rate.out;
}

TEST(HostileInput, SweepsTooLargeToPlanAreRefusedUpFront) {
  test::TempDir tmp;
  auto grid = [&](int n) {
    std::string values;
    for (int i = 0; i < n; ++i) values += (i ? ", " : "") + std::to_string(i + 1);
    return tmp.write("grid" + std::to_string(n) + ".yaml",
                     "sweep:\n  name: big\n  platform: tiny\n  workload:\n    command: run\n    cycles: 10\n"
                     "  parameters:\n    - {key: workload.seed, values: [" +
                         values + "]}\n    - {key: fabric.queue_depth, values: [" + values + "]}\n");
  };
  const auto huge = wafersim("sweep " + grid(1024) + " --list", true);
  EXPECT_EQ(huge.code, 2) << huge.out;
  EXPECT_TRUE(has(huge.out, "grid1024.yaml:9:13: error: sweep.parameters: the grid has more than 1000000 combinations"))
      << huge.out;
  const auto large = wafersim("sweep " + grid(400) + " --list", true);
  EXPECT_EQ(large.code, 2) << large.out;
  EXPECT_TRUE(has(large.out, "sweep: 160000 points, more than the limit of 100000")) << large.out;
}

TEST(HostileInput, EmptyProgramsAndModelsAreErrors) {
  test::TempDir tmp;
  const auto p = wafersim("exec tiny --program " + tmp.write("empty.s", "; nothing\n"), true);
  EXPECT_EQ(p.code, 2) << p.out;
  EXPECT_TRUE(has(p.out, "empty.s:1:1: error: the program places no code on any PE")) << p.out;
  const auto m =
      wafersim("compile " + tmp.write("m.yaml", "name: m\ninputs: []\nlayers: []\n") + " --platform tiny", true);
  EXPECT_EQ(m.code, 2) << m.out;
  EXPECT_TRUE(has(m.out, "layers: an empty list: a model needs at least one layer")) << m.out;
}

TEST(HostileInput, ATaskThatNeverRanIsAWarning) {
  test::TempDir tmp;
  const std::string prog =
      tmp.write("spare.s", ".pe 0, 0\n.task main, 0\n.task spare, 1\n.entry main\nmain:\n  ret\nspare:\n  ret\n");
  const auto r = wafersim("exec tiny --program " + prog + " -o " + (tmp.path() / "o").string(), true);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(
      has(r.out, "wafersim exec: warning: 1 task(s) never ran:\n  'spare' on PE (0, 0), declared at " + prog + ":3:"))
      << r.out;
}

}  // namespace
}  // namespace wafersim::hostile_input_test
