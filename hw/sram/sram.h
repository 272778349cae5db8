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
  // Little-endian loads and stores of aligned 16- and 32-bit words.
  [[nodiscard]] std::uint32_t load(std::uint32_t addr, unsigned bytes) const;
  void store(std::uint32_t addr, unsigned bytes, std::uint32_t value);

  // The page holding `addr`, allocated if needed (for DMI); `page_base` receives its address.
  std::uint8_t* page(std::uint32_t addr, std::uint32_t* page_base);

 private:
  [[nodiscard]] const std::uint8_t* find(std::uint32_t page) const;
  std::uint8_t* make(std::uint32_t page);

  std::uint32_t capacity_;
  std::unique_ptr<std::unique_ptr<std::uint8_t[]>[]> pages_;
};

}  // namespace wafersim::hw
