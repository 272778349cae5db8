#pragma once
// Where a static route begins and ends, for diagnostics: the tree of one color through one
// router, its sources (a PE sending on it, an edge channel feeding it) and its destinations
// (PEs receiving it, edge channels it leaves by).

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/geometry.h"
#include "fabric/route_table.h"

namespace wafersim::fabric {

struct RouteEnds {
  std::vector<std::string> sources, destinations;  // "PE (x, y)", "edge channel 2 (west)"
};

// The routers joined to `router` by `color`'s routes (a router's forward matched by its
// neighbour's accept, either way) and the ends of that tree.
RouteEnds route_ends(const RouteTable& table, const MeshGeometry& g, std::uint32_t router, std::uint32_t color);

// "from PE (0, 0) to PE (3, 0), PE (4, 0) and 2 more".
std::string describe_route(const RouteEnds& ends);

}  // namespace wafersim::fabric
