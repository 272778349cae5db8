#pragma once
// A compiled model run on wafer 0 of a platform (platforms/runtime/model_run.h) as a command
// runs it: the run folder (model.json beside the usual files, the trace when asked for) and
// the summary on stdout or as JSON; shared by `run --model` and `infer`.

#include <string>

#include "models/compiler/compiled_model.h"
#include "models/resident/resident_decode.h"
#include "models/resident/resident_plan.h"
#include "platforms/runtime/host_data.h"
#include "sim/app/workflows.h"

namespace wafersim::app {

// Throws sim::InputError naming the model and `command` when the model has sparse layers: the
// dense layer programs of run and infer cannot apply them (training does).
void refuse_sparse_model(const models::ModelSpec& model, const std::string& command);

// Contract: runs `cm` (after `decode`'s parallel prefill with `prefill_data`, when it has
// one) in a run folder named after `command`; `plan` (may be null) adds the resident plan's
// figures. Throws sim::SimulationError (exit 3) when a result differs from the host's
// expectation, after the run folder is written.
void run_compiled_model(const Workflow& w, const std::string& command, const platforms::LoadedPlatform& loaded,
                        const models::compiler::CompiledModel& cm, platforms::runtime::HostData data,
                        const models::resident::ResidentPlan* plan = nullptr,
                        const models::resident::ResidentDecode* decode = nullptr,
                        platforms::runtime::HostData prefill_data = {});

}  // namespace wafersim::app
