#include "hw/sram/sram.h"

#include <algorithm>
#include <cstring>

namespace wafersim::hw {

std::uint8_t* Sram::make(std::uint32_t page) {
  if (!pages_) pages_ = std::make_unique<std::unique_ptr<std::uint8_t[]>[]>((capacity_ + kPageBytes - 1) / kPageBytes);
  auto& p = pages_[page];
  if (!p) p = std::make_unique<std::uint8_t[]>(kPageBytes);  // value-initialised: zeros
  return p.get();
}

std::uint64_t Sram::allocated_bytes() const {
  if (!pages_) return 0;
  std::uint64_t n = 0;
  for (std::uint32_t i = 0; i < (capacity_ + kPageBytes - 1) / kPageBytes; ++i)
    if (pages_[i]) n += kPageBytes;
  return n;
}

void Sram::read(std::uint32_t addr, void* out, std::uint32_t bytes) const {
  auto* dst = static_cast<std::uint8_t*>(out);
  while (bytes > 0) {
    const std::uint32_t page = addr / kPageBytes, off = addr % kPageBytes;
    const std::uint32_t n = std::min(bytes, kPageBytes - off);
    if (const std::uint8_t* p = find(page))
      std::memcpy(dst, p + off, n);
    else
      std::memset(dst, 0, n);
    dst += n;
    addr += n;
    bytes -= n;
  }
}

void Sram::write(std::uint32_t addr, const void* in, std::uint32_t bytes) {
  const auto* src = static_cast<const std::uint8_t*>(in);
  while (bytes > 0) {
    const std::uint32_t page = addr / kPageBytes, off = addr % kPageBytes;
    const std::uint32_t n = std::min(bytes, kPageBytes - off);
    std::memcpy(make(page) + off, src, n);
    src += n;
    addr += n;
    bytes -= n;
  }
}

std::uint8_t* Sram::page(std::uint32_t addr, std::uint32_t* page_base) {
  *page_base = addr / kPageBytes * kPageBytes;
  return make(addr / kPageBytes);
}

}  // namespace wafersim::hw
