#pragma once
// The weight-resident pipeline run on a wafer: every stage's program loaded at once, the
// tokens' activations flowing over the fabric from stage to stage, the last stage's outputs
// read back and checked (docs/compiler.md, "The pipeline, simulated").

#include <cstdint>
#include <string>
#include <vector>

#include "models/resident/resident_pipeline.h"
#include "platforms/wafer.h"

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
// expect_pipeline (when `check`). Throws sim::SimulationError on a deadlock.
PipelineResult run_pipeline(const PipelineProgram& p, Wafer& wafer, bool check = true);

}  // namespace wafersim::platforms::inference
