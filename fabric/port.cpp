#include "fabric/port.h"

#include <string>

namespace wafersim::fabric {

std::string_view port_name(Port p) {
  switch (p) {
    case Port::North:
      return "north";
    case Port::East:
      return "east";
    case Port::South:
      return "south";
    case Port::West:
      return "west";
    case Port::Ramp:
      return "ramp";
  }
  return "?";
}

std::optional<Port> parse_port(std::string_view name) {
  for (std::uint32_t i = 0; i < kPorts; ++i)
    if (port_name(port_at(i)) == name) return port_at(i);
  return std::nullopt;
}

std::string port_set_name(std::uint32_t ports) {
  std::string out;
  for (std::uint32_t i = 0; i < kPorts; ++i)
    if (ports & (1u << i)) out += (out.empty() ? "" : ", ") + std::string(port_name(port_at(i)));
  return out.empty() ? "none" : out;
}

}  // namespace wafersim::fabric
