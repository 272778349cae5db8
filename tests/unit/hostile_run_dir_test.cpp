// A run folder is the run's own (docs/reliability.md): --out refuses a non-empty folder unless
// --force, which removes only wafersim's files; `report` checks a trace's run id and every
// field of trace/meta.json, so that a corrupted folder is exit 2 with the key, never a crash;
// outputs that cannot be written are exit 3 naming the file; SIGINT and SIGTERM stop a run
// with 130 and 143 and say so in run.json, a mesh run's within a step.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::hostile_run_dir_test {
namespace {

using test::slurp;
using test::wafersim;
namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const char* kTraced = "traffic tiny --pattern uniform --rate 0.05 --warmup 0 --measure 300 --trace windows --json ";

// A traced run in `dir`; meta.json edited by `edit`; the report's exit code and message.
test::CommandResult report_after(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  EXPECT_EQ(wafersim(std::string(kTraced) + "-o " + dir.string()).code, 0);
  auto meta = nlohmann::json::parse(slurp(dir / "trace/meta.json"));
  edit(meta);
  std::ofstream(dir / "trace/meta.json") << meta.dump();
  return wafersim("report " + dir.string(), true);
}

TEST(HostileRunDir, ANonEmptyOutFolderIsRefusedWithoutForce) {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  ASSERT_EQ(wafersim(std::string(kTraced) + "-o " + dir.string()).code, 0);
  const auto again = wafersim("run tiny --cycles 10 -o " + dir.string(), true);
  EXPECT_EQ(again.code, 2);
  EXPECT_TRUE(has(again.out, "--out " + dir.string() +
                                 ": the folder is not empty (it holds config.yaml, rerun.json, "
                                 "run.json and 4 more); give --force"))
      << again.out;
  std::ofstream(dir / "notes.txt") << "mine";
  const auto forced = wafersim("run tiny --cycles 10 --force -o " + dir.string(), true);
  EXPECT_EQ(forced.code, 0) << forced.out;
  EXPECT_FALSE(fs::exists(dir / "trace")) << "the first run's trace is gone";
  EXPECT_EQ(slurp(dir / "notes.txt"), "mine");
  const auto report = wafersim("report " + dir.string(), true);
  EXPECT_EQ(report.code, 2);
  EXPECT_TRUE(has(report.out, "no trace in this run folder")) << report.out;
  // The default folder is a new one each time, never refused.
  const std::string in_tmp = "--version >/dev/null; cd " + tmp.path().string() + " && " + WAFERSIM_BINARY;
  EXPECT_EQ(wafersim(in_tmp + " run tiny --cycles 10 --json").code, 0);
  EXPECT_EQ(wafersim(in_tmp + " run tiny --cycles 10 --json").code, 0);
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path() / "wafersim-out"), fs::directory_iterator()), 2);
}

// A mesh-placement run writes mesh.json beside the usual files; --force replaces all of them.
TEST(HostileRunDir, AMeshRunHonoursForceAndReplacesItsOwnFiles) {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "mesh";
  const std::string cmd = std::string("infer tiny --model ") + WAFERSIM_SOURCE_DIR +
                          "/examples/models/tiny-llama.yaml --placement mesh --timing-only --json -o " + dir.string();
  ASSERT_EQ(wafersim(cmd).code, 0);
  ASSERT_TRUE(fs::exists(dir / "mesh.json"));
  std::ofstream(dir / "mesh.json") << "stale";
  EXPECT_EQ(wafersim(cmd, true).code, 2);
  const auto forced = wafersim(cmd + " --force", true);
  EXPECT_EQ(forced.code, 0) << forced.out;
  EXPECT_TRUE(nlohmann::json::parse(slurp(dir / "mesh.json")).contains("runs"));
}

TEST(HostileRunDir, ReportRefusesATraceFromAnotherRun) {
  test::TempDir tmp;
  ASSERT_EQ(wafersim(std::string(kTraced) + "-o " + (tmp.path() / "a").string()).code, 0);
  ASSERT_EQ(wafersim("run tiny --cycles 10 -o " + (tmp.path() / "b").string()).code, 0);
  fs::copy(tmp.path() / "a/trace", tmp.path() / "b/trace");
  const auto r = wafersim("report " + (tmp.path() / "b").string(), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.out, "trace/meta.json: run_id: this trace was written by another run")) << r.out;
}

TEST(HostileRunDir, ReportChecksEveryFieldOfTheTraceDescription) {
  test::TempDir tmp;
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* message;
  };
  const std::vector<Case> cases{
      {"windows", [](auto& m) { m["windows"] = -5; }, "windows: expected a whole number in 0 .. 1048576, found -5"},
      {"region_size", [](auto& m) { m["fabric"][0]["region_size"] = 0; },
       "fabric[0].region_size: expected a whole number in 1 .. 65536, found 0"},
      {"cols", [](auto& m) { m["fabric"][0]["cols"] = 0; }, "fabric[0].cols: expected a whole number in 1 .."},
      {"rows", [](auto& m) { m["fabric"][0]["rows"] = 0; }, "fabric[0].rows: expected a whole number in 1 .."},
      {"cols large", [](auto& m) { m["fabric"][0]["cols"] = 100000; }, "do not cover the area"},
      {"file", [](auto& m) { m["tables"]["fabric-w0"]["file"] = "/etc/passwd"; },
       "tables.fabric-w0.file: '/etc/passwd' is not a file name inside the trace folder"},
      {"file up", [](auto& m) { m["tables"]["fabric-w0"]["file"] = "../run.json"; },
       "'../run.json' is not a file name inside the trace folder"},
      {"links", [](auto& m) { m["fabric"][0]["links"] = nlohmann::json::array(); },
       "fabric[0].links: expected a list of"},
      {"area",
       [](auto& m) {
         m["fabric"][0]["area"] = {0, 0, 99, 0};
       },
       "is not a rectangle inside the"},
      {"clock", [](auto& m) { m["clock_hz"] = "fast"; }, "clock_hz: expected a clock frequency in Hz"},
      {"format", [](auto& m) { m["format"] = 7; }, "format: expected a string, found number"},
  };
  int n = 0;
  for (const auto& c : cases) {
    const auto r = report_after(tmp.path() / std::to_string(n++), c.edit);
    EXPECT_EQ(r.code, 2) << c.what << "\n" << r.out;
    EXPECT_TRUE(has(r.out, c.message)) << c.what << "\n" << r.out;
  }
}

TEST(HostileRunDir, OutputsThatCannotBeWrittenAreExitThreeAndLeaveNoTemporaryFile) {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  ASSERT_EQ(wafersim(std::string(kTraced) + "-o " + dir.string()).code, 0);
  const auto full = wafersim("report " + dir.string() + " -o /dev/full", true);
  EXPECT_EQ(full.code, 3) << full.out;
  EXPECT_TRUE(has(full.out, "cannot write /dev/full: No space left on device")) << full.out;
  const auto missing = wafersim("report " + dir.string() + " -o " + (tmp.path() / "no/such/r.html").string(), true);
  EXPECT_EQ(missing.code, 3) << missing.out;
  EXPECT_TRUE(has(missing.out, "no/such/r.html: No such file or directory")) << missing.out;
  for (const auto& e : fs::recursive_directory_iterator(tmp.path()))
    EXPECT_FALSE(has(e.path().filename().string(), ".tmp.")) << e.path();
}

TEST(HostileRunDir, CollectFailsOnWriteErrorsAndSuggestsAMetric) {
  test::TempDir tmp;
  const std::string spec =
      tmp.write("s.yaml",
                "sweep:\n  name: s\n  platform: tiny\n  workload:\n    command: run\n    cycles: 10\n  parameters:\n"
                "    - {key: fabric.queue_depth, values: [2, 4]}\n  metrics:\n"
                "    - {name: c, path: cluster.wafer0.cyclez}\n");
  const std::string out = (tmp.path() / "sw").string();
  ASSERT_EQ(wafersim("sweep " + spec + " --jobs 1 -o " + out).code, 0);
  const auto full = wafersim("collect " + out + " --csv /dev/full", true);
  EXPECT_EQ(full.code, 3) << full.out;
  EXPECT_TRUE(has(full.out, "cannot write /dev/full: No space left on device")) << full.out;
  const auto ok = wafersim("collect " + out, true);
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_TRUE(
      has(ok.out,
          "warning: no point has the metric cluster.wafer0.cyclez: not found; did you mean 'cluster.wafer0.cycles'?"))
      << ok.out;
}

// `run` (a whole command line) started in the background and sent `signal` (INT, TERM) once
// its run folder `dir` exists plus `after` seconds: the handlers are installed before the
// folder is made, and a loaded machine can take over a second to get there.
test::CommandResult interrupt_started(const std::string& run, const fs::path& dir, const std::string& signal,
                                      const char* after) {
  return wafersim("--version >/dev/null; " + run + " 2>&1 & p=$!; for i in $(seq 1200); do [ -d " + dir.string() +
                      " ] && break; sleep 0.05; done; sleep " + after + "; kill -s " + signal + " $p; wait $p",
                  true);
}

TEST(HostileRunDir, SignalsStopARunAndRunJsonSaysSo) {
  test::TempDir tmp;
  for (const auto& [signal, code] : {std::pair<const char*, int>{"INT", 130}, {"TERM", 143}}) {
    const fs::path dir = tmp.path() / signal;
    const auto r = interrupt_started(
        std::string(WAFERSIM_BINARY) + " traffic tiny --rate 0.1 --warmup 0 --measure 4000000000 -o " + dir.string(),
        dir, signal, "0.3");
    EXPECT_EQ(r.code, code) << r.out;
    EXPECT_TRUE(has(r.out, std::string("wafersim: interrupted by SIG") + signal + " at cycle")) << r.out;
    const auto run = nlohmann::json::parse(slurp(dir / "run.json"));
    EXPECT_TRUE(has(run["status"].get<std::string>(), std::string("interrupted by SIG") + signal)) << run.dump();
  }
}

// A mesh run simulates each step to its end in one go; a signal stops it within the step (a
// step of a whole wafer can take an hour), not after it.
TEST(HostileRunDir, SignalsStopAMeshRunWithinAStep) {
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "mesh";
  const std::string run = std::string(WAFERSIM_BINARY) + " infer tiny --model " + WAFERSIM_SOURCE_DIR +
                          "/examples/models/tiny-llama.yaml --model-set sequence=64 --set wafer.width=64"
                          " --set wafer.height=64 --placement mesh --timing-only --prefill 60 --mesh-region 64x64"
                          " --mesh-gemm-steps all -o " +
                          dir.string();
  const auto r = interrupt_started(run, dir, "TERM", "1");
  EXPECT_EQ(r.code, 143) << r.out;
  EXPECT_TRUE(has(r.out, "wafersim: interrupted by SIGTERM at cycle")) << r.out;
  EXPECT_TRUE(has(r.out, "(step 'prefill.")) << r.out;
  const auto json = nlohmann::json::parse(slurp(dir / "run.json"));
  EXPECT_TRUE(has(json["status"].get<std::string>(), "interrupted by SIGTERM")) << json.dump();
}

}  // namespace
}  // namespace wafersim::hostile_run_dir_test
