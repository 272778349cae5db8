#pragma once
// A rectangle of PEs on one wafer that a mesh-placed model spreads every layer over, and the
// lines of PEs its collectives run along (docs/compiler.md, "Mesh placement").

#include <cstdint>

#include "fabric/port.h"

namespace wafersim::models::mesh {

struct Region {
  std::uint32_t x0 = 0, y0 = 0;
  std::uint32_t rows = 1, columns = 1;
  [[nodiscard]] std::uint64_t pes() const { return std::uint64_t{rows} * columns; }
};

// Column: a line is one column of the region (its PEs indexed by row, north to south); Row: a
// line is one row (indexed by column, west to east).
enum class Axis : std::uint8_t { Column, Row };

// The port of a line's PE toward its lower indices (north or west), and toward its higher.
inline fabric::Port toward_lower(Axis a) { return a == Axis::Column ? fabric::Port::North : fabric::Port::West; }
inline fabric::Port toward_higher(Axis a) { return a == Axis::Column ? fabric::Port::South : fabric::Port::East; }

}  // namespace wafersim::models::mesh
