#include "fabric/defects/redundancy_config.h"

namespace wafersim::fabric::defects {
using sim::Cycle;

RedundancyConfig RedundancyConfig::read(sim::config::Section s, const hw::WaferConfig& wafer) {
  RedundancyConfig c;
  const auto rows = static_cast<std::uint32_t>(
      s.integer("spare_rows", 0, 0, 4096, "spare rows of the physical array per group (0: none)"));
  const auto columns = static_cast<std::uint32_t>(
      s.integer("spare_columns", 0, 0, 4096, "spare columns of the physical array per group (0: none)"));
  c.group = static_cast<std::uint32_t>(
      s.integer("group", 0, 0, 4096,
                "logical rows (with spare_rows; columns with spare_columns) per group, each group's spares after "
                "its last; 0: one group, the spares at the array's far edge"));
  c.max_offset = static_cast<std::uint32_t>(
      s.integer("max_offset", 1, 0, 4096,
                "the largest offset, in rows (columns), between the physical cores of two logical neighbours "
                "across the spares' direction that a bypass link bridges (0: any)"));
  c.bypass_latency = s.cycles("bypass_latency", Cycle(1), Cycle(0), Cycle(1000),
                              "latency a logical link gains per dead core it passes over and per row (column) of "
                              "offset");
  c.reroute = s.boolean("reroute", false,
                        "rebuild the static routes around a link or PE that fails while running (else a static route "
                        "over it stops the run)");
  if (rows && columns) s.error("spare_columns", "spare rows and spare columns exclude each other; set one of them");
  c.axis = columns ? SpareAxis::Columns : SpareAxis::Rows;
  c.spares = columns ? columns : rows;
  const std::uint32_t side = c.axis == SpareAxis::Rows ? wafer.height : wafer.width;
  if (c.group >= side) c.group = 0;
  return c;
}

}  // namespace wafersim::fabric::defects
