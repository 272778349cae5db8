#include "models/mesh/ring.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>
#include <utility>

#include "fabric/port.h"

namespace wafersim::models::mesh {
using fabric::bit;
using fabric::Port;

namespace {

std::uint32_t distance(std::uint32_t a, std::uint32_t b) { return a > b ? a - b : b - a; }

// The routers a flow from line index `from` to `to` passes (its ends included), in order.
std::vector<std::uint32_t> path(std::uint32_t from, std::uint32_t to) {
  std::vector<std::uint32_t> p;
  for (std::uint32_t i = from;; i = to > i ? i + 1 : i - 1) {
    p.push_back(i);
    if (i == to) break;
  }
  return p;
}

}  // namespace

Ring::Ring(Axis axis, std::uint32_t length, std::vector<std::uint8_t> pool) : axis_(axis), n_(length) {
  if (length == 0) throw std::logic_error("Ring: an empty line");
  order_.clear();
  for (std::uint32_t i = 0; i < n_; i += 2) order_.push_back(i);
  for (std::uint32_t i = (n_ % 2 ? n_ - 2 : n_ - 1); i < n_ && i >= 1; i -= 2) order_.push_back(i);
  pos_.assign(n_, 0);
  for (std::uint32_t p = 0; p < n_; ++p) pos_[order_[p]] = p;
  send_.assign(n_, pool.empty() ? 0 : pool[0]);
  if (n_ == 1) return;
  // Greedy colors: a flow takes the first color no router on its path uses yet.
  std::map<std::pair<std::uint32_t, std::uint8_t>, bool> used;
  for (std::uint32_t p = 0; p < n_; ++p) {
    const std::uint32_t from = order_[p], to = order_[(p + n_ - 1) % n_];
    const std::vector<std::uint32_t> routers = path(from, to);
    bool placed = false;
    for (std::uint8_t c : pool) {
      bool free = true;
      for (std::uint32_t r : routers) free = free && !used.count({r, c});
      if (!free) continue;
      for (std::uint32_t r : routers) used[{r, c}] = true;
      send_[from] = c;
      placed = true;
      break;
    }
    if (!placed) throw std::logic_error(fmt::format("Ring: {} colors do not color a ring of {}", pool.size(), n_));
  }
}

std::uint8_t Ring::recv_color(std::uint32_t i) const { return send_.at(order_[(pos_.at(i) + 1) % n_]); }

std::uint32_t Ring::max_hops() const {
  std::uint32_t h = 0;
  for (std::uint32_t p = 0; p < n_ && n_ > 1; ++p) h = std::max(h, distance(order_[p], order_[(p + 1) % n_]));
  return h;
}

void add_routes(fabric::RouteTable& table, const Region& region, const Ring& ring) {
  const Axis a = ring.axis();
  const std::uint32_t lines = a == Axis::Column ? region.columns : region.rows;
  const std::uint32_t n = ring.length();
  if (n != (a == Axis::Column ? region.rows : region.columns))
    throw std::logic_error("ring routes: the ring's length is not the region's");
  if (n == 1) return;
  for (std::uint32_t line = 0; line < lines; ++line) {
    auto set = [&](std::uint32_t i, std::uint8_t color, std::uint8_t accept, std::uint8_t forward) {
      const std::uint32_t x = region.x0 + (a == Axis::Column ? line : i);
      const std::uint32_t y = region.y0 + (a == Axis::Column ? i : line);
      const std::uint32_t router = y * table.width() + x;
      if (!table.at(router, color).empty())
        throw std::logic_error(fmt::format("ring routes: color {} at ({}, {}) set twice", color, x, y));
      table.set(router, color, fabric::RouteEntry{accept, forward});
    };
    for (std::uint32_t p = 0; p < n; ++p) {
      const std::uint32_t from = ring.index(p), to = ring.index((p + n - 1) % n);
      const std::uint8_t color = ring.send_color(from);
      const Port out = to > from ? toward_higher(a) : toward_lower(a);
      const Port in = to > from ? toward_lower(a) : toward_higher(a);
      const std::vector<std::uint32_t> routers = path(from, to);
      for (std::size_t k = 0; k < routers.size(); ++k) {
        const std::uint8_t accept = k == 0 ? bit(Port::Ramp) : bit(in);
        const std::uint8_t forward = k + 1 == routers.size() ? bit(Port::Ramp) : bit(out);
        set(routers[k], color, accept, forward);
      }
    }
  }
}

}  // namespace wafersim::models::mesh
