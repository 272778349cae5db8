#pragma once
// Energy windows of one wafer: per region and window, the dynamic energy of its PEs and
// routers by component (table energy-w<N>, in femtojoules), from the same cumulative counters
// the congestion and PE windows read at window boundaries (nothing added to a hot path); the
// regions' static power in meta.json; and the wafer's power as a timeline counter.

#include <cstdint>
#include <string>
#include <vector>

#include "energy/energy_model.h"
#include "fabric/mesh.h"
#include "hw/core/core_array.h"
#include "sim/trace/recorder.h"
#include "sim/trace/region_grid.h"

namespace wafersim::energy {

// Table `energy-w<wafer>` (docs/trace.md, docs/energy.md): keys x, y (the region's first PE);
// values compute (lanes, instructions, busy cycles), sram, fabric (router traversals, link
// hops, ramp crossings) and total, each the region's energy in the window rounded to a whole
// femtojoule (total is the sum of the rounded columns). A region's power in a window is
// total / window time + its static power (meta.json energy.wafers[].static_w per region).
// Summed over the windows of a whole-grid trace, the columns equal the run's energy.wafer
// components to within the rounding.
//
// Contract: the mesh must keep per-link counters (MeshOptions::trace_counters at least
// Routers); a producer of the source attached to the wafer's engine. Its power counter changes
// at most once over a run of skipped windows (at the first: every busy core sleeps through
// them alike), so registered before producers that write in every window, it leaves the
// timeline the same with and without idle skipping.
class EnergyWindowSampler final : public sim::trace::WindowProducer {
 public:
  EnergyWindowSampler(const hw::CoreArray& cores, const fabric::Mesh& mesh, const EnergyConfig& config, Scale scale,
                      std::uint32_t wafer, sim::trace::Recorder& recorder, const sim::trace::Rect& area);

  void close_window(std::uint64_t index, sim::Cycle start, sim::Cycle end) override;
  void skip_windows(std::uint64_t first, std::uint64_t count) override;
  void finish(std::uint64_t windows) override;

  static constexpr std::uint32_t kValues = 4;  // compute, sram, fabric, total

 private:
  void sample(sim::Cycle at);
  void power(sim::Picos at, double watts);

  const hw::CoreArray& cores_;
  const fabric::Mesh& mesh_;
  EnergyConfig config_;
  Scale scale_;
  std::uint32_t wafer_;
  sim::trace::Recorder& recorder_;
  sim::trace::RegionGrid grid_;
  sim::trace::WindowTable* table_ = nullptr;
  std::vector<Events> now_, last_;  // cumulative, per region
  std::vector<double> static_w_;    // per region
  double static_total_w_ = 0;
  std::uint64_t totals_[kValues] = {};
  double last_power_ = -1;
  sim::Cycle last_end_{0};
  std::string process_;
};

}  // namespace wafersim::energy
