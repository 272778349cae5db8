#pragma once
// The contents of one PE's SRAM. Pages are allocated on first write, so an untouched PE
// costs one pointer and reads of untouched memory return zeros.

#include <cstdint>
#include <memory>

namespace wafersim::hw {

// Contract: callers check bounds (in_range) before every access; an access beyond
// capacity is the caller's error to report (naming the PE and address), never a wrap.
class Sram {
 public:
  static constexpr std::uint32_t kPageBytes = 4096;

  explicit Sram(std::uint32_t capacity) : capacity_(capacity) {}

  [[nodiscard]] std::uint32_t capacity() const { return capacity_; }
  [[nodiscard]] bool in_range(std::uint64_t addr, std::uint64_t bytes) const {
    return addr <= capacity_ && bytes <= capacity_ - addr;
  }
  // Whether any page has been written.
  [[nodiscard]] bool touched() const { return pages_ != nullptr; }
  [[nodiscard]] std::uint64_t allocated_bytes() const;

  void read(std::uint32_t addr, void* out, std::uint32_t bytes) const;
  void write(std::uint32_t addr, const void* in, std::uint32_t bytes);
  // Little-endian loads and stores of aligned 16- and 32-bit words (inline: every vector
  // element does one or more).
  [[nodiscard]] std::uint32_t load(std::uint32_t addr, unsigned bytes) const {
    const std::uint8_t* p = find(addr / kPageBytes);
    if (!p) return 0;
    p += addr % kPageBytes;
    return bytes == 4
               ? std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24
               : std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8;
  }
  void store(std::uint32_t addr, unsigned bytes, std::uint32_t value) {
    std::uint8_t* page = pages_ ? pages_[addr / kPageBytes].get() : nullptr;
    std::uint8_t* p = (page ? page : make(addr / kPageBytes)) + addr % kPageBytes;
    p[0] = static_cast<std::uint8_t>(value);
    p[1] = static_cast<std::uint8_t>(value >> 8);
    if (bytes == 4) {
      p[2] = static_cast<std::uint8_t>(value >> 16);
      p[3] = static_cast<std::uint8_t>(value >> 24);
    }
  }

  // The bytes from `addr` to the end of its page: null when the page was never written
  // (reads there return zeros); for writing, allocated if needed.
  [[nodiscard]] const std::uint8_t* bytes_at(std::uint32_t addr) const {
    const std::uint8_t* p = find(addr / kPageBytes);
    return p ? p + addr % kPageBytes : nullptr;
  }
  std::uint8_t* bytes_for_write(std::uint32_t addr) {
    std::uint8_t* page = pages_ ? pages_[addr / kPageBytes].get() : nullptr;
    return (page ? page : make(addr / kPageBytes)) + addr % kPageBytes;
  }

  // The page holding `addr`, allocated if needed (for DMI); `page_base` receives its address.
  std::uint8_t* page(std::uint32_t addr, std::uint32_t* page_base);

 private:
  [[nodiscard]] const std::uint8_t* find(std::uint32_t page) const { return pages_ ? pages_[page].get() : nullptr; }
  std::uint8_t* make(std::uint32_t page);

  std::uint32_t capacity_;
  std::unique_ptr<std::unique_ptr<std::uint8_t[]>[]> pages_;
};

}  // namespace wafersim::hw
