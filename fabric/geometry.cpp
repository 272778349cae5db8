#include "fabric/geometry.h"

#include <fmt/format.h>

namespace wafersim::fabric {

MeshGeometry::MeshGeometry(std::uint32_t width, std::uint32_t height, std::uint32_t edge_channels)
    : width_(width),
      height_(height),
      edge_channels_(edge_channels < height ? edge_channels : height),
      row_channel_(height, kNone) {
  for (std::uint32_t i = 0; i < edge_channels_; ++i) {
    auto row = static_cast<std::uint32_t>((2ULL * i + 1) * height_ / (2ULL * edge_channels_));
    channel_rows_.push_back(row);
    row_channel_[row] = i;
  }
}

std::uint32_t MeshGeometry::neighbour(std::uint32_t r, Port p) const {
  const std::uint32_t x = r % width_, y = r / width_;
  switch (p) {
    case Port::North:
      return y > 0 ? r - width_ : kNone;
    case Port::South:
      return y + 1 < height_ ? r + width_ : kNone;
    case Port::West:
      return x > 0 ? r - 1 : kNone;
    case Port::East:
      return x + 1 < width_ ? r + 1 : kNone;
    case Port::Ramp:
      return kNone;
  }
  return kNone;
}

std::uint32_t MeshGeometry::channel_at_row(EdgeSide, std::uint32_t y) const {
  return y < height_ ? row_channel_[y] : kNone;
}

std::uint32_t MeshGeometry::channel_beyond(std::uint32_t r, Port p) const {
  const std::uint32_t x = r % width_, y = r / width_;
  if (p == Port::West && x == 0) return channel_at_row(EdgeSide::West, y);
  if (p == Port::East && x + 1 == width_) return channel_at_row(EdgeSide::East, y);
  return kNone;
}

std::string MeshGeometry::name(std::uint32_t r) const { return fmt::format("({}, {})", r % width_, r / width_); }

}  // namespace wafersim::fabric
