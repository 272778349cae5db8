#pragma once
// Static color routes, as on the real fabric: for each router and color, the input ports the
// router accepts that color from and the set of output ports it forwards it to (several
// outputs are a multicast; the ramp delivers to the router's own PE).

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/geometry.h"
#include "sim/config/node.h"

namespace wafersim::fabric {

struct RouteEntry {
  std::uint8_t accept = 0;   // input ports (bit(Port))
  std::uint8_t forward = 0;  // output ports (bit(Port))
  [[nodiscard]] bool empty() const { return accept == 0 && forward == 0; }
};

// Dense per (router, color) table; storage is allocated on the first route set.
class RouteTable {
 public:
  static constexpr std::uint32_t kNoRule = 0xffffffffu;

  RouteTable(std::uint32_t width, std::uint32_t height, std::uint32_t colors);

  [[nodiscard]] std::uint32_t width() const { return width_; }
  [[nodiscard]] std::uint32_t height() const { return height_; }
  [[nodiscard]] std::uint32_t colors() const { return colors_; }

  [[nodiscard]] RouteEntry at(std::uint32_t router, std::uint32_t color) const {
    return entries_.empty() ? RouteEntry{} : entries_[std::size_t{router} * colors_ + color];
  }
  // Sets the route of (router, color); `rule` names where it came from (see add_rule).
  void set(std::uint32_t router, std::uint32_t color, RouteEntry e, std::uint32_t rule = kNoRule);
  // The rule that set (router, color), or kNoRule.
  [[nodiscard]] std::uint32_t rule_of(std::uint32_t router, std::uint32_t color) const {
    return rules_of_.empty() ? kNoRule : rules_of_[std::size_t{router} * colors_ + color];
  }

  // Where each rule was written (for diagnostics); returns the rule's id.
  std::uint32_t add_rule(sim::config::Location where, std::string path);
  [[nodiscard]] const sim::config::Location& rule_location(std::uint32_t rule) const { return locations_[rule]; }
  [[nodiscard]] const std::string& rule_path(std::uint32_t rule) const { return paths_[rule]; }

  // Colors routed anywhere, and the number of (router, color) routes.
  [[nodiscard]] std::uint64_t routed_colors() const { return routed_colors_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }

 private:
  std::uint32_t width_, height_, colors_;
  std::vector<RouteEntry> entries_;
  std::vector<std::uint32_t> rules_of_;
  std::vector<sim::config::Location> locations_;
  std::vector<std::string> paths_;
  std::uint64_t routed_colors_ = 0;
  std::uint64_t size_ = 0;
};

}  // namespace wafersim::fabric
