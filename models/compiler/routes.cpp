#include "models/compiler/routes.h"

#include <stdexcept>

#include <fmt/format.h>

namespace wafersim::models::compiler {
using fabric::bit;
using fabric::Port;

namespace {

class Writer {
 public:
  Writer(fabric::RouteTable& t, std::uint32_t width) : t_(t), width_(width) {}
  void set(std::uint32_t x, std::uint32_t y, std::uint8_t color, std::uint8_t accept, std::uint8_t forward) {
    const std::uint32_t r = y * width_ + x;
    fabric::RouteEntry e = t_.at(r, color);
    if (!e.empty()) throw std::logic_error(fmt::format("compiler routes: color {} at ({}, {}) set twice", color, x, y));
    t_.set(r, color, fabric::RouteEntry{accept, forward});
  }

 private:
  fabric::RouteTable& t_;
  std::uint32_t width_;
};

// The routes of one row group (its rows and bands; the groups share no router).
void add_group(Writer& w, const StreamingLayout& l, const ColorPlan& colors) {
  const std::uint32_t C = l.columns;
  const std::uint32_t G = l.slices();

  // Weights: west channel -> column 0 spine -> the target row, east along it to every used column.
  for (const auto& b : l.bands)
    for (std::uint32_t s : b.slices) {
      const std::uint8_t c = colors.weight[l.position_of[s]];
      const std::uint32_t y = l.rows[s], rc = b.channel_row;
      const std::uint8_t along = static_cast<std::uint8_t>(bit(Port::Ramp) | (C > 1 ? bit(Port::East) : 0));
      if (y == rc) {
        w.set(0, rc, c, bit(Port::West), along);
      } else {
        const Port toward = y < rc ? Port::North : Port::South;
        const Port from = fabric::opposite(toward);
        w.set(0, rc, c, bit(Port::West), bit(toward));
        for (std::uint32_t v = y < rc ? y + 1 : rc + 1; v < (y < rc ? rc : y); ++v)
          w.set(0, v, c, bit(from), bit(toward));
        w.set(0, y, c, bit(from), along);
      }
      for (std::uint32_t x = 1; x < C; ++x)
        w.set(x, y, c, bit(Port::West), static_cast<std::uint8_t>(bit(Port::Ramp) | (x + 1 < C ? bit(Port::East) : 0)));
    }

  // Column chains and broadcasts between consecutive used rows, in every used column.
  for (std::uint32_t x = 0; x < C; ++x) {
    for (std::uint32_t s = 0; s < G; ++s) {
      const std::uint32_t y = l.rows[s];
      const bool up = s > 0, down = s + 1 < G;
      if (down) w.set(x, y, colors.south[s % 2], bit(Port::Ramp), bit(Port::South));
      if (up) w.set(x, y, colors.south[(s + 1) % 2], bit(Port::North), bit(Port::Ramp));
      if (up) w.set(x, y, colors.north[s % 2], bit(Port::Ramp), bit(Port::North));
      if (down) w.set(x, y, colors.north[(s + 1) % 2], bit(Port::South), bit(Port::Ramp));
      w.set(x, y, colors.bcast_south, static_cast<std::uint8_t>(bit(Port::Ramp) | (up ? bit(Port::North) : 0)),
            static_cast<std::uint8_t>(bit(Port::Ramp) | (down ? bit(Port::South) : 0)));
      w.set(x, y, colors.bcast_north, static_cast<std::uint8_t>(bit(Port::Ramp) | (down ? bit(Port::South) : 0)),
            static_cast<std::uint8_t>(bit(Port::Ramp) | (up ? bit(Port::North) : 0)));
      if (!down) continue;
      for (std::uint32_t v = y + 1; v < l.rows[s + 1]; ++v) {  // rows between two used rows pass through
        w.set(x, v, colors.south[s % 2], bit(Port::North), bit(Port::South));
        w.set(x, v, colors.north[(s + 1) % 2], bit(Port::South), bit(Port::North));
        w.set(x, v, colors.bcast_south, bit(Port::North), bit(Port::South));
        w.set(x, v, colors.bcast_north, bit(Port::South), bit(Port::North));
      }
    }
  }

  // Row chains between neighbouring used columns, in every used row.
  for (std::uint32_t s = 0; s < G; ++s)
    for (std::uint32_t x = 0; x < C; ++x) {
      const std::uint32_t y = l.rows[s];
      if (x + 1 < C) w.set(x, y, colors.east[x % 2], bit(Port::Ramp), bit(Port::East));
      if (x > 0) w.set(x, y, colors.east[(x + 1) % 2], bit(Port::West), bit(Port::Ramp));
      if (!colors.with_west) continue;
      if (x > 0) w.set(x, y, colors.west[x % 2], bit(Port::Ramp), bit(Port::West));
      if (x + 1 < C) w.set(x, y, colors.west[(x + 1) % 2], bit(Port::East), bit(Port::Ramp));
    }

  // Gradients out: the band's anchor PE in the last used column -> east along its row to
  // the last column -> along that column to the channel row -> the east edge channel.
  for (const auto& b : l.bands) {
    const std::uint32_t ya = l.rows[b.anchor], rc = b.channel_row, last = l.width - 1;
    std::uint8_t from = bit(Port::Ramp);
    std::uint32_t x = C - 1, y = ya;
    auto step_to = [&](Port p) {
      w.set(x, y, colors.out, from, bit(p));
      from = bit(fabric::opposite(p));
      if (p == Port::East) ++x;
      if (p == Port::North) --y;
      if (p == Port::South) ++y;
    };
    while (x < last) step_to(Port::East);
    while (y != rc) step_to(y < rc ? Port::South : Port::North);
    w.set(x, y, colors.out, from, bit(Port::East));
  }
}

}  // namespace

std::shared_ptr<fabric::RouteTable> build_routes(const Target& target, const StreamingLayout& l,
                                                 const ColorPlan& colors) {
  auto table = std::make_shared<fabric::RouteTable>(l.width, l.height, target.fabric.colors);
  Writer w(*table, l.width);
  for (std::uint32_t g = 0; g < l.groups; ++g) add_group(w, l.group(g), colors);
  return table;
}

}  // namespace wafersim::models::compiler
