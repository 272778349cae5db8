#pragma once
// A failure a run schedules (`--fail SPEC`, docs/defects.md, "Failures while running"):
//   link:X,Y,DIR@CYCLE   the link from PE (X, Y) toward DIR (north, east, south or west)
//   pe:X,Y@CYCLE         PE (X, Y): its core and its router
//   system:K@STEP        system K of a cluster, at the start of training step STEP

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/geometry.h"
#include "fabric/outage.h"
#include "fabric/port.h"

namespace wafersim::platforms {

struct FailureSpec {
  enum class Kind : std::uint8_t { Link, Pe, System };
  Kind kind = Kind::Link;
  std::uint32_t x = 0, y = 0;              // link, PE
  fabric::Port port = fabric::Port::East;  // link
  std::uint32_t system = 0;                // system
  std::uint64_t at = 0;                    // cycle (link, PE) or step (system)
  std::string text;                        // as written
};

// Throws sim::InputError (exit code 2) naming the spec and the form expected.
FailureSpec parse_failure(const std::string& text);
std::vector<FailureSpec> parse_failures(const std::vector<std::string>& texts);

// A link or PE failure on a mesh of `g`'s shape; sim::InputError when it lies outside the mesh
// (or names a link to nothing).
fabric::Outage to_outage(const FailureSpec& f, const fabric::MeshGeometry& g);

}  // namespace wafersim::platforms
