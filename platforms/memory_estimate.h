#pragma once
// The host memory a simulation will take, estimated from the platform and the workload
// before anything is built, so that a run too large for the machine is refused with the
// numbers (exit code 2) instead of failing midway for want of memory.

#include <cstdint>
#include <string>

#include "platforms/platform_spec.h"

namespace wafersim::platforms {

// What runs on the platform, as far as host memory goes.
struct Workload {
  bool synthetic_traffic = false;  // a traffic generator: sources and sinks on every router
  std::uint32_t wafers = 1;        // wafers built (a cluster builds spec.cluster.systems)
};

struct MemoryEstimate {
  // The whole process's peak, within a factor of 2 (docs/reliability.md), without the SRAM
  // pages that programs touch (at most the platform's SRAM; timing-only runs touch none).
  std::uint64_t bytes = 0;
  std::string breakdown;  // "N x M PEs: mesh A, cores B, traffic C, base D"
};

// Contract: a pure function of its arguments; the constants are fitted to measured peaks
// (tests/unit/memory_estimate_test.cpp checks three sizes within 2x).
MemoryEstimate estimate_memory(const PlatformSpec& spec, const Workload& workload);

// The memory this process may use: the smaller of the host's available memory
// (MemAvailable) and the cgroup's limit, when known; 0 when neither is.
std::uint64_t available_memory();

// Throws sim::InputError ("does not fit") with the estimate, its breakdown and the limit when
// the estimate exceeds `max_memory` (when non-zero) or the available memory.
void check_memory(const MemoryEstimate& estimate, std::uint64_t max_memory);

// "1.5 GiB"-style text of a byte count.
std::string memory_text(std::uint64_t bytes);

}  // namespace wafersim::platforms
