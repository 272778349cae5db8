#include "fabric/reroute.h"

#include <fmt/format.h>

#include <deque>

#include "fabric/route_check.h"

namespace wafersim::fabric {
namespace {

constexpr std::uint32_t kNone = MeshGeometry::kNone;

// One failed route's repair: the router that feeds the detour, the output it drops, and the
// routers (with the port the color used to enter them) the detour must reach.
struct Repair {
  std::uint32_t color = 0, source = 0;
  std::uint8_t drop = 0;
  std::vector<std::uint32_t> targets;
  std::uint32_t replaced_hops = 1;  // hops of the path it replaces, per target
};

class Rebuilder {
 public:
  Rebuilder(const RouteTable& t, const MeshGeometry& g, const DeadParts& dead) : g_(g), dead_(dead) { out_.table = t; }

  Rerouted run() {
    std::vector<Repair> repairs;
    for (const BrokenRoute& b : broken_routes(out_.table, dead_)) {
      if (!plan(b, repairs)) return out_;
    }
    for (const Repair& r : repairs)
      if (!detour(r)) return out_;
    const auto problems = check_routes(out_.table, g_);
    if (!problems.empty()) return fail("the rebuilt routes do not check: " + problems.front().message);
    out_.ok = true;
    return out_;
  }

 private:
  Rerouted fail(std::string why) {
    out_.ok = false;
    out_.why = std::move(why);
    return out_;
  }

  [[nodiscard]] bool dead_router(std::uint32_t r) const { return dead_.routers.count(r) != 0; }

  // The repair a broken route needs (a dead router's is planned once, from its own entry).
  bool plan(const BrokenRoute& b, std::vector<Repair>& repairs) {
    RouteTable& t = out_.table;
    const RouteEntry e = t.at(b.router, b.color);
    if (!dead_router(b.router)) {
      for (std::uint32_t o = 0; o < 4; ++o) {
        const std::uint32_t n = g_.neighbour(b.router, port_at(o));
        if (!(e.forward & (1u << o)) || !dead_.dead(b.router, o) || n == kNone || dead_router(n)) continue;
        repairs.push_back(Repair{b.color, b.router, static_cast<std::uint8_t>(1u << o), {n}, 1});
      }
      return true;
    }
    if ((e.accept | e.forward) & bit(Port::Ramp)) {
      fail(fmt::format("color {} {} the failed PE {}", b.color,
                       (e.forward & bit(Port::Ramp)) ? "delivers to" : "is sent from", g_.name(b.router)));
      return false;
    }
    Repair r{b.color, kNone, 0, {}, 2};
    for (std::uint32_t p = 0; p < 4; ++p) {
      if (!(e.accept & (1u << p))) continue;
      const std::uint32_t u = g_.neighbour(b.router, port_at(p));
      if (u == kNone) {
        fail(fmt::format("color {} enters the failed PE {} from its edge channel", b.color, g_.name(b.router)));
        return false;
      }
      if (!(t.at(u, b.color).forward & bit(opposite(port_at(p))))) continue;
      if (r.source != kNone) {
        fail(fmt::format("color {} merges at the failed PE {} from two sides", b.color, g_.name(b.router)));
        return false;
      }
      r.source = u;
      r.drop = bit(opposite(port_at(p)));
    }
    for (std::uint32_t o = 0; o < 4; ++o) {
      if (!(e.forward & (1u << o))) continue;
      const std::uint32_t n = g_.neighbour(b.router, port_at(o));
      if (n == kNone || dead_router(n)) {
        fail(fmt::format("color {} leaves the failed PE {} {} to {}", b.color, g_.name(b.router), port_name(port_at(o)),
                         n == kNone ? "its edge channel" : "another failed PE"));
        return false;
      }
      r.targets.push_back(n);
    }
    t.set(b.router, b.color, RouteEntry{}, t.rule_of(b.router, b.color));
    ++out_.rewritten;
    if (r.source != kNone && !r.targets.empty()) repairs.push_back(std::move(r));
    return true;
  }

  // A shortest detour tree from r.source to every target through live links and routers that
  // do not route the color; written into the table.
  bool detour(const Repair& r) {
    RouteTable& t = out_.table;
    const std::uint32_t c = r.color, s = r.source;
    const RouteEntry se = t.at(s, c);
    const std::uint8_t keep = static_cast<std::uint8_t>(se.forward & ~r.drop);
    std::vector<std::uint32_t> parent(g_.routers(), kNone);
    std::vector<std::uint8_t> via(g_.routers(), 0);  // the output of the parent that leads here
    std::vector<std::uint8_t> is_target(g_.routers(), 0);
    for (std::uint32_t n : r.targets) is_target[n] = 1;
    std::uint32_t left = static_cast<std::uint32_t>(r.targets.size());
    parent[s] = s;
    std::deque<std::uint32_t> work{s};
    while (!work.empty() && left) {
      const std::uint32_t m = work.front();
      work.pop_front();
      for (std::uint32_t o = 0; o < 4 && left; ++o) {
        if (m == s && (keep & (1u << o))) continue;  // the source's outputs still in use
        const std::uint32_t n = g_.neighbour(m, port_at(o));
        if (n == kNone || dead_.dead(m, o) || dead_router(n) || parent[n] != kNone) continue;
        if (is_target[n]) {
          parent[n] = m;
          via[n] = static_cast<std::uint8_t>(o);
          --left;
          continue;
        }
        if (!t.at(n, c).empty()) continue;
        parent[n] = m;
        via[n] = static_cast<std::uint8_t>(o);
        work.push_back(n);
      }
    }
    if (left) {
      for (std::uint32_t n : r.targets)
        if (parent[n] == kNone) {
          fail(fmt::format("no detour for color {} from {} to {} avoids the failed parts and the color's other routes",
                           c, g_.name(s), g_.name(n)));
          return false;
        }
    }
    const std::uint32_t rule = t.rule_of(s, c);
    std::vector<std::uint8_t> written(g_.routers(), 0);
    std::uint8_t added = 0;
    for (std::uint32_t n : r.targets) {
      std::uint32_t hops = 0;
      for (std::uint32_t b = n; b != s; b = parent[b]) {
        const std::uint32_t a = parent[b], o = via[b];
        ++hops;
        RouteEntry ea = t.at(a, c), eb = t.at(b, c);
        ea.forward = static_cast<std::uint8_t>(ea.forward | (1u << o));
        eb.accept = static_cast<std::uint8_t>(eb.accept | bit(opposite(port_at(o))));
        if (a == s) added = static_cast<std::uint8_t>(added | (1u << o));
        t.set(b, c, eb, b == n ? t.rule_of(b, c) : rule);
        t.set(a, c, ea, rule);
        out_.rewritten += (written[a] ? 0u : 1u) + (written[b] ? 0u : 1u);
        written[a] = written[b] = 1;
      }
      out_.extra_hops += hops > r.replaced_hops ? hops - r.replaced_hops : 0;
    }
    RouteEntry e = t.at(s, c);
    e.forward = static_cast<std::uint8_t>(e.forward & ~r.drop);
    t.set(s, c, e, rule);
    out_.changes.push_back(RouteChange{s, c, r.drop, added});
    return true;
  }

  const MeshGeometry& g_;
  const DeadParts& dead_;
  Rerouted out_;
};

}  // namespace

void DeadParts::kill_link(const MeshGeometry& g, std::uint32_t r, Port p) {
  links.insert({r, index(p)});
  const std::uint32_t n = g.neighbour(r, p);
  if (n != kNone) links.insert({n, index(opposite(p))});
}

void DeadParts::kill_router(const MeshGeometry& g, std::uint32_t r) {
  routers.insert(r);
  for (std::uint32_t o = 0; o < 4; ++o) kill_link(g, r, port_at(o));
}

std::vector<BrokenRoute> broken_routes(const RouteTable& table, const DeadParts& dead) {
  std::vector<BrokenRoute> out;
  auto check = [&](std::uint32_t r) {
    for (std::uint32_t c = 0; c < table.colors(); ++c) {
      if (!((table.routed_colors() >> c) & 1u)) continue;
      const RouteEntry e = table.at(r, c);
      if (e.empty()) continue;
      if (dead.routers.count(r)) {
        const char* how = (e.forward & bit(Port::Ramp))  ? "delivers to its core"
                          : (e.accept & bit(Port::Ramp)) ? "is sent from its core"
                                                         : "passes through it";
        out.push_back(BrokenRoute{r, c, how});
        continue;
      }
      for (std::uint32_t o = 0; o < 4; ++o)
        if ((e.forward & (1u << o)) && dead.dead(r, o))
          out.push_back(BrokenRoute{r, c, fmt::format("forwards {} over it", port_name(port_at(o)))});
    }
  };
  // Only the routers beside a failed part can use it.
  std::set<std::uint32_t> near(dead.routers.begin(), dead.routers.end());
  for (const auto& [r, o] : dead.links) near.insert(r);
  for (std::uint32_t r : near) check(r);
  return out;
}

Rerouted reroute(const RouteTable& table, const MeshGeometry& g, const DeadParts& dead) {
  return Rebuilder(table, g, dead).run();
}

}  // namespace wafersim::fabric
