#include "fabric/defects/wafer_remap.h"

#include <fmt/format.h>

#include "fabric/defects/defect_map.h"
#include "fabric/defects/remap.h"
#include "sim/errors.h"

namespace wafersim::fabric::defects {

WaferRemap remap_wafer(const PhysicalArray& array, const RedundancyConfig& redundancy, const DefectConfig& defects,
                       std::uint32_t wafer) {
  const Remap remap(DefectMap::from_config(array, defects, wafer), redundancy);
  if (!remap.ok())
    throw sim::InputError(fmt::format(
        "defects: wafer {} ({} dead cores{}) cannot present its {} x {} grid on its {} x {} physical array: {}", wafer,
        remap.defects().dead().size(),
        defects.file.empty() ? fmt::format(", defects.seed {}", defects.seed) : ", from " + defects.file,
        array.logical_width(), array.logical_height(), array.width(), array.height(), remap.failure()));
  WaferRemap r;
  r.wafer = wafer;
  r.physical_cores = array.cores();
  r.logical_cores = array.logical_cores();
  r.summary = remap.summary();
  r.delays = remap.link_delays(redundancy.bypass_latency);
  return r;
}

void add_stats(sim::stats::Group& g, const WaferRemap& r) {
  const RemapSummary& s = r.summary;
  g.formula(
      "physical_cores", [&r] { return static_cast<double>(r.physical_cores); }, "cores",
      "cores of the physical array, spares included", true);
  g.formula(
      "dead_cores", [&s] { return static_cast<double>(s.dead); }, "cores",
      "dead cores (a dead link retires one of its two)", true);
  g.formula(
      "detour_links", [&s] { return static_cast<double>(s.detour_links); }, "links",
      "logical links longer than one physical hop", true);
  g.formula(
      "extra_hops", [&s] { return static_cast<double>(s.extra_hops); }, "hops",
      "hops the detours add, over all logical links", true);
  g.formula(
      "mean_stretch", [&s] { return s.mean_stretch(); }, "hops/link", "physical hops per logical link");
  g.formula(
      "worst_stretch", [&s] { return static_cast<double>(s.worst_stretch()); }, "hops",
      "physical hops of the longest logical link", true);
}

}  // namespace wafersim::fabric::defects
