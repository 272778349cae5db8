#pragma once
// Resolved configuration of one processing element (core + SRAM) and of the PE grid.

#include <cstdint>

#include "sim/config/schema.h"
#include "sim/types.h"
#include "sim/units/quantity.h"

namespace wafersim::hw {

// Local SRAM of one PE.
struct SramConfig {
  units::DataSize size;        // capacity
  std::uint32_t banks = 8;     // independently addressable banks, word-interleaved
  units::DataSize bank_width;  // width of one bank word
  std::uint32_t read_ports = 2;
  std::uint32_t write_ports = 1;
  units::DataSize port_width;  // bits moved by one port access per cycle
};

// Vector lanes per cycle for each number format (FMACs per cycle at full rate).
struct SimdLanes {
  std::uint32_t fp16 = 4;
  std::uint32_t bf16 = 4;
  std::uint32_t fp32 = 1;
};

// Pipeline latencies of the core's functional units (none are published: assumptions).
struct LatencyConfig {
  sim::Cycle scalar;        // scalar ALU op, compare, branch
  sim::Cycle vector_start;  // issue to first element of a vector op (descriptor setup)
  sim::Cycle mov;           // copy (FMOV) pipeline depth
  sim::Cycle add;           // FP add/sub/min/max pipeline depth
  sim::Cycle mul;           // FP multiply pipeline depth
  sim::Cycle fmac;          // fused multiply-accumulate pipeline depth
  sim::Cycle exp;           // exponential per element (iterative unit)
  sim::Cycle recip;         // reciprocal per element (iterative unit)
  sim::Cycle task_switch;   // from activation to a task's first instruction
  // From a vector step to the first step of the next operation of the same ordered
  // microthread that reads what it wrote (results forwarded between the operations).
  sim::Cycle forward;
};

struct PeConfig {
  SramConfig sram;
  SimdLanes simd_lanes;
  std::uint32_t microthreads = 8;
  LatencyConfig latency;

  static PeConfig read(sim::config::Section s);
  // SRAM bytes a PE can move per cycle through all of its ports.
  [[nodiscard]] std::uint64_t sram_bytes_per_cycle() const;
};

// The wafer's PE grid and clock.
struct WaferConfig {
  std::uint32_t width = 8;
  std::uint32_t height = 8;
  units::Frequency clock{1.1e9};
  PeConfig pe;

  static WaferConfig read(sim::config::Section s);
  [[nodiscard]] std::uint64_t pe_count() const { return std::uint64_t{width} * height; }
};

}  // namespace wafersim::hw
