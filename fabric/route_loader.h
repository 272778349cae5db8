#pragma once
// Reads a route table from YAML (format in docs/routes.md) and checks it against a mesh.

#include <cstdint>
#include <string>
#include <string_view>

#include "fabric/geometry.h"
#include "fabric/route_table.h"

namespace wafersim::fabric {

// Loads and checks `path`. Throws sim::config::ConfigError (exit code 2) listing every
// problem with file:line:col, key path and, for routing errors, the router and color.
RouteTable load_routes(const std::string& path, const MeshGeometry& geometry, std::uint32_t colors);
// The same from text (`name` is used in diagnostics).
RouteTable parse_routes(std::string_view text, const std::string& name, const MeshGeometry& geometry,
                        std::uint32_t colors);

}  // namespace wafersim::fabric
