#include "fabric/route_table.h"

namespace wafersim::fabric {

RouteTable::RouteTable(std::uint32_t width, std::uint32_t height, std::uint32_t colors)
    : width_(width), height_(height), colors_(colors) {}

void RouteTable::set(std::uint32_t router, std::uint32_t color, RouteEntry e, std::uint32_t rule) {
  if (entries_.empty()) {
    entries_.assign(std::size_t{width_} * height_ * colors_, RouteEntry{});
    rules_of_.assign(entries_.size(), kNoRule);
  }
  const std::size_t i = std::size_t{router} * colors_ + color;
  if (entries_[i].empty() && !e.empty()) ++size_;
  if (!entries_[i].empty() && e.empty()) --size_;
  entries_[i] = e;
  rules_of_[i] = rule;
  if (!e.empty()) routed_colors_ |= std::uint64_t{1} << color;
}

std::uint32_t RouteTable::add_rule(sim::config::Location where, std::string path) {
  locations_.push_back(std::move(where));
  paths_.push_back(std::move(path));
  return static_cast<std::uint32_t>(locations_.size() - 1);
}

}  // namespace wafersim::fabric
