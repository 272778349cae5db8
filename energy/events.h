#pragma once
// The events energy is counted in, and the one mapping from the simulation's counters to them:
// the statistics tree's counters by name (a run's totals, a compiled step's activity, a wafer
// run recorded elsewhere), a core's CoreCounters and a router's link counters (trace windows).
// docs/energy.md lists every event and the counter it comes from.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/core/core_counters.h"
#include "sim/stats/stats.h"

namespace wafersim::energy {

// Counts of the events of one run, one step or one window. Whole numbers, kept exactly.
struct Events {
  std::array<std::uint64_t, hw::kLaneKinds> lanes{};  // lane operations by hw::lane_kind
  std::uint64_t instructions = 0;                     // instructions issued
  std::uint64_t busy_cycles = 0;                      // PE-cycles with a task or vector operation
  std::uint64_t sram_reads = 0, sram_writes = 0;      // SRAM port accesses (one port word each)
  std::uint64_t flops = 0;                            // floating-point operations (FMAC = 2)
  std::uint64_t router_traversals = 0;                // wavelets through a router output
  std::uint64_t link_hops = 0;                        // of those, to a neighbour or an edge channel
  std::uint64_t ramp_crossings = 0;                   // delivered to a PE or sent by its core
  std::uint64_t edge_bits = 0;                        // bits through the wafer's edge (system I/O)
  std::uint64_t swarmx_bytes = 0;                     // bytes sent on SwarmX ports
  std::uint64_t dram_read_bytes = 0, dram_write_bytes = 0;
  std::uint64_t flash_read_bytes = 0, flash_write_bytes = 0;
  std::uint64_t optimizer_params = 0;  // parameters updated by MemoryX's optimizer

  Events& operator+=(const Events& o);
  // Count by count; o must not exceed *this (an earlier sample of the same counters).
  Events& operator-=(const Events& o);
  // Every count times k (a run recorded once that stands for k identical ones).
  [[nodiscard]] Events times(std::uint64_t k) const;
  friend bool operator==(const Events& a, const Events& b);
};

// The counters a wafer's events are read from, as stat paths relative to a wafer's group
// (cores.*, fabric.*): what a step's activity must record for wafer_events() to read it.
const std::vector<std::string>& wafer_counter_paths();

// The events of one wafer's cores and fabric under group `wafer` (the paths above; absent
// ones count nothing). Edge traffic is not here (see run_events).
Events wafer_events(const sim::stats::Group& wafer);

// The wafers' groups of a run: wafer<N> below `cluster` (a platform's module tree) or below
// the root (a wafer built alone, as traffic runs do), in the tree's order.
std::vector<const sim::stats::Group*> wafer_groups(const sim::stats::Group& root);

// Where a run's events are found, beside the platform's wavelet width (edge streams of
// compiled models count wavelets).
struct RunLayout {
  std::uint64_t wavelet_bits = 32;
};

// Every event of a run under the statistics root: each wafer's cores and fabric
// (wafer_groups), the edge streams of compiled steps (model.<step>.wavelets_in/out) and
// the wafers' chunk-link ports (weights_in<P>, gradients_out<P>), SwarmX's ports
// (down_out<C>, up_out), MemoryX's DRAM, flash and optimizer. A training run's wafer compute,
// recorded once in training.wafer_run for one step of one wafer, is not included here.
Events run_events(const sim::stats::Group& root, const RunLayout& layout);

// The edge events of one compiled step's group (wavelets_in + wavelets_out, in bits), and of
// every step below a wafer's `model` group.
std::uint64_t step_edge_bits(const sim::stats::Group& step, const RunLayout& layout);
std::uint64_t model_edge_bits(const sim::stats::Group& model, const RunLayout& layout);

// Adds a core's counters (trace windows: a region's cores between two window boundaries).
void add_core(Events& e, const hw::CoreCounters& c);
// Adds wavelets forwarded through a router's outputs, port p (0 north, 1 east, 2 south,
// 3 west, 4 ramp): a ramp output delivers to the PE (a ramp crossing); the others are hops.
void add_router_port(Events& e, std::uint32_t port, std::uint64_t forwarded);

}  // namespace wafersim::energy
