#include "hw/core/core_counters.h"

namespace wafersim::hw {

std::string_view lane_class_name(int lane_class) {
  static constexpr std::string_view kNames[kLaneClasses] = {"mov", "add", "mul", "fmac", "exp", "recip"};
  return lane_class >= 0 && lane_class < kLaneClasses ? kNames[lane_class] : std::string_view("?");
}

}  // namespace wafersim::hw
