#pragma once
// The colors of the weight-streaming placement. Every compiled layer uses the same static
// routes (one route table for the whole model, set when the wafer is configured); a color
// is a role: weights into the rows of a band, partial sums up or down a column, along a row,
// a column broadcast, gradients out to the east edge.

#include <cstdint>
#include <vector>

namespace wafersim::models::compiler {

struct ColorPlan {
  // Colors the fixed roles take besides one weight color per used row of a band; models that
  // send along rows westward (attention backward) take two more.
  static constexpr std::uint32_t kFixed = 9;
  static constexpr std::uint32_t kWest = 2;

  std::vector<std::uint8_t> weight;  // by a row's position within its band
  std::uint8_t south[2] = {};        // column chains, by the sending row's slice parity
  std::uint8_t north[2] = {};
  std::uint8_t east[2] = {};  // row chains, by the sending column's parity
  std::uint8_t west[2] = {};  // row chains back west, by the sending column's parity (with_west)
  bool with_west = false;
  std::uint8_t bcast_south = 0, bcast_north = 0;  // a slice's row sends to every row below / above it
  std::uint8_t out = 0;                           // the band's anchor row to its east edge channel

  [[nodiscard]] std::uint32_t used() const {
    return static_cast<std::uint32_t>(weight.size()) + kFixed + (with_west ? kWest : 0);
  }
  static ColorPlan make(std::uint32_t weight_colors, bool with_west = false);
};

}  // namespace wafersim::models::compiler
