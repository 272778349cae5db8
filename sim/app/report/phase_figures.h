#pragma once
// The figures of a model run's layer phases for the report: each phase of trace/phases.json
// ("fc1 forward") joined with its step in model.json's results (bound, FLOP/s, % of peak,
// stall mix), as the command line prints them.

#include <nlohmann/json.hpp>

namespace wafersim::app::report {

// Adds to each row of `phases` ({wafer, name, start, end}) whose name is "LAYER PHASE" of a
// result in `model` (model.json): bound_cycles, binds, flops, flops_per_second,
// peak_fraction and stalls (cause -> cycles). Rows without a match are left as they are.
void add_phase_figures(nlohmann::ordered_json& phases, const nlohmann::ordered_json& model);

}  // namespace wafersim::app::report
