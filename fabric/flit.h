#pragma once
// A wavelet as the fabric stores it: the 32-bit payload plus the bits the routers and the
// synthetic-traffic endpoints need (control, packet head and tail, a user tag).

#include <cstdint>

namespace wafersim::fabric {

struct Flit {
  std::uint32_t payload = 0;
  std::uint32_t info = 0;  // bit 0 control, bit 1 head, bit 2 tail, bits 3.. tag

  static constexpr std::uint32_t kControl = 1u << 0;
  static constexpr std::uint32_t kHead = 1u << 1;
  static constexpr std::uint32_t kTail = 1u << 2;
  static constexpr std::uint32_t kTagBits = 29;
  static constexpr std::uint32_t kTagMask = (1u << kTagBits) - 1;

  static constexpr Flit make(std::uint32_t payload, std::uint32_t tag, bool head, bool tail, bool control = false) {
    return Flit{payload,
                ((tag & kTagMask) << 3) | (head ? kHead : 0u) | (tail ? kTail : 0u) | (control ? kControl : 0u)};
  }
  [[nodiscard]] constexpr bool control() const { return (info & kControl) != 0; }
  [[nodiscard]] constexpr bool head() const { return (info & kHead) != 0; }
  [[nodiscard]] constexpr bool tail() const { return (info & kTail) != 0; }
  [[nodiscard]] constexpr std::uint32_t tag() const { return info >> 3; }
};

// Packet-switched (XY) mode: a head wavelet's payload names its destination router.
constexpr std::uint32_t pack_destination(std::uint32_t x, std::uint32_t y) { return (y << 16) | (x & 0xffffu); }
constexpr std::uint32_t destination_x(std::uint32_t payload) { return payload & 0xffffu; }
constexpr std::uint32_t destination_y(std::uint32_t payload) { return payload >> 16; }

}  // namespace wafersim::fabric
