#include "fabric/route_check.h"

#include <fmt/format.h>

#include <deque>
#include <string>

namespace wafersim::fabric {
namespace {

using sim::config::Diagnostic;
using sim::config::Location;

constexpr std::size_t kMaxPerKind = 20;

class Checker {
 public:
  Checker(const RouteTable& t, const MeshGeometry& g) : t_(t), g_(g) {}

  void add(std::uint32_t r, std::uint32_t c, const std::string& message) {
    const std::uint32_t rule = t_.rule_of(r, c);
    Location where = rule == RouteTable::kNoRule ? Location{"<route table>", 0, 0} : t_.rule_location(rule);
    std::string path = rule == RouteTable::kNoRule ? "" : t_.rule_path(rule);
    out_.push_back(Diagnostic{where, path, fmt::format("color {} at router {} {}", c, g_.name(r), message)});
  }

  void ports(std::uint32_t r, std::uint32_t c, RouteEntry e, std::size_t& count) {
    if (e.accept == 0 && count++ < kMaxPerKind) add(r, c, "accepts the color from no input port");
    if (e.forward == 0 && count++ < kMaxPerKind) add(r, c, "forwards the color to no output port");
    for (std::uint32_t i = 0; i < kPorts; ++i) {
      const Port p = port_at(i);
      if ((e.accept | e.forward) & bit(p) && !g_.connected(r, p) && count++ < kMaxPerKind)
        add(r, c,
            fmt::format("{} {}, but there is no neighbour beyond its {} port{}",
                        (e.forward & bit(p)) ? "forwards" : "accepts from", port_name(p), port_name(p),
                        (p == Port::West || p == Port::East) ? " and no edge I/O channel on that row" : ""));
      if (!(e.forward & bit(p))) continue;
      const std::uint32_t n = g_.neighbour(r, p);
      if (n == MeshGeometry::kNone) continue;
      if (!(t_.at(n, c).accept & bit(opposite(p))) && count++ < kMaxPerKind)
        add(r, c,
            fmt::format("forwards {} to router {}, which has no route for color {} accepting from the {}", port_name(p),
                        g_.name(n), c, port_name(opposite(p))));
    }
  }

  // Nodes (router, c) from which some copy reaches a ramp or an edge channel.
  void loops(std::uint32_t c, std::size_t& count) {
    const std::uint32_t n = g_.routers();
    std::vector<std::uint8_t> exits(n, 0);
    std::deque<std::uint32_t> work;
    bool any = false;
    for (std::uint32_t r = 0; r < n; ++r) {
      RouteEntry e = t_.at(r, c);
      if (e.forward == 0) continue;
      any = true;
      bool exit = (e.forward & bit(Port::Ramp)) != 0;
      for (Port p : {Port::West, Port::East})
        exit = exit || ((e.forward & bit(p)) && g_.channel_beyond(r, p) != MeshGeometry::kNone);
      if (exit) {
        exits[r] = 1;
        work.push_back(r);
      }
    }
    if (!any) return;
    // Backwards: a router reaches an exit if it forwards to one that does.
    while (!work.empty()) {
      const std::uint32_t r = work.front();
      work.pop_front();
      for (std::uint32_t i = 0; i < 4; ++i) {
        const Port p = port_at(i);
        const std::uint32_t m = g_.neighbour(r, p);  // m forwards toward r through opposite(p)
        if (m == MeshGeometry::kNone || exits[m]) continue;
        if (t_.at(m, c).forward & bit(opposite(p))) {
          exits[m] = 1;
          work.push_back(m);
        }
      }
    }
    // Every router that cannot reach an exit leads into a closed loop: walk to find it.
    std::vector<std::uint32_t> seen(n, 0);  // 0 unseen, else walk id
    std::uint32_t walk = 0;
    for (std::uint32_t start = 0; start < n; ++start) {
      if (exits[start] || t_.at(start, c).forward == 0 || seen[start]) continue;
      ++walk;
      std::vector<std::uint32_t> path;
      std::uint32_t r = start;
      while (r != MeshGeometry::kNone && !seen[r]) {
        seen[r] = walk;
        path.push_back(r);
        std::uint32_t next = MeshGeometry::kNone;
        const RouteEntry e = t_.at(r, c);
        for (std::uint32_t i = 0; i < 4 && next == MeshGeometry::kNone; ++i)
          if (e.forward & bit(port_at(i))) next = g_.neighbour(r, port_at(i));
        r = next;
      }
      if (r == MeshGeometry::kNone || seen[r] != walk) continue;  // ran into an earlier walk's loop
      std::size_t first = 0;
      while (path[first] != r) ++first;
      std::string cycle;
      for (std::size_t i = first; i < path.size() && i < first + 12; ++i) cycle += g_.name(path[i]) + " -> ";
      if (path.size() - first > 12) cycle += "... -> ";
      cycle += g_.name(r);
      if (count++ < kMaxPerKind)
        add(r, c,
            fmt::format("is part of a route loop with no exit: {}; wavelets on it circulate forever and no copy "
                        "reaches a ramp or an edge channel",
                        cycle));
    }
  }

  std::vector<Diagnostic> run() {
    std::size_t port_errors = 0, loop_errors = 0;
    for (std::uint32_t r = 0; r < g_.routers(); ++r)
      for (std::uint32_t c = 0; c < t_.colors(); ++c) {
        RouteEntry e = t_.at(r, c);
        if (!e.empty()) ports(r, c, e, port_errors);
      }
    if (port_errors == 0)
      for (std::uint32_t c = 0; c < t_.colors(); ++c)
        if (t_.routed_colors() & (std::uint64_t{1} << c)) loops(c, loop_errors);
    if (port_errors > kMaxPerKind)
      out_.push_back(Diagnostic{Location{"<route table>", 0, 0}, "",
                                fmt::format("... and {} more routing errors", port_errors - kMaxPerKind)});
    if (loop_errors > kMaxPerKind)
      out_.push_back(Diagnostic{Location{"<route table>", 0, 0}, "",
                                fmt::format("... and {} more route loops", loop_errors - kMaxPerKind)});
    return std::move(out_);
  }

 private:
  const RouteTable& t_;
  const MeshGeometry& g_;
  std::vector<Diagnostic> out_;
};

}  // namespace

std::vector<Diagnostic> check_routes(const RouteTable& table, const MeshGeometry& geometry) {
  return Checker(table, geometry).run();
}

}  // namespace wafersim::fabric
