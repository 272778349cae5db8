#include "fabric/route_ends.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <utility>
#include <vector>

namespace wafersim::fabric {

namespace {

constexpr Port kLinks[] = {Port::North, Port::East, Port::South, Port::West};

// An end and its place in the order ends are listed in: PEs by router, then edge channels.
using End = std::pair<std::uint64_t, std::string>;

End pe_end(const MeshGeometry& g, std::uint32_t r) { return {r, "PE " + g.name(r)}; }

End channel_end(const MeshGeometry& g, std::uint32_t r, Port p) {
  const std::uint32_t c = g.channel_beyond(r, p);
  return {g.routers() + std::uint64_t{2} * c + (p == Port::East ? 1 : 0),
          fmt::format("edge channel {} ({})", c, port_name(p))};
}

std::vector<std::string> names_of(std::vector<End> ends) {
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  std::vector<std::string> out;
  for (auto& e : ends) out.push_back(std::move(e.second));
  return out;
}

std::string listed(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 3;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  if (names.size() > kShown) out += fmt::format(" and {} more", names.size() - kShown);
  return out;
}

}  // namespace

RouteEnds route_ends(const RouteTable& table, const MeshGeometry& g, std::uint32_t router, std::uint32_t color) {
  std::vector<End> sources, destinations;
  std::vector<bool> seen(std::size_t{g.width()} * g.height(), false);
  std::deque<std::uint32_t> todo{router};
  seen[router] = true;
  while (!todo.empty()) {
    const std::uint32_t r = todo.front();
    todo.pop_front();
    const RouteEntry e = table.at(r, color);
    if (e.accept & bit(Port::Ramp)) sources.push_back(pe_end(g, r));
    if (e.forward & bit(Port::Ramp)) destinations.push_back(pe_end(g, r));
    for (const Port p : kLinks) {
      const bool in = (e.accept & bit(p)) != 0, out = (e.forward & bit(p)) != 0;
      if (!in && !out) continue;
      const std::uint32_t n = g.neighbour(r, p);
      if (n == MeshGeometry::kNone) {
        if (g.channel_beyond(r, p) == MeshGeometry::kNone) continue;
        if (in) sources.push_back(channel_end(g, r, p));
        if (out) destinations.push_back(channel_end(g, r, p));
        continue;
      }
      const RouteEntry ne = table.at(n, color);
      const bool joined = (in && (ne.forward & bit(opposite(p)))) || (out && (ne.accept & bit(opposite(p))));
      if (joined && !seen[n]) {
        seen[n] = true;
        todo.push_back(n);
      }
    }
  }
  return RouteEnds{names_of(std::move(sources)), names_of(std::move(destinations))};
}

std::string describe_route(const RouteEnds& ends) {
  return fmt::format("from {} to {}", ends.sources.empty() ? std::string("nowhere") : listed(ends.sources),
                     ends.destinations.empty() ? std::string("nowhere") : listed(ends.destinations));
}

}  // namespace wafersim::fabric
