// `wafersim sweep` and `wafersim collect` end to end with the local process pool: every point
// recorded, failing, crashing and timed-out points beside passing ones, resuming after the
// sweep is killed with SIGKILL, the --point entry point, and the examples in sweeps/.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "sim/app/cli.h"
#include "sim/app/sweep/sweep_dir.h"
#include "sim/config/diagnostics.h"
#include "sim/config/loader.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace sweep_run_test {
namespace {
using wafersim::test::slurp;
using wafersim::test::wafersim;
namespace fs = std::filesystem;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, ',');) out.push_back(f);
  return out;
}

std::string script(const wafersim::test::TempDir& dir, const std::string& name, const std::string& body) {
  auto path = dir.write(name, "#!/bin/sh\n" + body);
  chmod(path.c_str(), 0755);
  return path;
}

TEST(SweepRun, LocalSweepRecordsEveryPointAndCollects) {
  wafersim::test::TempDir d;
  auto spec = d.write("s.yaml",
                      "sweep:\n"
                      "  name: grid\n"
                      "  platform: tiny\n"
                      "  workload: {command: run}\n"
                      "  parameters:\n"
                      "    - {key: fabric.queue_depth, values: [1, 2]}\n"
                      "    - {key: workload.cycles, values: [100, 250]}\n"
                      "  metrics: [cluster.wafer0.cycles, {name: pes, path: summary.pe_count}]\n");
  auto out = d.path() / "out";
  auto r = wafersim("sweep " + spec + " --out " + out.string() + " --jobs 2 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["points"], 4);
  EXPECT_EQ(summary["ok"], 4);
  EXPECT_EQ(summary["failed"], 0);
  EXPECT_EQ(summary["finished_before"], 0);

  auto csv = lines(slurp(out / "results.csv"));
  ASSERT_EQ(csv.size(), 5u);
  EXPECT_EQ(csv[0], "index,fabric.queue_depth,workload.cycles,status,exit_code,wall_seconds,cluster.wafer0.cycles,pes");
  const char* expect[4][3] = {{"1", "100", "100"}, {"1", "250", "250"}, {"2", "100", "100"}, {"2", "250", "250"}};
  for (int i = 0; i < 4; ++i) {
    auto f = split(csv[static_cast<std::size_t>(i) + 1]);
    ASSERT_EQ(f.size(), 8u) << csv[static_cast<std::size_t>(i) + 1];
    EXPECT_EQ(f[0], std::to_string(i));
    EXPECT_EQ(f[1], expect[i][0]);
    EXPECT_EQ(f[2], expect[i][1]);
    EXPECT_EQ(f[3], "ok");
    EXPECT_EQ(f[4], "0");
    EXPECT_GT(std::stod(f[5]), 0.0);
    EXPECT_EQ(f[6], expect[i][2]);
    EXPECT_EQ(f[7], "64");
  }
  auto jsonl = lines(slurp(out / "results.jsonl"));
  ASSERT_EQ(jsonl.size(), 4u);
  auto row = nlohmann::json::parse(jsonl[3]);
  EXPECT_EQ(row["params"]["fabric.queue_depth"], 2);
  EXPECT_EQ(row["metrics"]["cluster.wafer0.cycles"], 250);

  // Each point folder is a complete run folder: the same statistics as running it by hand.
  auto p3 = out / "points" / "00003";
  for (const char* f : {"config.yaml", "stats.json", "run.json", "point.json", "status.json", "stdout.txt", "done"})
    EXPECT_TRUE(fs::exists(p3 / f)) << f;
  EXPECT_EQ(slurp(p3 / "done"), "ok\n");
  EXPECT_NE(slurp(p3 / "config.yaml").find("queue_depth: 2"), std::string::npos);
  auto by_hand = d.path() / "by-hand";
  ASSERT_EQ(wafersim("run tiny --set fabric.queue_depth=2 --cycles 250 --seed 1 --out " + by_hand.string()).code, 0);
  EXPECT_EQ(slurp(p3 / "stats.json"), slurp(by_hand / "stats.json"));

  // A second run finds everything finished and runs nothing.
  auto again = wafersim("sweep " + spec + " --out " + out.string() + " --json");
  ASSERT_EQ(again.code, 0) << again.out;
  auto s2 = nlohmann::json::parse(again.out);
  EXPECT_EQ(s2["finished_before"], 4);
  EXPECT_EQ(s2["ok"], 0);
}

TEST(SweepRun, FailingCrashingAndTimedOutPointsBesidePassingOnes) {
  wafersim::test::TempDir d;
  // The wrapper runs each point; it makes the point with --cycles 3 hang and --cycles 4 crash.
  script(d, "wrap.sh",
         "case \" $* \" in\n"
         "  *\" --cycles 3 \"*) exec sleep 60 ;;\n"
         "  *\" --cycles 4 \"*) echo 'about to crash' >&2; kill -SEGV $$ ;;\n"
         "esac\n"
         "exec \"$@\"\n");
  auto spec = d.write("s.yaml",
                      "sweep:\n"
                      "  platform: tiny\n"
                      "  workload: {command: run, wrapper: ./wrap.sh, max-cycles: 150}\n"
                      "  parameters: [{key: workload.cycles, values: [100, 3, 4, 500, 120]}]\n"
                      "  metrics: [cluster.wafer0.cycles]\n"
                      "  timeout: 2 s\n");  // (10 x a passing point under ASan, alone)
  auto out = d.path() / "out";
  auto r = wafersim("sweep " + spec + " --out " + out.string() + " --jobs 5 --json");
  EXPECT_EQ(r.code, 3) << r.out;
  auto summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["ok"], 2);
  EXPECT_EQ(summary["failed"], 3);
  EXPECT_EQ(summary["failed_points"], nlohmann::json::array({1, 2, 3}));

  auto status = [&](int i) {
    char name[8];
    std::snprintf(name, sizeof name, "%05d", i);
    return nlohmann::json::parse(slurp(out / "points" / name / "status.json"));
  };
  EXPECT_EQ(status(0)["status"], "ok");
  EXPECT_EQ(status(0)["metrics"]["cluster.wafer0.cycles"], 100);
  EXPECT_EQ(status(4)["status"], "ok");
  EXPECT_EQ(status(4)["metrics"]["cluster.wafer0.cycles"], 120);

  auto hung = status(1);
  EXPECT_EQ(hung["status"], "timeout");
  EXPECT_EQ(hung["timed_out"], true);
  EXPECT_EQ(hung["exit_code"], 128 + SIGTERM);
  EXPECT_GE(hung["wall_seconds"].get<double>(), 0.5);
  EXPECT_LT(hung["wall_seconds"].get<double>(), 2.5);

  auto crashed = status(2);
  EXPECT_EQ(crashed["status"], "crashed");
  EXPECT_EQ(crashed["signal"], SIGSEGV);
  EXPECT_EQ(crashed["exit_code"], 128 + SIGSEGV);
  EXPECT_EQ(crashed["stderr_tail"], "about to crash");

  auto limited = status(3);
  EXPECT_EQ(limited["status"], "failed");
  EXPECT_EQ(limited["exit_code"], 4);
  EXPECT_NE(limited["stderr_tail"].get<std::string>().find("--max-cycles 150 reached"), std::string::npos)
      << limited["stderr_tail"];
  EXPECT_TRUE(limited["metrics"]["cluster.wafer0.cycles"].is_null());

  auto csv = lines(slurp(out / "results.csv"));
  ASSERT_EQ(csv.size(), 6u);
  EXPECT_EQ(csv[2].substr(0, csv[2].find(",", 9)), "1,3,timeout");
  EXPECT_EQ(csv[3].substr(0, 17), "2,4,crashed,139,0");
  EXPECT_EQ(csv[4].substr(0, 13), "3,500,failed,");

  // Failed points count as finished: a rerun leaves them, --retry-failed runs them again.
  auto again = nlohmann::json::parse(wafersim("sweep " + spec + " --out " + out.string() + " --json").out);
  EXPECT_EQ(again["finished_before"], 5);
  EXPECT_EQ(again["failed_before"], 3);
  auto retry =
      nlohmann::json::parse(wafersim("sweep " + spec + " --out " + out.string() + " --json --retry-failed").out);
  EXPECT_EQ(retry["finished_before"], 2);
  EXPECT_EQ(retry["failed"], 3);
}

TEST(SweepRun, KilledMidwayLosesNoFinishedPointAndResumes) {
  wafersim::test::TempDir d;
  script(d, "slow.sh", "sleep 0.3\nexec \"$@\"\n");
  auto spec = d.write("s.yaml",
                      "sweep:\n"
                      "  platform: tiny\n"
                      "  workload: {command: run, wrapper: ./slow.sh}\n"
                      "  parameters: [{key: workload.cycles, range: {from: 100, to: 800, step: 100}}]\n"
                      "  metrics: [cluster.wafer0.cycles]\n");
  auto out = d.path() / "out";
  wafersim::app::sweep::SweepDir dir(out);
  auto finished = [&] {
    int n = 0;
    for (std::size_t i = 0; i < 8; ++i) n += fs::exists(dir.point(i) / "done");
    return n;
  };

  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execl(WAFERSIM_BINARY, WAFERSIM_BINARY, "sweep", spec.c_str(), "--out", out.c_str(), "--jobs", "2",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (finished() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  EXPECT_TRUE(WIFSIGNALED(wstatus));
  // The point runners die with the sweep; wait until no point is held.
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto any_running = [&] {
    for (std::size_t i = 0; i < 8; ++i)
      if (dir.state(i).state == wafersim::app::sweep::SweepDir::State::Running) return true;
    return false;
  };
  while (any_running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(any_running());

  // Every point is either finished with a complete record, or not finished at all.
  const int done = finished();
  EXPECT_GE(done, 2);
  EXPECT_LT(done, 8);
  std::map<std::size_t, std::string> records;
  for (std::size_t i = 0; i < 8; ++i) {
    if (!fs::exists(dir.point(i) / "done")) {
      // Unfinished; whatever it holds was written whole (files are renamed into place).
      if (fs::exists(dir.point(i) / "status.json")) {
        EXPECT_TRUE(nlohmann::json::accept(slurp(dir.point(i) / "status.json"))) << i;
      }
      continue;
    }
    EXPECT_EQ(slurp(dir.point(i) / "done"), "ok\n");
    auto st = nlohmann::json::parse(slurp(dir.point(i) / "status.json"));
    EXPECT_EQ(st["status"], "ok");
    EXPECT_EQ(st["metrics"]["cluster.wafer0.cycles"], 100 * (i + 1));
    records[i] = slurp(dir.point(i) / "status.json");
  }

  auto r = wafersim("sweep " + spec + " --out " + out.string() + " --jobs 2 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["finished_before"], done);
  EXPECT_EQ(summary["ok"], 8 - done);
  EXPECT_EQ(finished(), 8);
  for (const auto& [i, text] : records) EXPECT_EQ(slurp(dir.point(i) / "status.json"), text) << "point " << i;
  auto csv = lines(slurp(out / "results.csv"));
  ASSERT_EQ(csv.size(), 9u);
  for (std::size_t i = 1; i <= 8; ++i) {
    auto f = split(csv[i]);
    ASSERT_EQ(f.size(), 6u) << csv[i];
    EXPECT_EQ(f[2], "ok");
    EXPECT_EQ(f[5], std::to_string(100 * i));
  }
}

TEST(SweepRun, PointEntryPointRecordsOnePointAndSkipsItAfterwards) {
  wafersim::test::TempDir d;
  auto spec = d.write("s.yaml",
                      "sweep:\n"
                      "  platform: tiny\n"
                      "  workload: {command: run}\n"
                      "  parameters: [{key: workload.cycles, values: [10, 20, 30]}]\n");
  auto out = d.path() / "out";
  auto r = wafersim("sweep " + spec + " --point 1 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.substr(0, 15), "point 1: ok in ");
  EXPECT_TRUE(fs::exists(out / "points/00001/done"));
  EXPECT_FALSE(fs::exists(out / "points/00000"));
  EXPECT_TRUE(fs::exists(out / "sweep.json"));
  auto again = wafersim("sweep " + spec + " --point 1 --out " + out.string());
  EXPECT_EQ(again.code, 0);
  EXPECT_EQ(again.out, "point 1: finished before (ok); skipped\n");
  auto forced = wafersim("sweep " + spec + " --point 1 --force --out " + out.string());
  EXPECT_EQ(forced.out.substr(0, 15), "point 1: ok in ");

  auto bad = wafersim("sweep " + spec + " --point 3 --out " + out.string(), true);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("--point 3: the sweep has 3 points (0 .. 2)"), std::string::npos) << bad.out;

  // collect shows unfinished points as pending.
  auto c = wafersim("collect " + out.string() + " --json");
  ASSERT_EQ(c.code, 0) << c.out;
  auto cj = nlohmann::json::parse(c.out);
  EXPECT_EQ(cj["ok"], 1);
  EXPECT_EQ(cj["pending"], 2);
  auto csv = lines(slurp(out / "results.csv"));
  ASSERT_EQ(csv.size(), 4u);
  EXPECT_EQ(csv[1], "0,10,pending,,");
  EXPECT_EQ(csv[2].substr(0, 10), "1,20,ok,0,");
  EXPECT_EQ(csv[3], "2,30,pending,,");
}

TEST(SweepRun, AFolderOfAnotherSweepIsRefused) {
  wafersim::test::TempDir d;
  auto body = [](const char* values) {
    return std::string(
               "sweep:\n  platform: tiny\n  workload: {command: run}\n"
               "  parameters: [{key: workload.cycles, values: ") +
           values + "}]\n";
  };
  auto spec = d.write("s.yaml", body("[10, 20]"));
  auto out = d.path() / "out";
  ASSERT_EQ(wafersim("sweep " + spec + " --out " + out.string()).code, 0);
  d.write("s.yaml", body("[10, 30]"));
  auto r = wafersim("sweep " + spec + " --out " + out.string(), true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("holds another sweep"), std::string::npos) << r.out;
  // The same points with other metrics reuse the folder.
  d.write("s.yaml", body("[10, 20]") + "  metrics: [cluster.wafer0.cycles]\n");
  EXPECT_EQ(wafersim("sweep " + spec + " --out " + out.string()).code, 0);
  EXPECT_NE(slurp(out / "results.csv").find("cluster.wafer0.cycles"), std::string::npos);
}

TEST(SweepRun, ListShowsThePointsAfterConstraints) {
  wafersim::test::TempDir d;
  auto spec = d.write("s.yaml",
                      "sweep:\n"
                      "  name: lst\n"
                      "  platform: tiny\n"
                      "  workload: {command: run}\n"
                      "  parameters:\n"
                      "    - {key: fabric.queue_depth, values: [1, 16]}\n"
                      "    - {key: fabric.hop_latency, values: [1, 2], unit: cycles}\n"
                      "  constraints: [fabric.queue_depth * fabric.hop_latency < 32]\n");
  auto r = wafersim("sweep " + spec + " --list");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out,
            "sweep lst: 3 points (4 candidates by grid, 1 skipped by constraints)\n"
            " point  fabric.queue_depth  fabric.hop_latency\n"
            "     0  1                   1\n"
            "     1  1                   2\n"
            "     2  16                  1\n");
}

TEST(SweepRun, HelpExplainsSweepAndCollect) {
  auto r = wafersim("sweep --help");
  EXPECT_EQ(r.code, 0);
  for (const char* word :
       {"--backend", "--point", "--jobs", "--partition", "--sshloginfile", "--retry-failed", "Exit codes"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  auto c = wafersim("collect --help");
  EXPECT_EQ(c.code, 0);
  EXPECT_NE(c.out.find("--csv"), std::string::npos);
  auto top = wafersim("--help");
  EXPECT_NE(top.out.find("sweep"), std::string::npos);
  EXPECT_NE(top.out.find("collect"), std::string::npos);
}

// Every example validates, except those whose command has not landed in the sweep's command
// table yet, which must fail for exactly that reason.
// A workload's file option (a model, a program, routes) names a file beside the sweep file, as
// the platform does; each point compiles and runs the model and checks it against the host.
TEST(SweepRun, FileOptionsAreRelativeToTheSweepFileAndCompiledModelsSweep) {
  wafersim::test::TempDir d;
  d.write("models/m.yaml",
          "name: m\ndtype: bf16\nbatch: 2\nsequence: 8\ninputs: [{name: x, kind: activations, features: 16}]\n"
          "layers:\n  - {name: fc1, kind: linear, inputs: [x], features: 16, bias: true}\n");
  auto spec =
      d.write("sweeps/s.yaml",
              "sweep:\n"
              "  name: compiled\n"
              "  platform: tiny\n"
              "  workload: {command: infer, model: ../models/m.yaml, placement: streaming}\n"
              "  parameters:\n"
              "    - {key: workload.accumulate, values: [fp32, native]}\n"
              "  metrics: [{name: cycles, path: summary.cycles}, {name: mismatches, path: summary.mismatches},\n"
              "            cluster.wafer0.model.000_fc1_forward.bound_cycles]\n");
  auto out = d.path() / "out";
  // Run from elsewhere: the relative path must not depend on the working directory.
  auto r = wafersim("sweep " + spec + " --jobs 1 --json --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto csv = lines(slurp(out / "results.csv"));
  ASSERT_EQ(csv.size(), 3u);
  for (std::size_t i = 1; i < 3; ++i) {
    auto f = split(csv[i]);
    ASSERT_EQ(f.size(), 8u) << csv[i];
    EXPECT_EQ(f[2], "ok");
    EXPECT_EQ(f[6], "0") << "mismatches";
    EXPECT_GT(std::stoull(f[5]), std::stoull(f[7])) << "cycles above the first layer's bound";
  }
  EXPECT_NE(slurp(out / "points" / "00000" / "point.json").find((d.path() / "models" / "m.yaml").string()),
            std::string::npos);
}

TEST(SweepRun, ExamplesValidate) {
  auto catalog = wafersim::app::sweep_catalog();
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(WAFERSIM_SOURCE_DIR) / "sweeps")) {
    if (entry.path().extension() != ".yaml") continue;
    auto root = wafersim::sim::config::Loader().load(entry.path().string());
    const auto* cmd = root.find("sweep")->find("workload")->find("command");
    ASSERT_NE(cmd, nullptr) << entry.path();
    auto r = wafersim("validate " + entry.path().string(), true);
    if (catalog.find(cmd->text())) {
      EXPECT_EQ(r.code, 0) << r.out;
      ++checked;
    } else {
      EXPECT_EQ(r.code, 2);
      EXPECT_NE(r.out.find("'" + cmd->text() + "' is not a command a sweep can run"), std::string::npos) << r.out;
    }
  }
  EXPECT_GE(checked, 2);
}

}  // namespace
}  // namespace sweep_run_test
