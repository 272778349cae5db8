#pragma once
// The whole platform as a SystemC module tree: cluster -> wafers (and, as they land,
// MemoryX and the SwarmX tree). Children are owned by their parents.

#include <systemc>

#include <memory>
#include <vector>

#include "platforms/platform_spec.h"
#include "platforms/wafer.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms {

class Cluster : public sc_core::sc_module {
 public:
  // `stats` is the root group; the cluster adds its own group named after itself.
  Cluster(const sc_core::sc_module_name& name, PlatformSpec spec, const BuildOptions& options,
          sim::stats::Group& stats);

  [[nodiscard]] const PlatformSpec& spec() const { return spec_; }
  [[nodiscard]] std::size_t wafer_count() const { return wafers_.size(); }
  [[nodiscard]] Wafer& wafer(std::size_t i) { return *wafers_.at(i); }

 private:
  PlatformSpec spec_;
  std::vector<std::unique_ptr<Wafer>> wafers_;
};

}  // namespace wafersim::platforms
