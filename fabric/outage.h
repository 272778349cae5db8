#pragma once
// A part of the fabric that stops working while a run goes on: a link between two routers, or a
// whole PE (its core and its router) (docs/defects.md, "Failures while running").

#include <cstdint>
#include <functional>
#include <string>

#include "fabric/port.h"

namespace wafersim::fabric {

struct Outage {
  std::uint64_t cycle = 0;  // the first cycle in which the part no longer works
  std::uint32_t router = 0;
  // A link: its side at `router` (north, east, south or west; both directions fail). A PE:
  // Port::Ramp, the router and its core.
  Port port = Port::Ramp;
  // For a PE: why its core cannot stop now (a program running), or "" if it can; called when
  // the outage takes effect. Unset: the core is not asked.
  std::function<std::string()> core_busy;
  [[nodiscard]] bool pe() const { return port == Port::Ramp; }
};

// What an outage did when it took effect, for the run's report.
struct OutageRecord {
  std::uint64_t cycle = 0;  // when it took effect (its cycle, or the fabric's next active cycle)
  std::string part;         // "link (3, 4) east - (4, 4) west", "PE (3, 4)"
  std::string outcome;      // "no route used it", "2 routes rebuilt: ..."
  std::uint64_t routes_rewritten = 0, extra_hops = 0;
};

}  // namespace wafersim::fabric
