#pragma once
// The plan of a pipelined run: which layers of the model each stage runs (its kind, fused
// layers and carried skips) on which column, and the bands of rows the stages take on the
// wafer (docs/compiler.md, "The pipeline, simulated").

#include <cstdint>
#include <vector>

#include "models/compiler/target.h"
#include "models/model_spec.h"
#include "models/resident/pipeline_stage.h"
#include "models/resident/resident_pipeline.h"

namespace wafersim::models::resident {

// Contract: the model's layers (the loss left out) as a chain of stages, stage i on column i,
// with their kinds, layer names, shapes, fused layers and carried skips (no rows, values or
// bounds yet); throws sim::InputError naming the first layer the pipeline does not cover (or
// that needs the rows-out cut under `cut`), or when there are more stages than the target's
// columns.
std::vector<PipelineStage> plan_stages(const ModelSpec& model, const compiler::Target& target, PipelineCut cut);

// Contract: p's model, target, cut, phases and stages set; sets p.by_sequence, p.replicas (the
// given number, or with 0 the one whose estimated run is shortest) and every stage's rows, KV
// cache sequences and linear form. Throws sim::InputError when the replicas do not fit the
// wafer's rows or the tokens (sequences, with attention) of a phase.
void plan_bands(PipelineProgram& p, std::uint32_t replicas);

}  // namespace wafersim::models::resident
