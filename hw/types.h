#pragma once
// Strong types shared by the PE core and the fabric: coordinates, colors, wavelets.

#include <cstdint>
#include <functional>

namespace wafersim::hw {

// A PE's position on the wafer: x is the column (west to east), y the row (north to south).
struct PeCoord {
  std::uint16_t x = 0;
  std::uint16_t y = 0;
  friend constexpr bool operator==(PeCoord a, PeCoord b) { return a.x == b.x && a.y == b.y; }
  friend constexpr bool operator!=(PeCoord a, PeCoord b) { return !(a == b); }
};

// A routable color (virtual channel), 0 .. colors-1.
class Color {
 public:
  constexpr Color() = default;
  constexpr explicit Color(std::uint8_t id) : id_(id) {}
  [[nodiscard]] constexpr std::uint8_t id() const { return id_; }
  friend constexpr bool operator==(Color a, Color b) { return a.id_ == b.id_; }
  friend constexpr bool operator!=(Color a, Color b) { return a.id_ != b.id_; }
  friend constexpr bool operator<(Color a, Color b) { return a.id_ < b.id_; }

 private:
  std::uint8_t id_ = 0;
};

// One 32-bit fabric word on a color. `control` marks control wavelets (task triggers).
struct Wavelet {
  std::uint32_t payload = 0;
  Color color;
  bool control = false;
};

}  // namespace wafersim::hw
