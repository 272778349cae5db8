#pragma once
// Activity counters of one PE, incremented on the hot path and read when stats are dumped.

#include <cstdint>

#include "hw/core/stall.h"

namespace wafersim::hw {

struct CoreCounters {
  std::uint64_t busy_cycles = 0;       // a task running or a vector operation in flight
  std::uint64_t instructions = 0;      // instructions issued (scalar and vector)
  std::uint64_t vector_ops = 0;        // vector instructions completed
  std::uint64_t vector_elements = 0;   // elements processed by vector instructions
  std::uint64_t flops = 0;             // floating-point operations (FMAC = 2)
  std::uint64_t task_activations = 0;  // tasks started
  std::uint64_t wavelets_in = 0;       // wavelets taken from the ramp
  std::uint64_t wavelets_out = 0;      // wavelets sent into the ramp
  std::uint64_t sram_reads = 0;        // read port accesses (one port word each)
  std::uint64_t sram_writes = 0;       // write port accesses
  std::uint64_t sram_bytes_read = 0;   // element bytes read by instructions
  std::uint64_t sram_bytes_written = 0;
  std::uint64_t finish_cycle = 0;  // one past the last busy cycle
  std::uint64_t stall[kStallCauses] = {};

  [[nodiscard]] std::uint64_t stall_total() const {
    std::uint64_t s = 0;
    for (auto v : stall) s += v;
    return s;
  }
};

}  // namespace wafersim::hw
