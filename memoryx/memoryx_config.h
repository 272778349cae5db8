#pragma once
// Resolved configuration of MemoryX: the DRAM and flash tiers and the optimizer engine.

#include <cstdint>

#include "sim/config/schema.h"
#include "sim/units/quantity.h"

namespace wafersim::memoryx {

struct TierConfig {
  units::DataSize capacity;
  units::Bandwidth read_bandwidth;
  units::Bandwidth write_bandwidth;
  units::Duration read_latency;
  units::Duration write_latency;
  units::DataSize page_size;  // access granularity (flash pages; DRAM bursts)
};

struct MemoryXConfig {
  TierConfig dram;
  TierConfig flash;
  units::ParamRate optimizer_throughput{50e9};
  std::uint32_t bytes_per_param = 20;  // FP32 master weight, two Adam moments, gradient, ...
  std::uint32_t prefetch_depth = 1;    // flash-resident streams staged ahead of the one streaming

  static MemoryXConfig read(sim::config::Section s);
  [[nodiscard]] std::uint64_t capacity_bytes() const { return dram.capacity.bytes() + flash.capacity.bytes(); }
};

}  // namespace wafersim::memoryx
