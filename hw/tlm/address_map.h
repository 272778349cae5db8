#pragma once
// The wafer's host address map: one window per PE, row-major, each holding the PE's SRAM
// at its start and a small block of control registers at its end.

#include <cstdint>
#include <optional>

#include "hw/types.h"

namespace wafersim::hw {

// address = (y * width + x) * window + offset. The window is the smallest power of two that
// holds the SRAM and the control block; offsets between the two are not mapped.
class AddressMap {
 public:
  static constexpr std::uint32_t kControlBytes = 16;
  // Control registers (32-bit, at window - kControlBytes + ...).
  static constexpr std::uint32_t kActivate = 0;  // write: activate the local task with this id
  static constexpr std::uint32_t kStatus = 4;    // read: bit 0 busy, bit 1 a program is loaded
  static constexpr std::uint32_t kCycleLo = 8;   // read: the wafer cycle, low and high words
  static constexpr std::uint32_t kCycleHi = 12;

  AddressMap(std::uint32_t width, std::uint32_t height, std::uint32_t sram_bytes)
      : width_(width), height_(height), sram_bytes_(sram_bytes) {
    window_ = 1;
    while (window_ < std::uint64_t{sram_bytes} + kControlBytes) window_ <<= 1;
  }

  struct Decoded {
    PeCoord pe;
    std::uint64_t offset;  // within the window
  };

  [[nodiscard]] std::uint64_t window() const { return window_; }
  [[nodiscard]] std::uint64_t size() const { return window_ * width_ * height_; }
  [[nodiscard]] std::uint64_t control_base() const { return window_ - kControlBytes; }
  [[nodiscard]] std::uint32_t sram_bytes() const { return sram_bytes_; }
  [[nodiscard]] std::uint64_t address(PeCoord pe, std::uint64_t offset) const {
    return (std::uint64_t{pe.y} * width_ + pe.x) * window_ + offset;
  }
  // The PE and offset of an address, or nothing beyond the last PE.
  [[nodiscard]] std::optional<Decoded> decode(std::uint64_t addr) const {
    const std::uint64_t pe = addr / window_;
    if (pe >= std::uint64_t{width_} * height_) return std::nullopt;
    return Decoded{PeCoord{static_cast<std::uint16_t>(pe % width_), static_cast<std::uint16_t>(pe / width_)},
                   addr % window_};
  }

 private:
  std::uint32_t width_, height_, sram_bytes_;
  std::uint64_t window_;
};

}  // namespace wafersim::hw
