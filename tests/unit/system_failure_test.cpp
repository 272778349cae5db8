// A system of a training cluster failing at a step (platforms/training/system_failures.cpp,
// docs/defects.md "Failures while running"): the run before the failure is the N-system run,
// the run from it on is the (N-1)-system run at the same global batch resumed from MemoryX's
// state; resuming is continuing; the errors name the spec.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/model_spec.h"
#include "platforms/platform_spec.h"
#include "platforms/training/training_run.h"
#include "sim/child_process.h"
#include "sim/errors.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"
#include "tests/support/training_bits.h"

namespace wafersim::platforms::training::system_failure_test {
namespace {

// A functional co-simulation with Adam on a decaying schedule over `total` updates: the
// optimizer's count matters to every update.
TrainingConfig functional(std::uint32_t steps, std::uint32_t total) {
  TrainingConfig cfg;
  cfg.cluster = ClusterMode::Cosim;
  cfg.steps = steps;
  cfg.threads = 1;
  cfg.functional = true;
  cfg.optimizer.learning_rate = 0.05F;
  cfg.optimizer.schedule.decay = memoryx::LrDecay::Cosine;
  cfg.optimizer.schedule.total_updates = total;
  return cfg;
}

// A run in a child process (a SystemC kernel of its own) on tiny-cluster with `systems`
// systems and tiny-mlp at `batch` samples per system: its report, final weights' bits and
// MemoryX's state.
nlohmann::json train(std::uint32_t systems, std::uint64_t batch, const TrainingConfig& cfg) {
  return sim::run_in_child(
      [&] {
        const auto spec = load_platform("tiny-cluster", {"cluster.systems=" + std::to_string(systems)}).spec;
        auto m = models::load_model("tiny-mlp").spec;
        m.batch = batch;
        sim::stats::Group root("");
        const TrainingReport r = run_training(spec, m, cfg, root);
        nlohmann::json j = to_json(r);
        j["final_bits"] = test::final_weight_bits(r);
        j["state"] = to_json(*r.state);
        return j;
      },
      "a training run");
}

std::vector<nlohmann::json> slice(const nlohmann::json& a, std::size_t from, std::size_t to) {
  return {a.begin() + static_cast<std::ptrdiff_t>(from), a.begin() + static_cast<std::ptrdiff_t>(to)};
}

std::vector<std::uint64_t> step_times(const nlohmann::json& steps) {
  std::vector<std::uint64_t> t;
  for (const auto& s : steps) t.push_back(s["time_ps"].get<std::uint64_t>());
  return t;
}

// 2 systems of batch 4, system 1 failing at step 2 of 4. Steps 0-1 are the 2-system run's
// (losses, times); steps 2-3 are the run of 1 system of batch 8 (the same global batch) resumed
// from the 2-system run's MemoryX after step 2: losses, step times and final weights bit for bit.
TEST(SystemFailure, TheRunFromTheFailureIsTheRunOfOneSystemFewer) {
  TrainingConfig failing = functional(4, 4);
  failing.failures = {SystemFailure{1, 2, "system:1@2"}};
  const auto a = train(2, 4, failing);
  const auto before = train(2, 4, functional(2, 4));
  TrainingConfig resumed = functional(2, 4);
  resumed.first_step = 2;
  resumed.start = std::make_shared<const TrainingState>(state_from_json(before["state"]));
  const auto after = train(1, 8, resumed);

  ASSERT_EQ(a["losses"].size(), 4u);
  EXPECT_EQ(slice(a["losses"], 0, 2), before["losses"].get<std::vector<nlohmann::json>>());
  EXPECT_EQ(slice(a["losses"], 2, 4), after["losses"].get<std::vector<nlohmann::json>>());
  EXPECT_EQ(a["final_bits"], after["final_bits"]);
  EXPECT_NE(a["final_bits"], before["final_bits"]);
  const auto times = step_times(a["steps"]);
  EXPECT_EQ(std::vector<std::uint64_t>(times.begin(), times.begin() + 2), step_times(before["steps"]));
  EXPECT_EQ(std::vector<std::uint64_t>(times.begin() + 2, times.end()), step_times(after["steps"]));
  EXPECT_EQ(after["steps"][0]["step"], 2);
  // The steps follow each other: step 2 starts where step 1 ended.
  EXPECT_EQ(a["steps"][2]["start_ps"], a["steps"][1]["end_ps"]);
  EXPECT_EQ(a["steps"][1]["end_ps"], before["steps"][1]["end_ps"]);
  EXPECT_EQ(a["total_ps"].get<std::uint64_t>(),
            before["total_ps"].get<std::uint64_t>() + after["total_ps"].get<std::uint64_t>());
  EXPECT_EQ(a["wafers"], 2);
  EXPECT_EQ(a["batch_per_wafer"], 4);
  const auto& f = a["failures"][0];
  EXPECT_EQ(f["system"], 1);
  EXPECT_EQ(f["step"], 2);
  EXPECT_EQ(f["systems_after"], 1);
  EXPECT_EQ(f["batch_before"], 4);
  EXPECT_EQ(f["batch_after"], 8);
  EXPECT_EQ(f["step_time_before_ps"], times[1]);
  EXPECT_EQ(f["step_time_after_ps"], times[2]);
}

// Resuming is continuing: 2 steps, then 2 more resumed from MemoryX's state, give the losses
// and final weights of 4 steps in one run (Adam's moments, its bias correction and the
// schedule's rate continue from update 3; the task's batches from step 2).
TEST(SystemFailure, AResumedRunContinuesTheTrainingBitForBit) {
  const auto whole = train(1, 8, functional(4, 4));
  const auto first = train(1, 8, functional(2, 4));
  TrainingConfig rest = functional(2, 4);
  rest.first_step = 2;
  rest.start = std::make_shared<const TrainingState>(state_from_json(first["state"]));
  const auto second = train(1, 8, rest);
  EXPECT_EQ(slice(whole["losses"], 0, 2), first["losses"].get<std::vector<nlohmann::json>>());
  EXPECT_EQ(slice(whole["losses"], 2, 4), second["losses"].get<std::vector<nlohmann::json>>());
  EXPECT_EQ(whole["final_bits"], second["final_bits"]);
  EXPECT_EQ(state_from_json(second["state"]).updates, 4u);
}

// A failure at step 0 leaves the run of one system fewer from the start, with no resume.
TEST(SystemFailure, AFailureAtStepZeroIsTheSmallerClustersRun) {
  TrainingConfig failing = functional(2, 2);
  failing.failures = {SystemFailure{0, 0, "system:0@0"}};
  const auto a = train(2, 4, failing);
  const auto b = train(1, 8, functional(2, 2));
  EXPECT_EQ(a["losses"], b["losses"]);
  EXPECT_EQ(a["final_bits"], b["final_bits"]);
  EXPECT_EQ(a["steps"], b["steps"]);
  EXPECT_EQ(a["failures"][0]["step_time_before_ps"], 0);
}

// The replay (host arithmetic) fails a system the same way.
TEST(SystemFailure, TheReplayResumesTheSameWay) {
  TrainingConfig failing = functional(3, 3);
  failing.cluster = ClusterMode::Replay;
  failing.failures = {SystemFailure{0, 1, "system:0@1"}};
  const auto a = train(2, 4, failing);
  TrainingConfig head = functional(1, 3);
  head.cluster = ClusterMode::Replay;
  const auto before = train(2, 4, head);
  TrainingConfig tail = functional(2, 3);
  tail.cluster = ClusterMode::Replay;
  tail.first_step = 1;
  tail.start = std::make_shared<const TrainingState>(state_from_json(before["state"]));
  const auto after = train(1, 8, tail);
  EXPECT_EQ(slice(a["losses"], 0, 1), before["losses"].get<std::vector<nlohmann::json>>());
  EXPECT_EQ(slice(a["losses"], 1, 3), after["losses"].get<std::vector<nlohmann::json>>());
  EXPECT_EQ(a["final_bits"], after["final_bits"]);
  EXPECT_EQ(step_times(a["steps"])[2], step_times(after["steps"])[1]);
}

// The command: the failure in the output and stats.json, the same stats.json for 1 and 2
// threads; a bad spec exits 2 naming it; failing the last system exits 3.
TEST(SystemFailure, TheCommandReportsTheFailureAndNamesBadSpecs) {
  test::TempDir dir;
  std::string first;
  for (const char* threads : {"1", "2"}) {
    const auto out = dir.path() / threads;
    const auto r = test::wafersim(
        "train tiny-cluster --set cluster.systems=3 --model tiny-mlp --model-set batch=2 "
        "--steps 3 --functional --fail system:2@1 --threads " +
            std::string(threads) + " --out " + out.string(),
        true);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("failure       system 2 at step 1 (system:2@1): 3 -> 2 systems x batch 3 (global batch 6)"),
              std::string::npos)
        << r.out;
    const std::string stats = test::slurp(out / "stats.json");
    const auto j = nlohmann::json::parse(stats)["stats"];
    EXPECT_EQ(j["training"]["failures"]["failure0"]["system"], 2);
    EXPECT_EQ(j["training"]["failures"]["failure0"]["batch_after"], 3);
    EXPECT_TRUE(j.contains("segment0"));
    if (first.empty())
      first = stats;
    else
      EXPECT_EQ(stats, first);
  }
  const std::string base = "train tiny-cluster --model tiny-mlp --steps 3 --out " + (dir.path() / "x").string();
  auto expect = [&](const std::string& fails, int code, const std::string& what) {
    const auto r = test::wafersim(base + fails, true);
    EXPECT_EQ(r.code, code) << fails << ": " << r.out;
    EXPECT_NE(r.out.find(what), std::string::npos) << r.out;
  };
  expect(" --fail system:2@1", 2, "--fail system:2@1: tiny-cluster has 2 systems (0..1)");
  expect(" --fail system:1@3", 2, "--fail system:1@3: the run trains steps 0..2");
  expect(" --fail system:1@1 --fail system:1@2", 2, "system 1 already fails (system:1@1)");
  expect(" --fail system:0@1 --fail system:1@2", 3, "--fail system:1@2: the last system left fails at step 2");
}

}  // namespace
}  // namespace wafersim::platforms::training::system_failure_test
