#pragma once
// The mesh's schedule of failures while running and what they did (Mesh::set_outages).

#include <cstdint>
#include <vector>

#include "fabric/mesh.h"
#include "fabric/outage.h"
#include "fabric/reroute.h"

namespace wafersim::fabric {

struct Mesh::Outages {
  std::vector<Outage> schedule;  // by cycle
  std::size_t next = 0;          // the first not yet taken effect
  bool reroute = false;
  DeadParts dead;  // every part failed so far
  std::vector<OutageRecord> records;
  std::uint64_t applied = 0, rebuilds = 0, rewritten = 0, extra_hops = 0;
};

}  // namespace wafersim::fabric
