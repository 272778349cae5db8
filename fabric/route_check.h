#pragma once
// Checks a route table against the mesh it will run on.

#include <vector>

#include "fabric/geometry.h"
#include "fabric/route_table.h"
#include "sim/config/diagnostics.h"

namespace wafersim::fabric {

// Contract: returns one diagnostic per problem, located at the rule that set the route and
// naming the router and color: a route that accepts or forwards through a port with no
// neighbour (nor edge I/O channel), a forward to a neighbour with no route for the color
// from that side, a route with no input or no output, and a route loop with no exit (a
// cycle of routers from which no copy ever reaches a ramp or an edge channel). Loops that
// have an exit are legal (they multicast every revolution and may deadlock under load,
// which the fabric's watchdog reports at run time).
std::vector<sim::config::Diagnostic> check_routes(const RouteTable& table, const MeshGeometry& geometry);

}  // namespace wafersim::fabric
