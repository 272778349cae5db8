#pragma once
// Compiles a model for a platform and runs it on one simulated wafer, step by step, as
// `wafersim run --model` does (without the run folder and progress).

#include <gtest/gtest.h>

#include <systemc>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "models/compiler/compiler.h"
#include "platforms/cluster.h"
#include "platforms/runtime/executor.h"

namespace wafersim::test {

struct ModelRun {
  platforms::LoadedPlatform platform;
  models::compiler::CompiledModel compiled;
  std::unique_ptr<sim::stats::Group> stats;
  std::unique_ptr<platforms::Cluster> cluster;
  std::unique_ptr<platforms::runtime::Executor> exec;

  // Compiles `model_yaml` (or a preset name) for `platform` and builds the wafer.
  ModelRun(const std::string& platform_name, const std::vector<std::string>& platform_set,
           const std::string& model_yaml, models::compiler::CompileOptions options = {}, std::uint64_t seed = 1) {
    platform = platforms::load_platform(platform_name, platform_set);
    const models::LoadedModel m = model_yaml.find(':') == std::string::npos
                                      ? models::load_model(model_yaml)
                                      : models::load_model_text(model_yaml, "model.yaml");
    models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
    compiled = models::compiler::compile(m.spec, target, options);
    platforms::BuildOptions build;
    build.routes = compiled.routes;
    stats = std::make_unique<sim::stats::Group>("");
    cluster = std::make_unique<platforms::Cluster>("cluster", platform.spec, build, *stats);
    exec = std::make_unique<platforms::runtime::Executor>(compiled, cluster->wafer(0),
                                                          platforms::runtime::make_host_data(compiled, seed));
  }

  // Runs every step; returns the results.
  const std::deque<platforms::runtime::StepResult>& run() {
    const sc_core::sc_time load = exec->load_inputs();
    sc_core::sc_start(load);
    for (std::size_t i = 0; i < exec->steps(); ++i) {
      exec->start(i);
      sc_core::sc_start();
      auto& engine = cluster->wafer(0).engine();
      if (engine.failed()) engine.rethrow_failure();
      exec->finish(i);
    }
    return exec->results();
  }
};

// Every step ran its checks and passed them, and the analytical bound (positive) is never
// above the step's simulated cycles.
inline void expect_all_checked(const std::deque<platforms::runtime::StepResult>& results) {
  for (const auto& r : results) {
    EXPECT_FALSE(r.checks.empty()) << r.name();
    for (const auto& c : r.checks) {
      EXPECT_TRUE(c.passed()) << r.name() << " " << c.what << ": " << c.mismatches << " of " << c.compared
                              << " differ; " << c.first_mismatch;
      EXPECT_GT(c.compared, 0u) << r.name() << " " << c.what;
    }
    EXPECT_LE(r.bound.cycles, r.cycles()) << r.name();
    EXPECT_GT(r.bound.cycles, 0u) << r.name();
    EXPECT_GT(r.cycles(), 0u) << r.name();
  }
}

}  // namespace wafersim::test
