#pragma once
// Rebuilds static color routes around failed links and routers (docs/defects.md, "Failures
// while running"). A color that forwards over a dead link is given a detour from the router
// before the link to the router after it; a color that passes through a dead router, a detour
// from the router feeding it to every router it fed. A detour is a shortest path over live
// links through routers that do not route that color yet, so the color's tree stays a tree.

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fabric/geometry.h"
#include "fabric/route_table.h"

namespace wafersim::fabric {

// The failed parts: links by (router, port) in both directions, and routers.
struct DeadParts {
  std::set<std::pair<std::uint32_t, std::uint32_t>> links;  // (router, output 0 .. 3)
  std::set<std::uint32_t> routers;
  void kill_link(const MeshGeometry& g, std::uint32_t r, Port p);
  void kill_router(const MeshGeometry& g, std::uint32_t r);
  [[nodiscard]] bool dead(std::uint32_t r, std::uint32_t o) const { return links.count({r, o}) != 0; }
};

// A route at `router` for `color` that uses a failed part.
struct BrokenRoute {
  std::uint32_t router = 0, color = 0;
  std::string how;  // "forwards east over it", "passes through it from the west", "delivers to its ramp"
};

// Every (router, color) route that uses a dead part, in router then color order.
std::vector<BrokenRoute> broken_routes(const RouteTable& table, const DeadParts& dead);

// One (router, color) the rebuild changed: the outputs it dropped and those it gained.
struct RouteChange {
  std::uint32_t router = 0, color = 0;
  std::uint8_t dropped = 0, added = 0;
};

struct Rerouted {
  bool ok = false;
  std::string why;  // when !ok: the first route that cannot be rebuilt
  RouteTable table{1, 1, 1};
  std::vector<RouteChange> changes;
  std::uint64_t rewritten = 0;   // (router, color) entries written
  std::uint64_t extra_hops = 0;  // hops the detours add over the paths they replace
};

// Contract: the result's table passes check_routes; no route in it uses a dead part; every
// router and edge channel a color reached before, it still reaches, except the dead routers.
// Routes that deliver to or send from a dead router's ramp cannot be rebuilt (ok = false).
Rerouted reroute(const RouteTable& table, const MeshGeometry& g, const DeadParts& dead);

}  // namespace wafersim::fabric
