#pragma once
// The five ports of a router and their names.

#include <cstdint>
#include <optional>
#include <string_view>

namespace wafersim::fabric {

// North is toward row y-1, south toward y+1, west toward column x-1, east toward x+1;
// the ramp connects the router to its own PE (or, at an edge, nothing else).
enum class Port : std::uint8_t { North = 0, East = 1, South = 2, West = 3, Ramp = 4 };

inline constexpr std::uint32_t kPorts = 5;
inline constexpr std::uint8_t kAllPorts = 0x1f;

constexpr std::uint32_t index(Port p) { return static_cast<std::uint32_t>(p); }
constexpr std::uint8_t bit(Port p) { return static_cast<std::uint8_t>(1u << index(p)); }
constexpr Port port_at(std::uint32_t i) { return static_cast<Port>(i); }

// The port of the neighbour that faces `p` (north <-> south, east <-> west; ramp stays ramp).
constexpr Port opposite(Port p) {
  switch (p) {
    case Port::North:
      return Port::South;
    case Port::South:
      return Port::North;
    case Port::East:
      return Port::West;
    case Port::West:
      return Port::East;
    case Port::Ramp:
      return Port::Ramp;
  }
  return Port::Ramp;
}

// "north", "east", "south", "west", "ramp".
std::string_view port_name(Port p);
// Parses a port name (as port_name() writes it); nullopt for anything else.
std::optional<Port> parse_port(std::string_view name);
// "east, ramp" for a port set (bits as bit()).
std::string port_set_name(std::uint32_t ports);

}  // namespace wafersim::fabric
