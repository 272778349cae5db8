// Sweep specifications: reading and diagnostics, grid/zip/random/Latin-hypercube expansion,
// ranges, constraints, the command line of each point, and the launchers' text outputs.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "sim/app/cli.h"
#include "sim/app/sweep/collect.h"
#include "sim/app/sweep/constraint.h"
#include "sim/app/sweep/parallel_backend.h"
#include "sim/app/sweep/plan.h"
#include "sim/app/sweep/point_runner.h"
#include "sim/app/sweep/slurm_backend.h"
#include "sim/config/diagnostics.h"
#include "tests/support/temp_dir.h"

namespace sweep_spec_test {
namespace {
using namespace wafersim::app::sweep;
using wafersim::sim::config::ConfigError;
using wafersim::sim::config::Location;

const Catalog& catalog() {
  static const Catalog c = wafersim::app::sweep_catalog();
  return c;
}

// Writes `body` (the lines under `sweep:`) and plans it.
struct Fixture {
  wafersim::test::TempDir dir;
  std::string write(const std::string& body) { return dir.write("s.yaml", "sweep:\n" + body); }
  Plan plan(const std::string& body) { return Plan::make(write(body), catalog()); }
  // The diagnostics of a spec that must fail, one per line.
  std::string errors(const std::string& body) {
    try {
      Plan::make(write(body), catalog());
    } catch (const ConfigError& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected a ConfigError";
    return {};
  }
};

const char* kBase =
    "  platform: tiny\n"
    "  workload:\n"
    "    command: run\n"
    "    cycles: 100\n";

std::vector<std::vector<std::string>> table(const Plan& p) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& pt : p.points()) {
    std::vector<std::string> row;
    for (const auto& kv : pt.params) row.push_back(kv.second);
    rows.push_back(row);
  }
  return rows;
}

std::vector<std::string> column(const Plan& p, std::size_t i) {
  std::vector<std::string> out;
  for (const auto& pt : p.points()) out.push_back(pt.params.at(i).second);
  return out;
}

using Rows = std::vector<std::vector<std::string>>;
using Col = std::vector<std::string>;

TEST(SweepExpand, GridIsTheProductWithTheFirstParameterSlowest) {
  Fixture f;
  auto p = f.plan(std::string(kBase) +
                  "  parameters:\n"
                  "    - {key: fabric.queue_depth, values: [1, 2, 4]}\n"
                  "    - {key: fabric.colors, values: [8, 24]}\n");
  EXPECT_EQ(p.candidates(), 6u);
  EXPECT_EQ(p.skipped(), 0u);
  EXPECT_EQ(table(p), (Rows{{"1", "8"}, {"1", "24"}, {"2", "8"}, {"2", "24"}, {"4", "8"}, {"4", "24"}}));
  for (std::size_t i = 0; i < p.points().size(); ++i) EXPECT_EQ(p.points()[i].index, i);
}

TEST(SweepExpand, ZipPairsTheIthValues) {
  Fixture f;
  auto p = f.plan(std::string(kBase) +
                  "  combine: zip\n"
                  "  parameters:\n"
                  "    - {key: fabric.queue_depth, values: [1, 2, 4]}\n"
                  "    - {key: fabric.colors, values: [8, 16, 24]}\n");
  EXPECT_EQ(table(p), (Rows{{"1", "8"}, {"2", "16"}, {"4", "24"}}));
}

TEST(SweepExpand, ZipOfUnequalListsNamesTheShorterList) {
  Fixture f;
  auto e = f.errors(std::string(kBase) +
                    "  combine: zip\n"
                    "  parameters:\n"
                    "    - {key: fabric.queue_depth, values: [1, 2, 4]}\n"
                    "    - {key: fabric.colors, values: [8, 16]}\n");
  EXPECT_NE(e.find(f.dir.path().string() + "/s.yaml:9:13: error: sweep.parameters[1]: zip needs lists of equal length: "
                                           "'fabric.colors' has 2 values, 'fabric.queue_depth' has 3"),
            std::string::npos)
      << e;
}

TEST(SweepExpand, RangesLinearStepLogAndFactor) {
  Fixture f;
  auto p = f.plan(std::string(kBase) +
                  "  combine: zip\n"
                  "  parameters:\n"
                  "    - {key: workload.cycles, range: {from: 1, to: 64, steps: 7, scale: log}}\n"
                  "    - {key: fabric.queue_depth, range: {from: 1, to: 13, step: 2}}\n"
                  "    - {key: fabric.colors, range: {from: 4, to: 16, steps: 7}}\n"
                  "    - {key: workload.max-wall, range: {from: 0.1, to: 0.7, steps: 7}}\n");
  EXPECT_EQ(column(p, 0), (Col{"1", "2", "4", "8", "16", "32", "64"}));
  EXPECT_EQ(column(p, 1), (Col{"1", "3", "5", "7", "9", "11", "13"}));
  EXPECT_EQ(column(p, 2), (Col{"4", "6", "8", "10", "12", "14", "16"}));
  EXPECT_EQ(column(p, 3), (Col{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"}));
}

TEST(SweepExpand, FactorRangeAndIntegerRoundingKeepsEachValueOnce) {
  Fixture f;
  auto p = f.plan(std::string(kBase) +
                  "  parameters:\n"
                  "    - {key: fabric.queue_depth, range: {from: 1, to: 8, steps: 6, scale: log}}\n"
                  "    - {key: workload.cycles, range: {from: 10, to: 1000, factor: 10}}\n");
  // 1, 1.516, 2.297, 3.482, 5.278, 8 rounded: 2 would appear twice.
  EXPECT_EQ(table(p), (Rows{{"1", "10"},
                            {"1", "100"},
                            {"1", "1000"},
                            {"2", "10"},
                            {"2", "100"},
                            {"2", "1000"},
                            {"3", "10"},
                            {"3", "100"},
                            {"3", "1000"},
                            {"5", "10"},
                            {"5", "100"},
                            {"5", "1000"},
                            {"8", "10"},
                            {"8", "100"},
                            {"8", "1000"}}));
}

TEST(SweepExpand, QuantityRangesKeepTheirUnit) {
  Fixture f;
  auto p = f.plan(std::string(kBase) +
                  "  combine: zip\n"
                  "  parameters:\n"
                  "    - {key: wafer.clock, range: {from: 1 GHz, to: 2 GHz, steps: 3}}\n"
                  "    - {key: wafer.pe.sram.size, range: {from: 16 KiB, to: 64 KiB, factor: 2}}\n"
                  "    - {key: fabric.hop_latency, values: [1, 2, 4], unit: cycles}\n");
  EXPECT_EQ(column(p, 0), (Col{"1 GHz", "1.5 GHz", "2 GHz"}));
  EXPECT_EQ(column(p, 1), (Col{"16 KiB", "32 KiB", "64 KiB"}));
  EXPECT_EQ(column(p, 2), (Col{"1", "2", "4"}));  // shown without the unit, passed with it
  const auto& args = p.points()[1].args;
  EXPECT_EQ(args, (std::vector<std::string>{"run", "tiny", "--set", "wafer.clock=1.5 GHz", "--set",
                                            "wafer.pe.sram.size=32 KiB", "--set", "fabric.hop_latency=2 cycles",
                                            "--cycles", "100", "--seed", "1", "--json"}));
}

TEST(SweepExpand, RandomSamplingIsSeededAndStaysInRange) {
  Fixture f;
  const std::string body = std::string(kBase) +
                           "  combine: random\n"
                           "  samples: 200\n"
                           "  seed: SEED\n"
                           "  parameters:\n"
                           "    - {key: fabric.queue_depth, range: {from: 1, to: 4}}\n"
                           "    - {key: wafer.clock, range: {from: 500 MHz, to: 1 GHz}}\n"
                           "    - {key: fabric.colors, values: [8, 16, 24]}\n";
  auto with_seed = [&](const char* s) {
    std::string b = body;
    b.replace(b.find("SEED"), 4, s);
    return f.plan(b);
  };
  auto a = with_seed("11"), b = with_seed("11"), c = with_seed("12");
  EXPECT_EQ(a.points().size(), 200u);
  EXPECT_EQ(table(a), table(b));
  EXPECT_NE(table(a), table(c));
  std::map<std::string, int> depth, colors;
  for (const auto& row : table(a)) {
    ++depth[row[0]];
    ++colors[row[2]];
    auto clock = interpret(row[1]);
    ASSERT_EQ(clock.kind, Scalar::Kind::Number) << row[1];
    EXPECT_GE(clock.number, 500e6);
    EXPECT_LE(clock.number, 1e9);
  }
  // Every whole number of the integer range, every listed value, and nothing else.
  EXPECT_EQ(depth.size(), 4u);
  for (const char* d : {"1", "2", "3", "4"}) EXPECT_GT(depth[d], 25) << d;
  EXPECT_EQ(colors.size(), 3u);
  for (const char* v : {"8", "16", "24"}) EXPECT_GT(colors[v], 40) << v;
}

TEST(SweepExpand, LatinHypercubeUsesEachStratumOnce) {
  Fixture f;
  auto p = f.plan(std::string(kBase) +
                  "  combine: latin-hypercube\n"
                  "  samples: 20\n"
                  "  seed: 3\n"
                  "  parameters:\n"
                  "    - {key: workload.max-wall, range: {from: 0.0, to: 1.0}}\n"
                  "    - {key: wafer.clock, range: {from: 1 GHz, to: 2 GHz}}\n"
                  "    - {key: fabric.colors, values: [4, 8, 12, 16]}\n");
  ASSERT_EQ(p.points().size(), 20u);
  std::set<int> strata_a, strata_b;
  std::map<std::string, int> colors;
  for (const auto& row : table(p)) {
    strata_a.insert(static_cast<int>(std::floor(std::stod(row[0]) * 20)));
    strata_b.insert(static_cast<int>(std::floor((interpret(row[1]).number - 1e9) / 1e9 * 20)));
    ++colors[row[2]];
  }
  EXPECT_EQ(strata_a.size(), 20u);
  EXPECT_EQ(*strata_a.begin(), 0);
  EXPECT_EQ(*strata_a.rbegin(), 19);
  EXPECT_EQ(strata_b.size(), 20u);
  // 20 strata over a list of 4: each value exactly 5 times.
  EXPECT_EQ(colors, (std::map<std::string, int>{{"12", 5}, {"16", 5}, {"4", 5}, {"8", 5}}));
}

TEST(SweepExpand, ConstraintSkipsPointsAndNumbersTheRest) {
  Fixture f;
  auto p = f.plan(std::string(kBase) +
                  "  parameters:\n"
                  "    - {key: fabric.queue_depth, values: [1, 2, 4, 8]}\n"
                  "    - {key: fabric.hop_latency, values: [1, 2, 4, 8], unit: cycles}\n"
                  "  constraints:\n"
                  "    - fabric.queue_depth * fabric.hop_latency <= 8\n"
                  "    - \"fabric.queue_depth != 2 || fabric.hop_latency > 1 cycle\"\n");
  EXPECT_EQ(p.candidates(), 16u);
  EXPECT_EQ(p.skipped(), 7u);
  EXPECT_EQ(
      table(p),
      (Rows{
          {"1", "1"}, {"1", "2"}, {"1", "4"}, {"1", "8"}, {"2", "2"}, {"2", "4"}, {"4", "1"}, {"4", "2"}, {"8", "1"}}));
  for (std::size_t i = 0; i < p.points().size(); ++i) EXPECT_EQ(p.points()[i].index, i);
}

TEST(SweepExpand, ConstraintsOnFixedValuesAndStrings) {
  Fixture f;
  auto p = f.plan(
      "  platform: tiny\n"
      "  set: {swarmx.fanout: '1:4'}\n"
      "  workload: {command: run, cycles: 100}\n"
      "  parameters:\n"
      "    - {key: workload.no-idle-skip, values: [true, false]}\n"
      "    - {key: workload.cycles, values: [10, 20]}\n"
      "  constraints:\n"
      "    - \"swarmx.fanout == '1:4' && (workload.no_idle_skip || workload.cycles > 10)\"\n");
  EXPECT_EQ(table(p), (Rows{{"true", "10"}, {"true", "20"}, {"false", "20"}}));
  EXPECT_EQ(p.points()[0].args, (std::vector<std::string>{"run", "tiny", "--set", "swarmx.fanout=\"1:4\"", "--cycles",
                                                          "10", "--no-idle-skip", "--seed", "1", "--json"}));
  EXPECT_EQ(p.points()[2].args, (std::vector<std::string>{"run", "tiny", "--set", "swarmx.fanout=\"1:4\"", "--cycles",
                                                          "20", "--seed", "1", "--json"}));
}

TEST(SweepExpand, ConstraintRejectingEverythingIsAnError) {
  Fixture f;
  auto e = f.errors(std::string(kBase) +
                    "  parameters:\n"
                    "    - {key: fabric.queue_depth, values: [1, 2]}\n"
                    "  constraints: [fabric.queue_depth > 2]\n");
  EXPECT_NE(e.find("no points to run: all 2 combinations are rejected by the constraints"), std::string::npos) << e;
}

TEST(SweepExpression, PrecedenceFunctionsAndQuantities) {
  auto eval = [](const std::string& text, std::map<std::string, Scalar> vars = {}) {
    auto e = Expression::parse(text, Location{"c", 1, 1}, "c");
    return e.evaluate([&](const std::string& n) { return vars.at(n); });
  };
  EXPECT_TRUE(eval("1 + 2 * 3 == 7"));
  EXPECT_TRUE(eval("(1 + 2) * 3 == 9"));
  EXPECT_TRUE(eval("!(1 > 2) && 7 % 4 == 3"));
  EXPECT_TRUE(eval("-2 * -3 == 6 && 10 - 2 - 3 == 5 && 16 / 4 / 2 == 2"));
  EXPECT_TRUE(eval("min(3, 4) == 3 && max(3, 4) == 4 && abs(-2) == 2 && log2(64) == 6"));
  EXPECT_TRUE(eval("1.1 GHz > 1000 MHz && 48 KiB == 49152 B && 2 cycles < 3"));
  EXPECT_TRUE(eval("'a' < 'b' && \"x\" == 'x'"));
  EXPECT_TRUE(eval("a.b-c == 4", {{"a.b_c", Scalar::of_number(4)}}));
  EXPECT_FALSE(eval("x > 3 || false", {{"x", Scalar::of_number(3)}}));
  // && and || do not evaluate their right side when the left decides.
  EXPECT_TRUE(eval("true || 1 / 0 > 1"));
}

TEST(SweepExpression, ErrorsPointAtTheColumn) {
  auto error = [](const std::string& text) -> std::string {
    try {
      auto e = Expression::parse(text, Location{"f.yaml", 3, 7}, "sweep.constraints[0]");
      (void)e.evaluate([](const std::string&) { return Scalar::of_string("s"); });
    } catch (const ConfigError& err) {
      return err.what();
    }
    return "no error";
  };
  EXPECT_EQ(error("a <= "),
            "f.yaml:3:12: error: sweep.constraints[0]: in 'a <= ': expected a value, found the end of the expression");
  EXPECT_EQ(error("a = 1"),
            "f.yaml:3:9: error: sweep.constraints[0]: in 'a = 1': unexpected '='; write '==' to compare");
  EXPECT_EQ(error("a > 1 and b"),
            "f.yaml:3:13: error: sweep.constraints[0]: in 'a > 1 and b': unexpected 'a'; write '&&' for 'and'");
  EXPECT_EQ(error("mn(a, 1)"),
            "f.yaml:3:7: error: sweep.constraints[0]: in 'mn(a, 1)': unknown function 'mn'; did you mean 'min'?");
  EXPECT_EQ(error("a > 1"),
            "f.yaml:3:9: error: sweep.constraints[0]: in 'a > 1': cannot order a string ('s') and a number (1)");
  EXPECT_EQ(
      error("2 + 3"),
      "f.yaml:3:9: error: sweep.constraints[0]: in '2 + 3': a constraint must be true or false, this is a number (5)");
  EXPECT_EQ(error("1 / (2 - 2) > 0"),
            "f.yaml:3:9: error: sweep.constraints[0]: in '1 / (2 - 2) > 0': division by zero (1 / 0)");
  EXPECT_EQ(error("3 GHzz > 1"),
            "f.yaml:3:9: error: sweep.constraints[0]: in '3 GHzz > 1': unknown unit 'GHzz' (expected e.g. '1.1 GHz', "
            "'48 KiB', '100 Gb/s', '3 us', '2 cycles')");
}

TEST(SweepSpec, EveryProblemIsReportedAtItsPlace) {
  Fixture f;
  auto e = f.errors(
      "  platform: tiny\n"
      "  workload:\n"
      "    command: run\n"
      "    cylces: 100\n"
      "    no-idle-skip: maybe\n"
      "  parameters:\n"
      "    - key: fabric.queue_dept\n"
      "      values: [1]\n"
      "    - key: workload.seeds\n"
      "      values: [1]\n"
      "    - key: fabric.colors\n"
      "      range: {from: 1, to: 4}\n"
      "  combin: grid\n"
      "  constraints: [fabric.colours > 1]\n"
      "  metrics: [a..b]\n");
  const std::string file = f.dir.path().string() + "/s.yaml";
  for (const std::string& want : {
           file + ":5:5: error: sweep.workload.cylces: 'run' has no option 'cylces'; did you mean 'cycles'?",
           file + ":6:19: error: sweep.workload.no-idle-skip: 'no-idle-skip' is a flag: expected true or false, found "
                  "'maybe'",
           file + ":8:12: error: sweep.parameters[0].key: not a platform key; did you mean 'fabric.queue_depth'?",
           file + ":10:12: error: sweep.parameters[1].key: 'run' has no option 'seeds'; did you mean 'workload.seed'?",
           file + ":14:3: error: sweep.combin: unknown key; did you mean 'combine'?",
           file + ":13:14: error: sweep.parameters[2].range: grid needs a list of values: give 'steps', 'step' or "
                  "'factor' (continuous ranges are for random and latin-hypercube sampling)",
           file +
               ":15:17: error: sweep.constraints[0]: 'fabric.colours' is neither a swept parameter nor a fixed value; "
               "did you mean 'fabric.colors'?",
           file + ":16:13: error: sweep.metrics[0]: expected a dotted stat path such as 'cluster.wafer0.cycles' or "
                  "'summary.wall_seconds', found 'a..b'",
       })
    EXPECT_NE(e.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << e;
}

TEST(SweepSpec, UnknownCommandPlatformAndMissingSamples) {
  Fixture f;
  auto e = f.errors(
      "  platform: tiyn\n"
      "  workload: {command: traffik}\n"
      "  combine: random\n"
      "  parameters: [{key: fabric.colors, values: [1]}]\n");
  EXPECT_NE(e.find(":2:13: error: sweep.platform: 'tiyn' is neither a file (relative to the sweep file) nor a preset"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("did you mean 'tiny'?"), std::string::npos) << e;
  EXPECT_NE(
      e.find(":3:23: error: sweep.workload.command: 'traffik' is not a command a sweep can run; expected one of: run"),
      std::string::npos)
      << e;
  EXPECT_NE(e.find("sweep.samples: missing: how many points random sampling draws"), std::string::npos) << e;
}

TEST(SweepSpec, AnEmptyParameterListIsAnError) {
  Fixture f;
  auto e = f.errors(std::string(kBase) + "  parameters: []\n");
  EXPECT_NE(e.find("/s.yaml:6:15: error: sweep.parameters: the list is empty: name at least one parameter"),
            std::string::npos)
      << e;
}

TEST(SweepSpec, PlatformFilesAreFoundBesideTheSweepFile) {
  Fixture f;
  f.dir.write("plat/mine.yaml", "base: tiny\nname: mine\n");
  auto p = f.plan(
      "  platform: plat/mine.yaml\n"
      "  workload: {command: run}\n"
      "  parameters: [{key: fabric.colors, values: [2]}]\n");
  EXPECT_EQ(p.points()[0].args[1], (f.dir.path() / "plat/mine.yaml").string());
}

TEST(SweepPlan, BadValuesAreReportedAtTheValueWithThePoint) {
  Fixture f;
  auto e = f.errors(std::string(kBase) +
                    "  parameters:\n"
                    "    - {key: fabric.queue_depth, values: [2, 0]}\n"
                    "    - {key: fabric.hop_latency, values: [1]}\n");
  const std::string file = f.dir.path().string() + "/s.yaml";
  EXPECT_NE(e.find(file + ":7:45: error: fabric.queue_depth: expected an integer in 1 .. 4096, found 0 (point 1: "
                          "fabric.queue_depth=0, fabric.hop_latency=1)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(file + ":8:42: error: fabric.hop_latency: expected a cycle count with a unit such as '2 cycles', "
                          "found bare number '1' (point 0:"),
            std::string::npos)
      << e;
}

TEST(SweepPlan, WorkloadOptionsAreCheckedByTheCommandsOwnParser) {
  Fixture f;
  auto e = f.errors(
      "  platform: tiny\n"
      "  workload: {command: run, cycles: lots}\n"
      "  parameters: [{key: fabric.colors, values: [2]}]\n");
  EXPECT_NE(e.find(":3:36: error: sweep.workload: 'run' rejects its command line: Could not convert: --cycles = lots"),
            std::string::npos)
      << e;
}

TEST(SweepPlan, SeedIsSweepableAndQuotedValuesStayStrings) {
  Fixture f;
  auto p = f.plan(
      "  platform: tiny\n"
      "  workload: {command: run, seed: 5}\n"
      "  parameters:\n"
      "    - {key: workload.seed, values: [7, 8]}\n"
      "    - {key: name, values: ['a b: c']}\n");
  EXPECT_EQ(p.points()[1].args,
            (std::vector<std::string>{"run", "tiny", "--set", "name=\"a b: c\"", "--seed", "8", "--json"}));
}

TEST(SweepPlan, FingerprintFollowsTheCommandLinesOnly) {
  Fixture f;
  auto fp = [&](const std::string& values, const std::string& metrics) {
    return f.plan(std::string(kBase) + "  parameters: [{key: fabric.colors, values: " + values + "}]\n" + metrics)
        .fingerprint();
  };
  EXPECT_EQ(fp("[1, 2]", ""), fp("[1, 2]", "  metrics: [x.y]\n  timeout: 3 s\n"));
  EXPECT_NE(fp("[1, 2]", ""), fp("[1, 3]", ""));
  EXPECT_NE(fp("[1, 2]", ""), fp("[2, 1]", ""));
}

TEST(SweepLaunch, SlurmArraySpecAndScript) {
  EXPECT_EQ(array_spec({0, 1, 2, 3, 7, 9, 10, 11, 12}, 4), "0-3,7,9-12%4");
  EXPECT_EQ(array_spec({5}, 0), "5");
  Fixture f;
  auto p = f.plan(std::string(kBase) + "  name: demo\n  parameters: [{key: fabric.colors, values: [1, 2, 3]}]\n");
  SweepDir dir(f.dir.path() / "out");
  LaunchOptions lo;
  lo.spec_path = "/abs/s.yaml";
  SlurmOptions so;
  so.partition = "batch";
  so.time = "10:00";
  so.mem = "2G";
  so.extra = {"--account=arch"};
  std::string s = sbatch_script(p, dir, {0, 2}, lo, so, "/bin/wafersim");
  for (const std::string& line : std::vector<std::string>{
           "#SBATCH --job-name=wafersim-demo\n", "#SBATCH --array=0,2\n", "#SBATCH --partition=batch\n",
           "#SBATCH --time=10:00\n", "#SBATCH --mem=2G\n", "#SBATCH --account=arch\n",
           "#SBATCH --output=" + (f.dir.path() / "out/slurm").string() + "/%A_%a.out\n",
           "exec '/bin/wafersim' 'sweep' '/abs/s.yaml' '--point' \"$SLURM_ARRAY_TASK_ID\" '--out' '" +
               (f.dir.path() / "out").string() + "'\n"})
    EXPECT_NE(s.find(line), std::string::npos) << line << "\nin:\n" << s;
}

TEST(SweepLaunch, ParallelCommandLine) {
  Fixture f;
  auto p = f.plan(std::string(kBase) + "  parameters: [{key: fabric.colors, values: [1, 2]}]\n");
  SweepDir dir("/d");
  LaunchOptions lo;
  lo.spec_path = "/abs/s.yaml";
  lo.jobs = 3;
  ParallelOptions po;
  po.sshloginfile = "hosts";
  EXPECT_EQ(parallel_command(p, dir, lo, po, "/bin/wafersim"), (std::vector<std::string>{"parallel",
                                                                                         "--joblog",
                                                                                         "/d/parallel/joblog",
                                                                                         "--resume",
                                                                                         "--jobs",
                                                                                         "3",
                                                                                         "--halt",
                                                                                         "never",
                                                                                         "--quote",
                                                                                         "--arg-file",
                                                                                         "/d/parallel/points",
                                                                                         "--sshloginfile",
                                                                                         "hosts",
                                                                                         "/bin/wafersim",
                                                                                         "sweep",
                                                                                         "/abs/s.yaml",
                                                                                         "--point",
                                                                                         "{}",
                                                                                         "--out",
                                                                                         "/d"}));
  lo.retry_failed = true;
  auto retry = parallel_command(p, dir, lo, {}, "/bin/wafersim");
  EXPECT_EQ(retry[3], "--resume-failed");
  EXPECT_EQ(retry.back(), "--retry-failed");
}

TEST(SweepCollect, CsvFieldsAreQuotedAsRfc4180) {
  EXPECT_EQ(csv_field(nlohmann::json(3)), "3");
  EXPECT_EQ(csv_field(nlohmann::json(0.25)), "0.25");
  EXPECT_EQ(csv_field(nlohmann::json(nullptr)), "");
  EXPECT_EQ(csv_field(nlohmann::json("2 cycles")), "2 cycles");
  EXPECT_EQ(csv_field(nlohmann::json("a,\"b\"")), "\"a,\"\"b\"\"\"");
  EXPECT_EQ(csv_field(nlohmann::json::array({1, 2})), "\"[1,2]\"");
}

TEST(SweepPoint, TailOfFileKeepsTheLastLines) {
  wafersim::test::TempDir d;
  std::string text;
  for (int i = 1; i <= 30; ++i) text += "line " + std::to_string(i) + "\n";
  auto path = d.write("err.txt", text);
  EXPECT_EQ(tail_of_file(path, 3), "line 28\nline 29\nline 30");
  EXPECT_EQ(tail_of_file(path, 3, 12), "line 30");  // the byte limit cuts into line 29: dropped
  EXPECT_EQ(tail_of_file(d.write("one.txt", "only"), 5), "only");
  EXPECT_EQ(tail_of_file((d.path() / "none").string()), "");
}

}  // namespace
}  // namespace sweep_spec_test
