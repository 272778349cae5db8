#pragma once
// Windows of one co-simulated wafer's edge (platforms/edge/wafer_edge.h): per window, the
// wavelets it put into the mesh (weights) and took out (gradients), and the cycles it waited
// and why (table edge-w<N>, docs/trace.md), from the edge's cumulative counters sampled at
// window boundaries. Between MemoryX's and SwarmX's links (links.csv) and the PEs' fabric
// inputs (pe-w<N>.csv) it is the step of the weights' path where they enter the wafer.

#include <array>
#include <cstdint>

#include "platforms/edge/wafer_edge.h"
#include "sim/trace/recorder.h"

namespace wafersim::platforms {

// Table `edge-w<wafer>`: key wafer; values wavelets_in, wavelets_out, starved, fabric_blocked,
// io_limited_in, io_limited_out, held_gradients. Summed over all windows they equal the
// edge's statistics (cluster.wafer<N>.edge.*).
//
// Contract: a producer of the source attached to the edge's wafer engine.
class EdgeWindowSampler final : public sim::trace::WindowProducer {
 public:
  EdgeWindowSampler(const edge::WaferEdge& edge, std::uint32_t wafer, sim::trace::Recorder& recorder);

  void close_window(std::uint64_t index, sim::Cycle start, sim::Cycle end) override;
  void skip_windows(std::uint64_t first, std::uint64_t count) override;
  void finish(std::uint64_t windows) override;

  static constexpr std::size_t kValues = 7;

 private:
  [[nodiscard]] std::array<std::uint64_t, kValues> sample(sim::Cycle at) const;

  const edge::WaferEdge& edge_;
  std::uint32_t wafer_;
  sim::trace::Recorder& recorder_;
  sim::trace::WindowTable* table_ = nullptr;
  std::array<std::uint64_t, kValues> last_{};
};

}  // namespace wafersim::platforms
