#include "models/mesh/ring.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

#include "fabric/port.h"

namespace wafersim::models::mesh {
using fabric::bit;
using fabric::Port;

namespace {

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

Ring::Ring(Axis axis, std::uint32_t length, std::vector<std::uint8_t> pool)
    : Ring(axis, length, length, std::move(pool), 0) {}

Ring::Ring(Axis axis, std::uint32_t length, std::uint32_t positions, std::vector<std::uint8_t> pool, std::uint8_t pair)
    : axis_(axis), n_(length), units_(positions), pair_(pair) {
  if (positions == 0 || length < positions || length > 2ull * positions)
    throw std::logic_error(fmt::format("Ring: {} positions over a line of {} PEs", positions, length));
  start_.assign(units_ + 1, 0);
  for (std::uint32_t u = 0; u <= units_; ++u) start_[u] = static_cast<std::uint32_t>(std::uint64_t{u} * n_ / units_);
  unit_.assign(n_, 0);
  for (std::uint32_t u = 0; u < units_; ++u)
    for (std::uint32_t i = start_[u]; i < start_[u + 1]; ++i) unit_[i] = u;
  order_.clear();
  for (std::uint32_t u = 0; u < units_; u += 2) order_.push_back(u);
  for (std::uint32_t u = (units_ % 2 ? units_ - 2 : units_ - 1); u < units_ && u >= 1; u -= 2) order_.push_back(u);
  std::vector<std::uint32_t> upos(units_, 0);
  for (std::uint32_t p = 0; p < units_; ++p) upos[order_[p]] = p;
  pos_.assign(n_, 0);
  for (std::uint32_t i = 0; i < n_; ++i) pos_[i] = upos[unit_[i]];
  // A unit's sender: its member nearer the unit it sends to.
  sender_.assign(units_, 0);
  for (std::uint32_t p = 0; p < units_; ++p) {
    const std::uint32_t u = order_[p], to = order_[(p + units_ - 1) % units_];
    sender_[u] = to < u ? start_[u] : start_[u + 1] - 1;
  }
  send_.assign(units_, pool.empty() ? 0 : pool[0]);
  if (units_ == 1) return;
  // Greedy colors: a flow takes the first color no router on its path uses yet.
  std::map<std::pair<std::uint32_t, std::uint8_t>, bool> used;
  for (std::uint32_t p = 0; p < units_; ++p) {
    const std::vector<std::uint32_t> routers = flow(p);
    bool placed = false;
    for (std::uint8_t c : pool) {
      bool free = true;
      for (std::uint32_t r : routers) free = free && !used.count({r, c});
      if (!free) continue;
      for (std::uint32_t r : routers) used[{r, c}] = true;
      send_[order_[p]] = c;
      placed = true;
      break;
    }
    if (!placed)
      throw std::logic_error(fmt::format("Ring: {} colors do not color a ring of {} over {}", pool.size(), units_, n_));
  }
}

std::uint32_t Ring::members(std::uint32_t p) const {
  const std::uint32_t u = order_.at(p);
  return start_[u + 1] - start_[u];
}

std::vector<std::uint32_t> Ring::flow(std::uint32_t p) const {
  const std::uint32_t u = order_.at(p), to = order_.at((p + units_ - 1) % units_);
  return path(sender_[u], to < u ? start_[to] : start_[to + 1] - 1);
}

std::uint8_t Ring::recv_color(std::uint32_t i) const { return send_.at(order_.at((pos_.at(i) + 1) % units_)); }

std::uint32_t Ring::max_hops() const {
  std::uint32_t h = 0;
  for (std::uint32_t p = 0; p < units_ && units_ > 1; ++p)
    h = std::max(h, static_cast<std::uint32_t>(flow(p).size() - 1));
  return h;
}

void add_routes(fabric::RouteTable& table, const Region& region, const Ring& ring) {
  const Axis a = ring.axis();
  const std::uint32_t lines = a == Axis::Column ? region.columns : region.rows;
  const std::uint32_t n = ring.positions();
  if (ring.length() != (a == Axis::Column ? region.rows : region.columns))
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
      const std::uint32_t from = ring.index(p), pred = (p + n - 1) % n;
      const std::uint32_t lo = ring.first(pred), hi = lo + ring.members(pred);  // the receiving unit
      const std::uint8_t color = ring.send_color(from);
      const std::vector<std::uint32_t> routers = path(from, lo > from ? hi - 1 : lo);
      const Port out = lo > from ? toward_higher(a) : toward_lower(a);
      const Port in = lo > from ? toward_lower(a) : toward_higher(a);
      for (std::size_t k = 0; k < routers.size(); ++k) {
        const bool last = k + 1 == routers.size(), member = routers[k] >= lo && routers[k] < hi;
        const std::uint8_t accept = k == 0 ? bit(Port::Ramp) : bit(in);
        const std::uint8_t forward = static_cast<std::uint8_t>((last ? 0 : bit(out)) | (member ? bit(Port::Ramp) : 0));
        set(routers[k], color, accept, forward);
      }
    }
    // A unit of two: the other member's partial sums to the sender, one hop.
    for (std::uint32_t p = 0; p < n; ++p) {
      if (ring.members(p) != 2) continue;
      if (ring.pair_color() >= table.colors())
        throw std::logic_error(
            fmt::format("ring routes: no pair color {} on a fabric of {} colors", ring.pair_color(), table.colors()));
      const std::uint32_t s = ring.index(p), o = s == ring.first(p) ? s + 1 : s - 1;
      set(o, ring.pair_color(), bit(Port::Ramp), bit(s > o ? toward_higher(a) : toward_lower(a)));
      set(s, ring.pair_color(), bit(s > o ? toward_lower(a) : toward_higher(a)), bit(Port::Ramp));
    }
  }
}

}  // namespace wafersim::models::mesh
