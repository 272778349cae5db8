#pragma once
// Congestion windows of one wafer's fabric: per region, link direction and (optionally)
// color, the wavelets forwarded, the credit-stall cycles and the queue-occupancy integral of
// every window, from the mesh's cumulative counters sampled at window boundaries (nothing
// is added to the router hot path). Also the fabric throughput as timeline counters.

#include <cstdint>
#include <vector>

#include "fabric/mesh.h"
#include "sim/trace/recorder.h"
#include "sim/trace/region_grid.h"

namespace wafersim::fabric::trace {

// Table `fabric-w<wafer>` (docs/trace.md): keys x, y (the region's first router), dir
// (0 north, 1 east, 2 south, 3 west, 4 ramp) and, per color, color; values forwarded (the
// output towards dir), stalled (output-color-cycles without credit on it) and occupancy (the
// input queues from dir, wavelet-cycles). Summed over all rows of a whole-grid trace they
// equal the fabric statistics wavelets_forwarded, credit_stalls and occupancy_integral.
//
// Contract: the mesh must keep per-link counters (MeshOptions::trace_counters at least
// Routers, Links for colors); the sampler is a producer of the source attached to the
// mesh's engine (or is closed by hand in tests).
class MeshWindowSampler final : public sim::trace::WindowProducer {
 public:
  MeshWindowSampler(const Mesh& mesh, std::uint32_t wafer, sim::trace::Recorder& recorder, const sim::trace::Rect& area,
                    bool by_color);

  [[nodiscard]] const sim::trace::RegionGrid& grid() const { return grid_; }
  [[nodiscard]] bool by_color() const { return by_color_; }

  void close_window(std::uint64_t index, sim::Cycle start, sim::Cycle end) override;
  void skip_windows(std::uint64_t first, std::uint64_t count) override;
  void finish(std::uint64_t windows) override;

 private:
  static constexpr std::uint32_t kValues = 3;
  void sample();
  void counters(sim::Picos at, double forwarded, double stalled, double occupancy);

  const Mesh& mesh_;
  std::uint32_t wafer_;
  sim::trace::Recorder& recorder_;
  sim::trace::RegionGrid grid_;
  bool by_color_;
  std::uint32_t colors_;  // color slots per (cell, dir): the mesh's colors, or 1 (all)
  sim::trace::WindowTable* table_;
  std::vector<std::uint64_t> now_, last_;  // cumulative [cell][dir][color][value]
  std::uint64_t totals_[kValues] = {};
  bool counters_zero_ = true;
  sim::Cycle last_end_{0};
  std::string process_;
};

}  // namespace wafersim::fabric::trace
