#include "models/compiler/sram_arena.h"

#include <algorithm>
#include <stdexcept>

namespace wafersim::models::compiler {

std::optional<std::uint32_t> SramArena::allocate(const std::string& name, std::uint32_t bytes, std::uint32_t align,
                                                 std::uint32_t phase) {
  auto fit_from = [&](std::uint64_t from) {
    std::uint64_t a = (from + align - 1 - phase) / align * align + phase;
    if (a < from) a += align;
    return a;
  };
  std::uint64_t cursor = 0;
  std::size_t at = 0;
  for (; at <= live_.size(); ++at) {
    const std::uint64_t a = fit_from(cursor);
    const std::uint64_t end = at < live_.size() ? live_[at].addr : capacity_;
    if (a + bytes <= end) {
      if (a + bytes > capacity_) return std::nullopt;
      live_.insert(live_.begin() + static_cast<long>(at), Block{static_cast<std::uint32_t>(a), bytes, name});
      peak_ = std::max<std::uint32_t>(peak_, static_cast<std::uint32_t>(a + bytes));
      return static_cast<std::uint32_t>(a);
    }
    if (at < live_.size()) cursor = std::uint64_t{live_[at].addr} + live_[at].bytes;
  }
  return std::nullopt;
}

void SramArena::release(std::uint32_t addr) {
  auto it = std::find_if(live_.begin(), live_.end(), [&](const Block& b) { return b.addr == addr; });
  if (it == live_.end()) throw std::logic_error("SramArena: release of an unallocated address");
  live_.erase(it);
}

std::uint64_t SramArena::in_use() const {
  std::uint64_t n = 0;
  for (const auto& b : live_) n += b.bytes;
  return n;
}

}  // namespace wafersim::models::compiler
