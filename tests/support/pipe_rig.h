#pragma once
// A pipelined resident program (models/resident/resident_pipeline.h) compiled for `tiny`
// (with platform overrides) on a wafer of its own, and the checks every pipelined test makes.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "models/resident/pipeline_expect.h"
#include "platforms/cluster.h"
#include "platforms/inference/pipeline_run.h"

namespace wafersim::test {

struct PipeOptions {
  models::resident::PipelineCut cut = models::resident::PipelineCut::RowsOut;
  std::string name = "cluster";  // the cluster's SystemC name (several rigs in one test)
  std::uint32_t replicas = 1;    // 0: the compiler's choice
  std::uint64_t decode = 0;      // decode steps after the prefill
};

struct PipeRig {
  platforms::LoadedPlatform platform;
  models::resident::PipelineProgram program;
  std::unique_ptr<sim::stats::Group> stats;
  std::unique_ptr<platforms::Cluster> cluster;

  PipeRig(const std::vector<std::string>& set, const models::ModelSpec& m, const PipeOptions& o = {}) {
    platform = platforms::load_platform("tiny", set);
    const models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
    program = models::resident::compile_pipeline(m, target, 1, o.cut, o.replicas, o.decode);
    platforms::BuildOptions build;
    build.routes = program.routes;
    stats = std::make_unique<sim::stats::Group>("");
    cluster = std::make_unique<platforms::Cluster>(o.name.c_str(), platform.spec, build, *stats);
  }
  platforms::inference::PipelineResult run() { return platforms::inference::run_pipeline(program, cluster->wafer(0)); }
};

// Every output checked and equal to the host's, exactly `cycles`, and the run's own bound
// (positive) not above them.
inline void expect_checked_run(const PipeRig& rig, const platforms::inference::PipelineResult& r,
                               std::uint64_t cycles) {
  EXPECT_EQ(r.compared, rig.program.tokens * rig.program.stages.back().f_out);
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
  EXPECT_EQ(r.cycles(), cycles);
  EXPECT_GE(r.cycles(), rig.program.bound_cycles());
  EXPECT_GT(rig.program.bound_cycles(), 0u);
}

// How many outputs of the run differ from the host's expectation for `other` (a program
// changed in one parameter: the test shows the expectation depends on it).
inline std::uint64_t differences(const models::resident::PipelineProgram& other,
                                 const platforms::inference::PipelineResult& r) {
  const auto want = models::resident::expect_pipeline(other);
  std::uint64_t differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differ += want[i] != r.output[i];
  return differ;
}

}  // namespace wafersim::test
