#pragma once
// The physical array of a wafer: the logical grid programs see plus the spare rows (or
// columns) of its redundancy, in groups. Worked on as lines along the spares' direction: with
// spare rows a line is a column and a position its physical row; with spare columns a line is a
// row and a position its physical column. Group g holds logical positions
// [g G, min((g+1) G, L)) followed by S spare positions, so it starts at physical position
// g (G + S).

#include <cstdint>

#include "fabric/defects/redundancy_config.h"

namespace wafersim::fabric::defects {

class PhysicalArray {
 public:
  // `width` x `height` is the logical grid.
  PhysicalArray(std::uint32_t width, std::uint32_t height, const RedundancyConfig& redundancy);

  [[nodiscard]] std::uint32_t logical_width() const { return logical_width_; }
  [[nodiscard]] std::uint32_t logical_height() const { return logical_height_; }
  [[nodiscard]] std::uint32_t width() const { return rows() ? lines_ : positions_; }
  [[nodiscard]] std::uint32_t height() const { return rows() ? positions_ : lines_; }
  [[nodiscard]] std::uint64_t cores() const { return std::uint64_t{lines_} * positions_; }
  [[nodiscard]] std::uint64_t logical_cores() const { return std::uint64_t{logical_width_} * logical_height_; }
  [[nodiscard]] SpareAxis axis() const { return axis_; }
  [[nodiscard]] bool rows() const { return axis_ == SpareAxis::Rows; }

  // Lines, physical positions per line, logical positions per line.
  [[nodiscard]] std::uint32_t lines() const { return lines_; }
  [[nodiscard]] std::uint32_t positions() const { return positions_; }
  [[nodiscard]] std::uint32_t logical_positions() const { return logical_positions_; }
  [[nodiscard]] std::uint32_t spares() const { return spares_; }
  [[nodiscard]] std::uint32_t groups() const { return groups_; }
  // Logical positions of group g, its first logical position and its first physical one.
  [[nodiscard]] std::uint32_t group_size(std::uint32_t g) const;
  [[nodiscard]] std::uint32_t group_logical_start(std::uint32_t g) const { return g * group_; }
  [[nodiscard]] std::uint32_t group_start(std::uint32_t g) const { return g * (group_ + spares_); }
  // The group a physical position belongs to.
  [[nodiscard]] std::uint32_t group_of(std::uint32_t position) const { return position / (group_ + spares_); }

  // A core as (line, position) <-> physical (x, y), and its index line * positions + position
  // (the order in which dead cores are kept: each line's groups are contiguous).
  [[nodiscard]] std::uint32_t x_of(std::uint32_t line, std::uint32_t position) const {
    return rows() ? line : position;
  }
  [[nodiscard]] std::uint32_t y_of(std::uint32_t line, std::uint32_t position) const {
    return rows() ? position : line;
  }
  [[nodiscard]] std::uint32_t line_of(std::uint32_t x, std::uint32_t y) const { return rows() ? x : y; }
  [[nodiscard]] std::uint32_t position_of(std::uint32_t x, std::uint32_t y) const { return rows() ? y : x; }
  [[nodiscard]] std::uint64_t index(std::uint32_t line, std::uint32_t position) const {
    return std::uint64_t{line} * positions_ + position;
  }
  [[nodiscard]] bool contains(std::int64_t x, std::int64_t y) const {
    return x >= 0 && y >= 0 && x < width() && y < height();
  }

 private:
  std::uint32_t logical_width_, logical_height_;
  SpareAxis axis_;
  std::uint32_t lines_, logical_positions_, spares_, group_, groups_, positions_;
};

}  // namespace wafersim::fabric::defects
