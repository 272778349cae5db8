#pragma once
// Activity counters of one PE, incremented on the hot path and read when stats are dumped.

#include <cstdint>
#include <string_view>

#include "hw/core/stall.h"
#include "hw/isa/opcodes.h"
#include "hw/numerics/dtype.h"

namespace wafersim::hw {

// Lane operations (one element of a vector instruction, or one scalar floating-point
// instruction) are counted per datapath class and element type: kind = class x kLaneTypes +
// type, classes the latency classes mov, add, mul, fmac, exp, recip (isa::LatencyClass without
// Scalar), types the DType order f16, bf16, f32, u16, u32.
inline constexpr int kLaneClasses = 6;
inline constexpr int kLaneTypes = 5;
inline constexpr int kLaneKinds = kLaneClasses * kLaneTypes;
// The lane kind of an operation of latency class `c` (not Scalar) on elements of type `t`.
constexpr std::uint8_t lane_kind(isa::LatencyClass c, DType t) {
  return static_cast<std::uint8_t>((static_cast<int>(c) - 1) * kLaneTypes + static_cast<int>(t));
}
// "mov", "add", "mul", "fmac", "exp", "recip" for class 0 .. kLaneClasses - 1.
std::string_view lane_class_name(int lane_class);

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
  std::uint64_t lane_ops[kLaneKinds] = {};  // by lane_kind()

  [[nodiscard]] std::uint64_t stall_total() const {
    std::uint64_t s = 0;
    for (auto v : stall) s += v;
    return s;
  }
};

}  // namespace wafersim::hw
