#include "fabric/route_loader.h"

#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "fabric/route_check.h"
#include "sim/config/diagnostics.h"
#include "sim/config/input_file.h"
#include "sim/config/loader.h"

namespace wafersim::fabric {
namespace {

using sim::config::Diagnostic;
using sim::config::Location;
using sim::config::Node;

struct Range {
  std::uint32_t lo = 0, hi = 0;  // inclusive
};

class RuleReader {
 public:
  RuleReader(std::vector<Diagnostic>& diags, std::string path) : diags_(diags), path_(std::move(path)) {}

  void error(const Node& at, const std::string& key, const std::string& message) {
    diags_.push_back(Diagnostic{at.location(), key.empty() ? path_ : path_ + "." + key, message});
    ok_ = false;
  }
  [[nodiscard]] bool ok() const { return ok_; }

  std::optional<std::int64_t> integer(const Node& n, const std::string& key) {
    const std::string& t = n.text();
    if (!n.is_scalar() || t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 9) {
      error(n, key, fmt::format("expected a whole number, found {}", n.is_scalar() ? "'" + t + "'" : n.kind_name()));
      return std::nullopt;
    }
    return std::stoll(t);
  }

  // An integer, "a..b" (inclusive) or, when `all_ok`, "all"; each bound below `limit`.
  std::optional<Range> range(const Node& n, const std::string& key, std::uint32_t limit, bool all_ok,
                             const char* what) {
    if (!n.is_scalar()) {
      error(n, key,
            fmt::format("expected a {} number or a range 'a..b'{}, found {}", what, all_ok ? " or 'all'" : "",
                        n.kind_name()));
      return std::nullopt;
    }
    const std::string& t = n.text();
    if (all_ok && t == "all") return Range{0, limit - 1};
    auto dots = t.find("..");
    Node lo_n = Node::scalar(dots == std::string::npos ? t : t.substr(0, dots), n.location());
    Node hi_n = Node::scalar(dots == std::string::npos ? t : t.substr(dots + 2), n.location());
    auto lo = integer(lo_n, key);
    auto hi = integer(hi_n, key);
    if (!lo || !hi) return std::nullopt;
    if (*lo > *hi) {
      error(n, key, fmt::format("range '{}' is empty (the first bound is above the second)", t));
      return std::nullopt;
    }
    if (*hi >= limit) {
      error(n, key, fmt::format("{} {} is outside the mesh/colors (valid: 0 .. {})", what, *hi, limit - 1));
      return std::nullopt;
    }
    return Range{static_cast<std::uint32_t>(*lo), static_cast<std::uint32_t>(*hi)};
  }

  // One port name or a list of them, as a port set.
  std::uint8_t ports(const Node& n, const std::string& key) {
    std::vector<const Node*> items;
    if (n.is_sequence()) {
      for (const auto& i : n.items()) items.push_back(&i);
    } else {
      items.push_back(&n);
    }
    std::uint8_t set = 0;
    std::vector<std::string> names;
    for (std::uint32_t i = 0; i < kPorts; ++i) names.emplace_back(port_name(port_at(i)));
    for (const Node* i : items) {
      if (!i->is_scalar()) {
        error(*i, key, fmt::format("expected a port name (north, east, south, west, ramp), found {}", i->kind_name()));
        continue;
      }
      auto p = parse_port(i->text());
      if (!p) {
        std::string hint = sim::config::closest_match(i->text(), names);
        error(*i, key,
              fmt::format("unknown port '{}'; expected north, east, south, west or ramp{}", i->text(),
                          hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint)));
        continue;
      }
      if (set & bit(*p)) error(*i, key, fmt::format("port '{}' is listed twice", i->text()));
      set |= bit(*p);
    }
    if (items.empty()) error(n, key, "expected at least one port");
    return set;
  }

 private:
  std::vector<Diagnostic>& diags_;
  std::string path_;
  bool ok_ = true;
};

void unknown_keys(const Node& map, const std::vector<std::string>& known, const std::string& path,
                  std::vector<Diagnostic>& diags) {
  for (const auto& e : map.entries()) {
    bool found = false;
    for (const auto& k : known) found = found || k == e.key;
    if (found) continue;
    std::string hint = sim::config::closest_match(e.key, known);
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    diags.push_back(Diagnostic{e.key_location, path.empty() ? e.key : path + "." + e.key,
                               hint.empty() ? fmt::format("unknown key (valid keys here: {})", list)
                                            : fmt::format("unknown key; did you mean '{}'?", hint)});
  }
}

void read_rule(const Node& rule, std::size_t index, const MeshGeometry& g, RouteTable& table,
               std::vector<Diagnostic>& diags) {
  const std::string path = fmt::format("routes[{}]", index);
  if (!rule.is_map()) {
    diags.push_back(Diagnostic{
        rule.location(), path,
        fmt::format("expected a mapping with color, at (or x and y), from and to; found {}", rule.kind_name())});
    return;
  }
  unknown_keys(rule, {"color", "at", "x", "y", "from", "to", "replace"}, path, diags);
  RuleReader rd(diags, path);
  auto need = [&](const char* key) -> const Node* {
    const Node* n = rule.find(key);
    if (!n) {
      diags.push_back(Diagnostic{rule.location(), path + "." + key, "missing (required)"});
      return nullptr;
    }
    return n;
  };

  std::vector<Range> colors;
  if (const Node* c = need("color")) {
    if (c->is_sequence()) {
      for (const auto& i : c->items())
        if (auto r = rd.range(i, "color", table.colors(), false, "color")) colors.push_back(*r);
      if (c->items().empty()) rd.error(*c, "color", "expected at least one color");
    } else if (auto r = rd.range(*c, "color", table.colors(), false, "color")) {
      colors.push_back(*r);
    }
  }

  Range xs, ys;
  const Node* at = rule.find("at");
  const Node* xn = rule.find("x");
  const Node* yn = rule.find("y");
  if (at && (xn || yn)) {
    rd.error(*at, "at", "give either 'at: [x, y]' or 'x' and 'y', not both");
  } else if (at) {
    if (!at->is_sequence() || at->items().size() != 2) {
      rd.error(*at, "at", "expected [x, y]");
    } else {
      auto x = rd.range(at->items()[0], "at", g.width(), false, "column");
      auto y = rd.range(at->items()[1], "at", g.height(), false, "row");
      if (x && y && x->lo == x->hi && y->lo == y->hi) {
        xs = *x;
        ys = *y;
      } else if (x && y) {
        rd.error(*at, "at", "expected one router [x, y]; use 'x' and 'y' for ranges");
      }
    }
  } else if (!xn || !yn) {
    diags.push_back(Diagnostic{rule.location(), path + (xn ? ".y" : ".x"),
                               "missing: give the router as 'at: [x, y]' or the columns 'x' and rows 'y' "
                               "(a number, a range 'a..b' or 'all')"});
    return;
  } else {
    auto x = rd.range(*xn, "x", g.width(), true, "column");
    auto y = rd.range(*yn, "y", g.height(), true, "row");
    if (x) xs = *x;
    if (y) ys = *y;
  }

  RouteEntry e;
  if (const Node* f = need("from")) e.accept = rd.ports(*f, "from");
  if (const Node* t = need("to")) e.forward = rd.ports(*t, "to");
  bool replace = false;
  if (const Node* r = rule.find("replace")) {
    if (r->is_scalar() && (r->text() == "true" || r->text() == "false"))
      replace = r->text() == "true";
    else
      rd.error(*r, "replace", "expected true or false");
  }
  if (!rd.ok() || colors.empty() || !rule.find("from") || !rule.find("to")) return;

  const std::uint32_t id = table.add_rule(rule.location(), path);
  std::size_t duplicates = 0;
  for (const auto& cr : colors)
    for (std::uint32_t c = cr.lo; c <= cr.hi; ++c)
      for (std::uint32_t y = ys.lo; y <= ys.hi; ++y)
        for (std::uint32_t x = xs.lo; x <= xs.hi; ++x) {
          const std::uint32_t r = g.router(x, y);
          const std::uint32_t prev = table.rule_of(r, c);
          if (prev != RouteTable::kNoRule && prev != id && !replace) {
            if (duplicates++ == 0)
              diags.push_back(Diagnostic{
                  rule.location(), path,
                  fmt::format("color {} at router ({}, {}) is already routed by {} ({}); add 'replace: true' to "
                              "override earlier rules",
                              c, x, y, table.rule_path(prev), table.rule_location(prev).str())});
            continue;
          }
          table.set(r, c, e, id);
        }
}

}  // namespace

RouteTable parse_routes(std::string_view text, const std::string& name, const MeshGeometry& geometry,
                        std::uint32_t colors) {
  Node root = sim::config::Loader::parse(text, name);
  std::vector<Diagnostic> diags;
  RouteTable table(geometry.width(), geometry.height(), colors);
  if (!root.is_map())
    throw sim::config::ConfigError(Diagnostic{root.location(), {}, "expected a mapping with 'routes:'"});
  unknown_keys(root, {"description", "routes"}, "", diags);
  const Node* routes = root.find("routes");
  if (!routes) {
    diags.push_back(Diagnostic{root.location(), "routes", "missing: expected a list of route rules"});
  } else if (!routes->is_sequence()) {
    diags.push_back(Diagnostic{routes->location(), "routes",
                               fmt::format("expected a list of route rules, found {}", routes->kind_name())});
  } else {
    for (std::size_t i = 0; i < routes->items().size(); ++i) read_rule(routes->items()[i], i, geometry, table, diags);
  }
  if (diags.empty()) diags = check_routes(table, geometry);
  if (!diags.empty()) throw sim::config::ConfigError(std::move(diags));
  return table;
}

RouteTable load_routes(const std::string& path, const MeshGeometry& geometry, std::uint32_t colors) {
  return parse_routes(sim::config::read_input_file(path, "the route table", sim::config::kMaxYamlBytes), path, geometry,
                      colors);
}

}  // namespace wafersim::fabric
