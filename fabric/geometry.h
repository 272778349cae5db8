#pragma once
// The shape of a mesh: its grid of routers, their neighbours, and the rows of the west and
// east edges that carry an I/O channel.

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/port.h"
#include "hw/types.h"

namespace wafersim::fabric {

enum class EdgeSide : std::uint8_t { West = 0, East = 1 };

// Routers are numbered row by row: router r sits at x = r % width, y = r / width.
class MeshGeometry {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  // `edge_channels` I/O channels on each of the west and east edges, spread evenly over
  // the rows: channel i sits on row (2i + 1) * height / (2 * edge_channels).
  MeshGeometry(std::uint32_t width, std::uint32_t height, std::uint32_t edge_channels);

  [[nodiscard]] std::uint32_t width() const { return width_; }
  [[nodiscard]] std::uint32_t height() const { return height_; }
  [[nodiscard]] std::uint32_t routers() const { return width_ * height_; }
  [[nodiscard]] std::uint32_t edge_channels() const { return edge_channels_; }

  [[nodiscard]] std::uint32_t router(std::uint32_t x, std::uint32_t y) const { return y * width_ + x; }
  [[nodiscard]] std::uint32_t router(hw::PeCoord pe) const { return router(pe.x, pe.y); }
  [[nodiscard]] hw::PeCoord coord(std::uint32_t r) const {
    return hw::PeCoord{static_cast<std::uint16_t>(r % width_), static_cast<std::uint16_t>(r / width_)};
  }
  [[nodiscard]] bool contains(std::int64_t x, std::int64_t y) const {
    return x >= 0 && y >= 0 && x < width_ && y < height_;
  }

  // The router beyond port `p` of router r, or kNone (ramp, or the mesh boundary).
  [[nodiscard]] std::uint32_t neighbour(std::uint32_t r, Port p) const;
  // The edge channel on `side` at row y, or kNone.
  [[nodiscard]] std::uint32_t channel_at_row(EdgeSide side, std::uint32_t y) const;
  [[nodiscard]] std::uint32_t channel_row(std::uint32_t channel) const { return channel_rows_[channel]; }
  // The edge channel port p of router r leads to (west port on column 0, east port on the
  // last column, on a channel row), or kNone.
  [[nodiscard]] std::uint32_t channel_beyond(std::uint32_t r, Port p) const;
  // Whether port p of router r leads somewhere: a neighbour, an edge channel or the ramp.
  [[nodiscard]] bool connected(std::uint32_t r, Port p) const {
    return p == Port::Ramp || neighbour(r, p) != kNone || channel_beyond(r, p) != kNone;
  }

  // "(x, y)".
  [[nodiscard]] std::string name(std::uint32_t r) const;

 private:
  std::uint32_t width_, height_, edge_channels_;
  std::vector<std::uint32_t> channel_rows_;  // channel -> row
  std::vector<std::uint32_t> row_channel_;   // row -> channel or kNone
};

}  // namespace wafersim::fabric
