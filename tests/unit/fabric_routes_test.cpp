// Route tables: the YAML format (docs/routes.md) and the checks on load.

#include <gtest/gtest.h>

#include <string>

#include "fabric/route_loader.h"
#include "sim/config/diagnostics.h"
#include "tests/support/run_wafersim.h"
#include "tests/support/temp_dir.h"

namespace wafersim::fabric::fabric_routes_test {
namespace {

const MeshGeometry kMesh(8, 8, 8);  // an edge channel on every row

std::string errors(const std::string& text, const MeshGeometry& g = kMesh) {
  try {
    parse_routes(text, "r.yaml", g, 24);
  } catch (const sim::config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Routes, RowBroadcastLoads) {
  const RouteTable t = parse_routes(R"(
description: PE (0, 2) broadcasts color 3 along row 2
routes:
  - {color: 3, at: [0, 2], from: ramp, to: east}
  - {color: 3, x: 1..6, y: 2, from: west, to: [east, ramp]}
  - {color: 3, at: [7, 2], from: west, to: ramp}
)",
                                    "r.yaml", kMesh, 24);
  EXPECT_EQ(t.size(), 8u);
  EXPECT_EQ(t.at(kMesh.router(0, 2), 3).accept, bit(Port::Ramp));
  EXPECT_EQ(t.at(kMesh.router(0, 2), 3).forward, bit(Port::East));
  EXPECT_EQ(t.at(kMesh.router(4, 2), 3).forward, bit(Port::East) | bit(Port::Ramp));
  EXPECT_EQ(t.at(kMesh.router(7, 2), 3).forward, bit(Port::Ramp));
  EXPECT_TRUE(t.at(kMesh.router(4, 3), 3).empty());
  EXPECT_TRUE(t.at(kMesh.router(4, 2), 2).empty());
}

TEST(Routes, ForwardingOffTheMeshNamesRouterAndColor) {
  // Row 1 has no edge channel on a mesh with 2 channels per edge (rows 2 and 6).
  const MeshGeometry g(8, 8, 2);
  const std::string e = errors(R"(routes:
  - {color: 5, at: [7, 1], from: ramp, to: east}
)",
                               g);
  EXPECT_NE(e.find("r.yaml:2:5: error: routes[0]: color 5 at router (7, 1) forwards east, but there is no "
                   "neighbour beyond its east port and no edge I/O channel on that row"),
            std::string::npos)
      << e;
  EXPECT_NE(errors("routes:\n  - {color: 5, at: [3, 0], from: ramp, to: north}\n")
                .find("color 5 at router (3, 0) forwards north, but there is no neighbour beyond its north port"),
            std::string::npos);
  // On a channel row the same forward reaches the edge channel: legal.
  EXPECT_EQ(errors("routes:\n  - {color: 5, at: [7, 2], from: ramp, to: east}\n", g), "");
}

TEST(Routes, ForwardToANeighbourWithoutARouteIsAnError) {
  const std::string e = errors(R"(routes:
  - {color: 1, at: [2, 2], from: ramp, to: east}
  - {color: 1, at: [3, 2], from: north, to: ramp}
)");
  EXPECT_NE(e.find("r.yaml:2:5: error: routes[0]: color 1 at router (2, 2) forwards east to router (3, 2), which has "
                   "no route for color 1 accepting from the west"),
            std::string::npos)
      << e;
}

TEST(Routes, LoopWithNoExitIsAnError) {
  const std::string e = errors(R"(routes:
  - {color: 7, at: [1, 1], from: [ramp, south], to: east}
  - {color: 7, at: [2, 1], from: west, to: south}
  - {color: 7, at: [2, 2], from: north, to: west}
  - {color: 7, at: [1, 2], from: east, to: north}
)");
  EXPECT_NE(e.find("color 7 at router (1, 1) is part of a route loop with no exit: (1, 1) -> (2, 1) -> (2, 2) -> "
                   "(1, 2) -> (1, 1)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("r.yaml:2:5: error: routes[0]"), std::string::npos) << e;
}

TEST(Routes, LoopWithAnExitIsLegal) {
  EXPECT_EQ(errors(R"(routes:
  - {color: 7, at: [1, 1], from: [ramp, south], to: [east, ramp]}
  - {color: 7, at: [2, 1], from: [ramp, west], to: [south, ramp]}
  - {color: 7, at: [2, 2], from: [ramp, north], to: [west, ramp]}
  - {color: 7, at: [1, 2], from: [ramp, east], to: [north, ramp]}
)"),
            "");
}

TEST(Routes, SyntaxErrorsPointAtTheValue) {
  const std::string e = errors(R"(routes:
  - color: 3
    at: [1, 9]
    from: rmap
    to: [east, east]
  - color: 0..30
    x: 1..2
    y: all
    from: west
    to: east
    colour: 2
)");
  EXPECT_NE(e.find("r.yaml:3:13: error: routes[0].at: row 9 is outside the mesh/colors (valid: 0 .. 7)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("r.yaml:4:11: error: routes[0].from: unknown port 'rmap'; expected north, east, south, west or "
                   "ramp (did you mean 'ramp'?)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("r.yaml:5:16: error: routes[0].to: port 'east' is listed twice"), std::string::npos) << e;
  EXPECT_NE(e.find("r.yaml:6:12: error: routes[1].color: color 30 is outside"), std::string::npos) << e;
  EXPECT_NE(e.find("r.yaml:11:5: error: routes[1].colour: unknown key; did you mean 'color'?"), std::string::npos) << e;
}

TEST(Routes, DuplicatesNeedReplace) {
  const std::string dup = R"(routes:
  - {color: 2, x: all, y: 4, from: west, to: east}
  - {color: 2, at: [7, 4], from: west, to: ramp}
)";
  const std::string e = errors(dup);
  EXPECT_NE(e.find("r.yaml:3:5: error: routes[1]: color 2 at router (7, 4) is already routed by routes[0] "
                   "(r.yaml:2:5); add 'replace: true' to override earlier rules"),
            std::string::npos)
      << e;
  // With replace: the last rule wins at (7, 4); (0, 4) accepts from the west edge channel.
  const RouteTable t = parse_routes(R"(routes:
  - {color: 2, x: all, y: 4, from: west, to: east}
  - {color: 2, at: [7, 4], from: west, to: ramp, replace: true}
)",
                                    "r.yaml", kMesh, 24);
  EXPECT_EQ(t.at(kMesh.router(7, 4), 2).forward, bit(Port::Ramp));
  EXPECT_EQ(t.at(kMesh.router(6, 4), 2).forward, bit(Port::East));
}

TEST(Routes, TheExampleInTheDocsLoads) {
  const std::string doc = test::slurp(std::string(WAFERSIM_SOURCE_DIR) + "/docs/routes.md");
  const auto start = doc.find("```yaml\n");
  ASSERT_NE(start, std::string::npos);
  const auto end = doc.find("```", start + 8);
  const RouteTable t = parse_routes(doc.substr(start + 8, end - start - 8), "docs/routes.md", kMesh, 24);
  EXPECT_EQ(t.at(kMesh.router(3, 2), 3).forward, bit(Port::East) | bit(Port::South) | bit(Port::Ramp));
  EXPECT_EQ(t.at(kMesh.router(3, 7), 3).forward, bit(Port::Ramp));
}

TEST(Routes, MissingFileIsReported) {
  try {
    load_routes("/nonexistent/routes.yaml", kMesh, 24);
    FAIL();
  } catch (const sim::config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/routes.yaml: error: cannot read the route table: no such file"),
              std::string::npos);
  }
  test::TempDir dir;
  const auto path = dir.write("r.yaml", "routes:\n  - {color: 0, at: [0, 0], from: ramp, to: ramp}\n");
  EXPECT_EQ(load_routes(path, kMesh, 24).size(), 1u);
}

}  // namespace
}  // namespace wafersim::fabric::fabric_routes_test
