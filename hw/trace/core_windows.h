#pragma once
// PE windows of one wafer's cores: per region and window, the busy cycles, the thread-cycles
// stalled by cause and the work done (table pe-w<N>), and SRAM use (table sram-w<N>), from
// the cores' cumulative counters sampled at window boundaries (nothing added to the core's
// hot path). Also the PEs' mean busy fraction as a timeline counter.

#include <cstdint>
#include <string>
#include <vector>

#include "hw/core/core_array.h"
#include "sim/trace/recorder.h"
#include "sim/trace/region_grid.h"

namespace wafersim::hw::trace {

// Table `pe-w<wafer>` (docs/trace.md): keys x, y (the region's first PE); values busy (cycles
// a task ran or a vector operation was in flight, summed over the region's PEs), instructions,
// vector_elements, flops, wavelets_in, wavelets_out and one column per stall cause
// (thread-cycles). Table `sram-w<wafer>`: keys x, y; values reads, writes (port accesses),
// bytes_read, bytes_written and in_use (bytes the loaded programs occupy: a level, merged by
// max). Summed over all windows of a whole-grid trace the counts equal the cores' statistics.
//
// Contract: a producer of the source attached to the cores' engine (or closed by hand in
// tests). Cores loaded during the run are sampled from their load on.
class CoreWindowSampler final : public sim::trace::WindowProducer {
 public:
  CoreWindowSampler(const CoreArray& cores, std::uint32_t wafer, sim::trace::Recorder& recorder,
                    const sim::trace::Rect& area);

  [[nodiscard]] const sim::trace::RegionGrid& grid() const { return grid_; }

  void close_window(std::uint64_t index, sim::Cycle start, sim::Cycle end) override;
  void skip_windows(std::uint64_t first, std::uint64_t count) override;
  void finish(std::uint64_t windows) override;

  static constexpr std::uint32_t kPeValues = 6 + kStallCauses;
  static constexpr std::uint32_t kSramValues = 5;

 private:
  static constexpr std::uint32_t kValues = kPeValues + kSramValues;
  void sample(sim::Cycle at);

  const CoreArray& cores_;
  std::uint32_t wafer_;
  sim::trace::Recorder& recorder_;
  sim::trace::RegionGrid grid_;
  sim::trace::WindowTable* pe_table_ = nullptr;
  sim::trace::WindowTable* sram_table_ = nullptr;
  std::vector<std::uint64_t> now_, last_;  // cumulative [cell][value]; in_use is a level
  std::vector<std::uint64_t> totals_;
  std::uint64_t max_loaded_ = 0;
  bool counter_zero_ = true;
  sim::Cycle last_end_{0};
  std::string process_;
};

}  // namespace wafersim::hw::trace
