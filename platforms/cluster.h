#pragma once
// The platform's systems as a SystemC module tree: cluster -> wafers. Children are owned by
// their parents. (A training run's MemoryX and SwarmX tree are assembled by
// platforms/streaming_cluster around stand-ins for the wafers.)

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
