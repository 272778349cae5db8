#pragma once
// The remap of a defective wafer: the logical grid programs see, built from the good cores of
// its physical array. Along each line (a column, with spare rows) the logical cores of a group
// take its good cores in order: a dead core is bypassed by the link between the good cores on
// either side of it, and the cores after it move one position on, into the group's spares.
// Across the lines, two logical neighbours sit as many positions apart as their lines' shifts
// differ, and the bypass link between them runs diagonally. A logical link costs its extra
// physical hops (the dead cores it passes over and the offset it bridges) times
// redundancy.bypass_latency, on top of fabric.hop_latency (docs/defects.md).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/defects/defect_map.h"
#include "fabric/defects/redundancy_config.h"
#include "fabric/defects/remap_summary.h"
#include "fabric/link_delays.h"
#include "fabric/port.h"

namespace wafersim::fabric::defects {

struct Cell {
  std::uint32_t x = 0, y = 0;
};

class Remap {
 public:
  Remap(const DefectMap& map, const RedundancyConfig& redundancy);

  // Whether the physical array presents the logical grid; why not.
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] const std::string& failure() const { return failure_; }
  [[nodiscard]] const PhysicalArray& array() const { return map_.array(); }
  [[nodiscard]] const DefectMap& defects() const { return map_; }

  // The physical core of logical core (x, y). Requires ok().
  [[nodiscard]] Cell physical(std::uint32_t x, std::uint32_t y) const;
  // The hops the logical link from (x, y) through port p (north, east, south or west) takes on
  // the physical fabric beyond one. Requires ok() and a neighbour beyond p.
  [[nodiscard]] std::uint32_t extra_hops(std::uint32_t x, std::uint32_t y, Port p) const;
  // Dead cores strictly between two positions of a line.
  [[nodiscard]] std::uint32_t dead_between(std::uint32_t line, std::uint32_t from, std::uint32_t to) const;

  // Every link visited (as summarize(), which must give the same). Requires ok().
  [[nodiscard]] RemapSummary summary() const;
  // Each logical link's extra latency, extra_hops x `bypass`; null when no link is longer.
  [[nodiscard]] std::shared_ptr<const LinkDelays> link_delays(sim::Cycle bypass) const;

 private:
  [[nodiscard]] std::uint32_t position(std::uint32_t line, std::uint32_t logical) const {
    return pos_[std::size_t{line} * array().logical_positions() + logical];
  }
  void require_ok(const char* what) const;

  DefectMap map_;
  RedundancyConfig redundancy_;
  bool ok_ = true;
  std::string failure_;
  std::vector<std::uint32_t> pos_;  // [line][logical position]: physical position
};

}  // namespace wafersim::fabric::defects
