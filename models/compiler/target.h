#pragma once
// What the compiler compiles for: the wafer's PE grid and PE, and its fabric.

#include <cstdint>

#include "fabric/fabric_config.h"
#include "fabric/geometry.h"
#include "hw/numerics/dtype.h"
#include "hw/pe_config.h"

namespace wafersim::models::compiler {

struct Target {
  hw::WaferConfig wafer;
  fabric::FabricConfig fabric;

  [[nodiscard]] std::uint32_t width() const { return wafer.width; }
  [[nodiscard]] std::uint32_t height() const { return wafer.height; }
  [[nodiscard]] std::uint32_t sram_bytes() const { return static_cast<std::uint32_t>(wafer.pe.sram.size.bytes()); }
  [[nodiscard]] std::uint32_t lanes(hw::DType t) const {
    return t == hw::DType::F32    ? wafer.pe.simd_lanes.fp32
           : t == hw::DType::BF16 ? wafer.pe.simd_lanes.bf16
                                  : wafer.pe.simd_lanes.fp16;
  }
  // Dense peak of one PE in FLOP per cycle (an FMAC is 2 FLOP) for a number format.
  [[nodiscard]] double peak_flops_per_cycle(hw::DType t) const { return 2.0 * lanes(t); }
  [[nodiscard]] fabric::MeshGeometry geometry() const {
    return fabric::MeshGeometry(wafer.width, wafer.height, fabric.edge_io_channels);
  }
};

// A half-open range [lo, hi) of indices.
struct Span {
  std::uint64_t lo = 0, hi = 0;
  [[nodiscard]] std::uint64_t size() const { return hi - lo; }
  [[nodiscard]] bool empty() const { return hi == lo; }
};

// Part s of n of a range of `count` items, balanced: [s*count/n, (s+1)*count/n).
inline Span split(std::uint64_t count, std::uint64_t n, std::uint64_t s) {
  return {s * count / n, (s + 1) * count / n};
}

}  // namespace wafersim::models::compiler
