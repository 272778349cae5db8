#pragma once
// Statistics recorded elsewhere (a run in a child process) added to a tree as constants.

#include <nlohmann/json.hpp>

#include <string>

#include "sim/stats/stats.h"

namespace wafersim::sim::stats {

// Adds `values` (a group as to_json writes it) under `g`: objects become groups, numbers
// scalars (integral when written as integers), arrays of numbers vectors, nulls (values that were
// not finite) NaN, written as null again. Units and
// descriptions come from `descriptions` (as describe_json writes them), whose keys are the
// recorded group's paths below `prefix` ("wafer0" for "wafer0.cores.busy_cycles").
void add_recorded(Group& g, const nlohmann::json& values, const nlohmann::json& descriptions,
                  const std::string& prefix);
// The same from to_ordered_json: groups and statistics are added in the recorded order.
void add_recorded(Group& g, const nlohmann::ordered_json& values, const nlohmann::json& descriptions,
                  const std::string& prefix);

}  // namespace wafersim::sim::stats
