#pragma once
// Data-structure descriptors: what a vector instruction iterates over.

#include <cstdint>

#include "hw/numerics/dtype.h"

namespace wafersim::hw::isa {

// A memory vector (base, length, stride), a circular buffer, or a fabric stream.
// Addresses are byte offsets into the PE's SRAM; lengths, strides and sizes count elements.
struct Descriptor {
  enum class Kind : std::uint8_t { Mem, Circ, FabIn, FabOut };
  Kind kind = Kind::Mem;
  DType dtype = DType::F32;
  bool sparse = false;       // FabIn: each wavelet carries (index << 16 | 16-bit value)
  std::uint8_t color = 0;    // FabIn, FabOut
  std::uint32_t base = 0;    // Mem, Circ: byte address of element 0 (Circ: of the buffer)
  std::uint32_t length = 0;  // elements an instruction processes
  std::int32_t stride = 1;   // Mem: elements between consecutive accesses
  std::uint32_t size = 0;    // Circ: buffer size in elements
  std::uint32_t start = 0;   // Circ: index of element 0 within the buffer
  std::uint32_t repeat = 1;  // FabIn: consecutive elements that take one wavelet's payload

  [[nodiscard]] bool is_memory() const { return kind == Kind::Mem || kind == Kind::Circ; }
  [[nodiscard]] bool is_fabric() const { return kind == Kind::FabIn || kind == Kind::FabOut; }
  // Byte address of element i (Mem, Circ); may lie outside the SRAM (the caller checks).
  [[nodiscard]] std::int64_t address(std::uint32_t i) const {
    const std::int64_t esize = size_of(dtype);
    if (kind == Kind::Circ) return base + static_cast<std::int64_t>((std::uint64_t{start} + i) % size) * esize;
    return base + static_cast<std::int64_t>(i) * stride * esize;
  }
};

const char* kind_name(Descriptor::Kind k);

}  // namespace wafersim::hw::isa
