// The weight-resident pipeline simulated: linear chains on a column of PEs per layer, all
// regions at once, activations over the fabric; bit-exact with the reference's order, never
// faster than its bound, and faster per token than the layer-by-layer run.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <systemc>

#include "models/resident/resident_pipeline.h"
#include "models/resident/resident_plan.h"
#include "models/resident/resident_program.h"
#include "models/resident/resident_runtime.h"
#include "models/runtime/executor.h"
#include "platforms/cluster.h"
#include "sim/errors.h"

namespace wafersim {
namespace {
using models::resident::PipelineProgram;
using models::resident::PipelineResult;

struct PipeRig {
  platforms::LoadedPlatform platform;
  PipelineProgram program;
  std::unique_ptr<sim::stats::Group> stats;
  std::unique_ptr<platforms::Cluster> cluster;

  PipeRig(const std::vector<std::string>& set, const models::ModelSpec& m, std::uint64_t seed = 1) {
    platform = platforms::load_platform("tiny", set);
    const models::compiler::Target target{platform.spec.wafer, platform.spec.fabric};
    program = models::resident::compile_pipeline(m, target, seed);
    platforms::BuildOptions build;
    build.routes = program.routes;
    stats = std::make_unique<sim::stats::Group>("");
    cluster = std::make_unique<platforms::Cluster>("cluster", platform.spec, build, *stats);
  }
  PipelineResult run() { return models::resident::run_pipeline(program, cluster->wafer(0)); }
};

models::ModelSpec with_batch(const std::string& preset, std::uint64_t batch) {
  auto m = models::load_model(preset, {fmt::format("batch={}", batch)}).spec;
  return m;
}

TEST(ResidentPipeline, TinyMlpMatchesTheReference) {
  PipeRig rig({}, models::load_model("tiny-mlp").spec);
  ASSERT_EQ(rig.program.stages.size(), 2u);
  EXPECT_EQ(rig.program.stages[0].fused, "act");
  const PipelineResult r = rig.run();
  EXPECT_EQ(r.compared, 4u * 8u);
  EXPECT_EQ(r.mismatches, 0u) << r.first_mismatch;
  EXPECT_GE(r.cycles(), rig.program.bound_cycles());
  std::printf("tiny-mlp pipeline: %llu cycles, bound %llu\n", static_cast<unsigned long long>(r.cycles()),
              static_cast<unsigned long long>(rig.program.bound_cycles()));
}

}  // namespace
}  // namespace wafersim
