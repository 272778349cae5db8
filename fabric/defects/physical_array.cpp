#include "fabric/defects/physical_array.h"

#include <algorithm>

namespace wafersim::fabric::defects {

PhysicalArray::PhysicalArray(std::uint32_t width, std::uint32_t height, const RedundancyConfig& redundancy)
    : logical_width_(width),
      logical_height_(height),
      axis_(redundancy.axis),
      lines_(redundancy.axis == SpareAxis::Rows ? width : height),
      logical_positions_(redundancy.axis == SpareAxis::Rows ? height : width),
      spares_(redundancy.spares) {
  group_ = redundancy.group == 0 || redundancy.group >= logical_positions_ ? logical_positions_ : redundancy.group;
  groups_ = (logical_positions_ + group_ - 1) / group_;
  positions_ = logical_positions_ + groups_ * spares_;
}

std::uint32_t PhysicalArray::group_size(std::uint32_t g) const {
  return std::min(group_, logical_positions_ - g * group_);
}

}  // namespace wafersim::fabric::defects
