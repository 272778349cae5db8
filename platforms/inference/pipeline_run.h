#pragma once
// The weight-resident pipeline run on a wafer: every stage's program loaded at once, the
// tokens' activations flowing over the fabric from stage to stage, the last stage's outputs
// read back and checked (docs/compiler.md, "The pipeline, simulated").

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/resident/resident_pipeline.h"
#include "platforms/cluster.h"
#include "platforms/wafer.h"
#include "sim/run_loop.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms::inference {

using models::resident::PipeBits;
using models::resident::PipelineProgram;

struct PipelineResult {
  std::uint64_t start = 0, end = 0;         // cycles
  std::vector<std::uint64_t> phase_cycles;  // per phase: from its programs' load until every PE is idle
  PipeBits output;
  std::uint64_t compared = 0, mismatches = 0;
  std::string first_mismatch;
  std::uint64_t flops = 0;  // executed by the PEs
  [[nodiscard]] std::uint64_t cycles() const { return end - start; }
};

// Contract: loads every stage's program on `wafer` (built with p.routes), runs the simulation
// until every PE is idle, reads the last stage's outputs and compares them with
// expect_pipeline (when `check`). Throws sim::SimulationError on a deadlock, sim::LimitReached
// when `limits` stop it (--max-wall; --max-cycles is the wafer's BuildOptions::max_cycles).
PipelineResult run_pipeline(const PipelineProgram& p, Wafer& wafer, bool check = true,
                            const sim::RunLimits& limits = {});

// The pipeline on wafer 0 of a platform: the platform assembled with the pipeline's routes.
class PipelineSimulation {
 public:
  // Contract: assembles `spec` under `root` with p.routes; `p` must outlive this.
  PipelineSimulation(const PlatformSpec& spec, BuildOptions build, sim::stats::Group& root, const PipelineProgram& p);
  // Runs the pipeline (run_pipeline) and adds its figures to wafer 0's "pipeline" statistics:
  // tokens, cycles, the bound and tokens/s at the platform clock.
  PipelineResult run(bool check, const sim::RunLimits& limits = {});
  [[nodiscard]] Wafer& wafer() { return cluster_->wafer(0); }

 private:
  const PlatformSpec& spec_;
  const PipelineProgram& p_;
  std::unique_ptr<Cluster> cluster_;
};

}  // namespace wafersim::platforms::inference
