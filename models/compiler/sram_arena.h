#pragma once
// The SRAM of every used PE as the compiler hands it out: a buffer has the same address on
// every PE (sized for the PE that needs most), allocated first-fit and freed when its last
// user has run.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wafersim::models::compiler {

class SramArena {
 public:
  struct Block {
    std::uint32_t addr = 0, bytes = 0;
    std::string name;
  };

  explicit SramArena(std::uint32_t capacity) : capacity_(capacity) {}

  // The lowest address a with a % align == phase where `bytes` fit, or nothing.
  std::optional<std::uint32_t> allocate(const std::string& name, std::uint32_t bytes, std::uint32_t align = 8,
                                        std::uint32_t phase = 0);
  void release(std::uint32_t addr);

  [[nodiscard]] std::uint32_t capacity() const { return capacity_; }
  [[nodiscard]] std::uint64_t in_use() const;
  [[nodiscard]] std::uint32_t peak() const { return peak_; }              // highest end address ever allocated
  [[nodiscard]] const std::vector<Block>& live() const { return live_; }  // by address

 private:
  std::uint32_t capacity_;
  std::vector<Block> live_;
  std::uint32_t peak_ = 0;
};

}  // namespace wafersim::models::compiler
