#pragma once
// Printing the weight-resident plan (`wafersim compile --placement resident`): text and JSON.

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

#include <deque>

#include "models/compiler/compiled_model.h"
#include "models/resident/resident_decode.h"
#include "models/resident/resident_plan.h"
#include "platforms/runtime/executor.h"
#include "sim/stats/stats.h"

namespace wafersim::app {

nlohmann::ordered_json resident_json(const models::resident::ResidentPlan& plan, const models::ModelSpec& model,
                                     const std::string& platform, double clock_hz);
void print_resident(std::ostream& out, const models::resident::ResidentPlan& plan, const models::ModelSpec& model,
                    const std::string& platform, double clock_hz);

// A resident run's phases: the weight placement, the simulated prefill (the loss, when the
// model has one, is left out), and the plan's decode bound when `plan` is given.
nlohmann::ordered_json resident_run_json(const models::compiler::CompiledModel& cm,
                                         const std::deque<platforms::runtime::StepResult>& results,
                                         const models::resident::ResidentPlan* plan, double clock_hz);
void print_resident_run(std::ostream& out, const models::compiler::CompiledModel& cm,
                        const std::deque<platforms::runtime::StepResult>& results,
                        const models::resident::ResidentPlan* plan, double clock_hz);

// Adds group `inference` to a resident run's wafer statistics: `tokens`, the token positions
// the run processes (batch x sequence for a prefill; batch x positions with decode steps).
void add_inference_stats(sim::stats::Group& wafer, const models::compiler::CompiledModel& cm,
                         const models::resident::ResidentDecode* decode);

// A token-by-token run: prefill (the prompt's positions) and decode cycles, per token and
// tokens/s at the clock.
nlohmann::ordered_json decode_run_json(const models::resident::ResidentDecode& rd,
                                       const std::deque<platforms::runtime::StepResult>& results, double clock_hz);
void print_decode_run(std::ostream& out, const models::resident::ResidentDecode& rd,
                      const std::deque<platforms::runtime::StepResult>& results, double clock_hz);

}  // namespace wafersim::app
