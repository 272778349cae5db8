#pragma once
// The weight-resident pipeline's run as `wafersim infer --pipeline` reports it:
// pipeline.json and the summary on stdout.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "models/resident/resident_plan.h"
#include "platforms/inference/pipeline_run.h"
#include "platforms/platform_spec.h"

namespace wafersim::app {

// What pipeline.json holds: the run's figures and every stage's bounds.
nlohmann::ordered_json pipeline_json(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                                     const models::resident::PipelineProgram& p,
                                     const platforms::inference::PipelineResult& r,
                                     const models::resident::ResidentPlan* plan);

// The summary: every stage, the tokens and phases, cycles against the bounds, the checks.
void print_pipeline(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                    const models::resident::PipelineProgram& p, const platforms::inference::PipelineResult& r,
                    const models::resident::ResidentPlan* plan, bool check, const std::string& out_dir);

}  // namespace wafersim::app
