#pragma once
// The static color routes of the weight-streaming placement (docs/compiler.md, "Routes").

#include <memory>

#include "fabric/route_table.h"
#include "models/compiler/colors.h"
#include "models/compiler/layout.h"

namespace wafersim::models::compiler {

// Contract: the table passes fabric::check_routes for the layout's mesh; every route a
// compiled layer program relies on is in it (weights from each band's west channel to its
// rows, column and row chains between neighbouring used PEs, column broadcasts, and each
// band's gradient path to its east channel), in every row group of the layout, the groups
// sharing no router.
std::shared_ptr<fabric::RouteTable> build_routes(const Target& target, const StreamingLayout& layout,
                                                 const ColorPlan& colors);

}  // namespace wafersim::models::compiler
