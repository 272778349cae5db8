#pragma once
// Resolved configuration of a wafer's manufacturing defects (the platform's `defects:`
// section): a density per mm^2 sampled with a seed over cores of a given area, or an explicit
// list of dead cores and dead links read from a file (docs/defects.md).

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/defects/physical_array.h"
#include "fabric/port.h"
#include "sim/config/schema.h"

namespace wafersim::fabric::defects {

// A core or link of the physical array, in physical coordinates.
struct DeadCore {
  std::uint32_t x = 0, y = 0;
};
struct DeadLink {
  std::uint32_t x = 0, y = 0;
  Port port = Port::East;  // north, east, south or west: the link between (x, y) and its neighbour there
};

struct DefectConfig {
  double density_per_mm2 = 0;  // expected defects per mm^2 of core silicon
  double core_area_mm2 = 0.05;
  std::uint64_t seed = 1;
  std::string file;  // the list's path as resolved (empty: none)
  std::vector<DeadCore> cores;
  std::vector<DeadLink> links;

  [[nodiscard]] bool any() const { return density_per_mm2 > 0 || !cores.empty() || !links.empty(); }
  // The probability that a core holds at least one defect (Poisson: 1 - exp(-density x area)).
  [[nodiscard]] double core_kill_probability() const;

  // Reads the section; a `file` is read at once (relative to the file that names it), its
  // entries checked against `array` (sim::config::ConfigError naming the list's line on error).
  static DefectConfig read(sim::config::Section s, const PhysicalArray& array);
};

// Reads a defect list (`cores: [{at: [x, y]}]`, `links: [{at: [x, y], port: east}]`) into
// `out`; throws sim::config::ConfigError with every problem found, each at its line.
void read_defect_list(const std::string& path, const PhysicalArray& array, DefectConfig& out);

}  // namespace wafersim::fabric::defects
