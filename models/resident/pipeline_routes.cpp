#include "models/resident/pipeline_routes.h"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "fabric/port.h"

namespace wafersim::models::resident {
using fabric::bit;
using fabric::Port;

namespace {

// Sets each (router, color) once: a second route on one would be a planning error.
class RouteWriter {
 public:
  explicit RouteWriter(fabric::RouteTable& t) : t_(t) {}
  void set(std::uint32_t x, std::uint32_t y, std::uint8_t color, std::uint8_t accept, std::uint8_t forward) {
    const std::uint32_t r = y * t_.width() + x;
    if (!t_.at(r, color).empty())
      throw std::logic_error(fmt::format("pipeline routes: color {} at ({}, {}) set twice", color, x, y));
    t_.set(r, color, fabric::RouteEntry{accept, forward});
  }

 private:
  fabric::RouteTable& t_;
};

}  // namespace

std::uint8_t relay_color(std::size_t stage, std::uint32_t y) {
  return static_cast<std::uint8_t>(2 * (stage % 2) + (y % 2));
}

std::uint8_t input_color(const PipelineProgram& p, std::size_t stage) {
  return relay_color(stage - 1, p.stages[stage - 1].rows - 1);
}

void plan_routes(PipelineProgram& p) {
  p.routes = std::make_shared<fabric::RouteTable>(p.target.width(), p.target.height(), p.target.fabric.colors);
  RouteWriter routes(*p.routes);
  p.colors = p.stages.size() > 1 ? kPipelineColors : 2;
  const bool rows_in = p.cut == PipelineCut::RowsIn;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const PipelineStage& s = p.stages[i];
    const bool first = i == 0, last = i + 1 == p.stages.size();
    for (std::uint32_t band = 0; band < p.replicas; ++band)
      for (std::uint32_t y = 0; y < s.rows; ++y) {
        const std::uint32_t gy = band * s.rows + y;  // the row on the wafer
        if (!last || y + 1 < s.rows)
          routes.set(s.x, gy, relay_color(i, y), bit(Port::Ramp), bit(y + 1 < s.rows ? Port::South : Port::East));
        if ((!last || rows_in) && y > 0) routes.set(s.x, gy, relay_color(i, y - 1), bit(Port::North), bit(Port::Ramp));
        if (!first) {
          const auto fwd = static_cast<std::uint8_t>(bit(Port::Ramp) | (y > 0 ? bit(Port::North) : 0));
          routes.set(s.x, gy, input_color(p, i), y + 1 == s.rows ? bit(Port::West) : bit(Port::South), fwd);
        }
      }
  }
}

}  // namespace wafersim::models::resident
