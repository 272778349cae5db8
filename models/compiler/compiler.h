#pragma once
// The compiler: a model and a platform in, a compiled model (layout, routes, SRAM plan and
// layer programs in execution order) out.

#include "models/compiler/compiled_model.h"

namespace wafersim::models::compiler {

// Contract: lowers every layer, forward and (with options.training) backward, in execution
// order: forward in graph order, then backward in reverse (data gradient, then weight
// gradient). Throws sim::InputError naming the layer when something does not fit (SRAM per
// PE, colors, rows), never returns a mapping that cannot run. With options.emit false only
// the mapping is computed (figures, no code): fast even for a whole WSE-2. With
// options.plan_missing_code, steps without code generation keep an empty `code` instead.
CompiledModel compile(const ModelSpec& model, const Target& target, const CompileOptions& options = {});

}  // namespace wafersim::models::compiler
