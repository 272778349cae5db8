#include "models/compiler/colors.h"

namespace wafersim::models::compiler {

ColorPlan ColorPlan::make(std::uint32_t weight_colors, bool with_west) {
  ColorPlan c;
  std::uint8_t next = 0;
  for (std::uint32_t i = 0; i < weight_colors; ++i) c.weight.push_back(next++);
  c.south[0] = next++;
  c.south[1] = next++;
  c.north[0] = next++;
  c.north[1] = next++;
  c.east[0] = next++;
  c.east[1] = next++;
  c.bcast_south = next++;
  c.bcast_north = next++;
  c.out = next++;
  c.with_west = with_west;
  if (with_west) {
    c.west[0] = next++;
    c.west[1] = next++;
  }
  return c;
}

}  // namespace wafersim::models::compiler
