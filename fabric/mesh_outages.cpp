// The mesh's failures while running (MeshOptions::outages, docs/defects.md): a link or a PE
// that stops at a cycle, the static routes over it stopping the run or rebuilt around it.

#include <fmt/format.h>

#include <algorithm>

#include "fabric/mesh.h"
#include "fabric/mesh_outages.h"
#include "fabric/route_ends.h"
#include "sim/errors.h"

namespace wafersim::fabric {

void Mesh::set_outages(std::vector<Outage> outages, bool reroute) {
  if (outages_) throw std::logic_error("Mesh::set_outages called twice");
  if (outages.empty()) return;
  if (xy_)
    throw sim::InputError(
        "--fail: links and PEs fail under static routes (a compiled model, or wafersim traffic --routes); packet "
        "switched XY traffic has no route to rebuild");
  for (const Outage& o : outages)
    if (o.router >= geometry_.routers() || (!o.pe() && geometry_.neighbour(o.router, o.port) == MeshGeometry::kNone))
      throw std::logic_error("Mesh: an outage names no router or no link");
  outages_ = std::make_unique<Outages>();
  outages_->schedule = std::move(outages);
  std::stable_sort(outages_->schedule.begin(), outages_->schedule.end(),
                   [](const Outage& a, const Outage& b) { return a.cycle < b.cycle; });
  outages_->reroute = reroute;
  next_outage_ = outages_->schedule.front().cycle;
}

const std::vector<OutageRecord>& Mesh::outage_records() const {
  static const std::vector<OutageRecord> none;
  return outages_ ? outages_->records : none;
}

void Mesh::apply_outages(std::uint64_t t) {
  Outages& s = *outages_;
  while (s.next < s.schedule.size() && s.schedule[s.next].cycle <= t) apply_outage(s.schedule[s.next++], t);
  next_outage_ = s.next < s.schedule.size() ? s.schedule[s.next].cycle : ~std::uint64_t{0};
}

std::string Mesh::outage_part(const Outage& o) const {
  if (o.pe()) return fmt::format("PE {}", geometry_.name(o.router));
  const std::uint32_t n = geometry_.neighbour(o.router, o.port);
  return fmt::format("link {} {} - {} {}", geometry_.name(o.router), port_name(o.port), geometry_.name(n),
                     port_name(opposite(o.port)));
}

bool Mesh::router_holds_wavelets(std::uint32_t r) const {
  for (std::uint32_t p = 0; p < kPorts; ++p)
    if (routers_->queued_colors(r, p) || routers_->arriving(r, p, 0) || routers_->arriving(r, p, 1)) return true;
  for (const BandReads& reads : reads_)
    for (const auto& bucket : reads.wheel)
      for (const Transit& w : bucket)
        if (!w.to_endpoint && w.target / kPorts == r) return true;
  return false;
}

std::string Mesh::describe_broken(const std::vector<BrokenRoute>& broken) const {
  std::string out;
  const RouteTable* t = options_.routes.get();
  for (std::size_t i = 0; i < broken.size() && i < 4; ++i) {
    const BrokenRoute& b = broken[i];
    const std::uint32_t rule = t->rule_of(b.router, b.color);
    out += fmt::format("{}color {} at router {} {} ({})", i ? "; " : "", b.color, geometry_.name(b.router), b.how,
                       rule == RouteTable::kNoRule
                           ? "a compiled route " + describe_route(route_ends(*t, geometry_, b.router, b.color))
                           : fmt::format("{} {}", t->rule_location(rule).str(), t->rule_path(rule)));
  }
  if (broken.size() > 4) out += fmt::format("; and {} more", broken.size() - 4);
  return out;
}

void Mesh::apply_outage(const Outage& o, std::uint64_t t) {
  OutageRecord rec;
  rec.cycle = t;
  rec.part = outage_part(o);
  const std::string failed = fmt::format("{} failed at cycle {}", rec.part, t);
  if (o.pe() && o.core_busy)
    if (const std::string why = o.core_busy(); !why.empty()) throw sim::SimulationError(failed + ": " + why);
  if (o.pe() && router_holds_wavelets(o.router))
    throw sim::SimulationError(failed + " with wavelets in its router, which are lost");
  Outages& s = *outages_;
  DeadParts next = s.dead;
  if (o.pe())
    next.kill_router(geometry_, o.router);
  else
    next.kill_link(geometry_, o.router, o.port);
  const std::vector<BrokenRoute> broken =
      options_.routes ? broken_routes(*options_.routes, next) : std::vector<BrokenRoute>{};
  if (!broken.empty() && !s.reroute)
    throw sim::SimulationError(
        fmt::format("{}: {} static route{} over it: {} (the platform does not rebuild routes: "
                    "redundancy.reroute is false)",
                    failed, broken.size(), broken.size() == 1 ? "" : "s", describe_broken(broken)));
  if (broken.empty()) {
    rec.outcome = "no route used it";
  } else {
    Rerouted rr = reroute(*options_.routes, geometry_, next);
    if (!rr.ok)
      throw sim::SimulationError(fmt::format("{}; its routes cannot be rebuilt: {} (routes over it: {})", failed,
                                             rr.why, describe_broken(broken)));
    options_.routes = std::make_shared<const RouteTable>(std::move(rr.table));
    routers_->routes_changed(options_.routes.get(), rr.changes);
    rec.routes_rewritten = rr.rewritten;
    rec.extra_hops = rr.extra_hops;
    rec.outcome =
        fmt::format("{} route{} rebuilt around it: {} router entries rewritten, {} hop{} added", broken.size(),
                    broken.size() == 1 ? "" : "s", rr.rewritten, rr.extra_hops, rr.extra_hops == 1 ? "" : "s");
    s.rewritten += rr.rewritten;
    s.extra_hops += rr.extra_hops;
    ++s.rebuilds;
  }
  ++s.applied;
  s.dead = std::move(next);
  s.records.push_back(std::move(rec));
}

void Mesh::add_outage_stats(sim::stats::Group& g) {
  const Outages& s = *outages_;
  g.formula(
      "scheduled", [this] { return static_cast<double>(outages_->schedule.size()); }, "failures",
      "links and PEs scheduled to fail (--fail)", true);
  g.counter("applied", &s.applied, "failures", "failures that took effect (the fabric active after them)");
  g.counter("rebuilds", &s.rebuilds, "failures", "failures whose static routes were rebuilt");
  g.counter("routes_rewritten", &s.rewritten, "entries", "(router, color) route entries the rebuilds wrote");
  g.counter("extra_hops", &s.extra_hops, "hops", "hops the rebuilt detours add to the routes they replace");
}

}  // namespace wafersim::fabric
