#pragma once
// The `optimizer:` section of a model file: the optimizer MemoryX runs when the model is
// trained, its hyper-parameters and learning-rate schedule (docs/model-config.md). The
// command line's --optimizer and --learning-rate, when given, override the file.

#include "memoryx/optimizer.h"
#include "sim/config/schema.h"

namespace wafersim::models {

// Reads `optimizer:` (absent: Adam with the defaults of memoryx::OptimizerConfig). Bad
// values are recorded at their key's line and column, like every other key of the model.
memoryx::OptimizerConfig read_optimizer(sim::config::Section root);

}  // namespace wafersim::models
