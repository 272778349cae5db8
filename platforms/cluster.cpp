#include "platforms/cluster.h"

#include <string>

#include "platforms/memory_estimate.h"

namespace wafersim::platforms {

Cluster::Cluster(const sc_core::sc_module_name& name, PlatformSpec spec, const BuildOptions& options,
                 sim::stats::Group& stats)
    : sc_core::sc_module(name), spec_(std::move(spec)) {
  check_memory(estimate_memory(spec_, Workload{options.synthetic_traffic, spec_.cluster.systems}), options.max_memory);
  auto& g = stats.group(basename());
  g.formula(
      "systems", [this] { return static_cast<double>(spec_.cluster.systems); }, "systems",
      "CS-X systems in the cluster", true);
  for (std::uint32_t i = 0; i < spec_.cluster.systems; ++i)
    wafers_.push_back(std::make_unique<Wafer>(("wafer" + std::to_string(i)).c_str(), spec_, options, g));
}

}  // namespace wafersim::platforms
