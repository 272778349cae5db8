#include "platforms/energy_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "energy/energy_model.h"
#include "energy/peak.h"

namespace wafersim::platforms {
namespace {

using energy::Breakdown;
using energy::Events;
using sim::stats::Group;

struct StepEnergy {
  std::string name;  // the step's group name (000_fc1_forward, step0)
  double joules = 0, seconds = 0;
};

struct RunEnergy {
  Breakdown total;
  double seconds = 0;
  std::uint64_t flops = 0;
  double tokens = 0, samples = 0;
  std::vector<StepEnergy> steps;
};

double scalar(const Group& g, std::string_view path) {
  const auto* s = g.find(path);
  return s ? s->value() : 0.0;
}

// The step groups (step0, step1, ...) of a weight-streaming run: `training` or `steps`.
std::vector<const Group*> loop_steps(const Group& root) {
  std::vector<const Group*> out;
  for (const char* name : {"training", "steps"})
    if (const Group* g = root.find_group(name))
      for (const auto& s : g->groups())
        if (s->name().compare(0, 4, "step") == 0 && s->find("time")) out.push_back(s.get());
  return out;
}

struct Context {
  const PlatformSpec& spec;
  energy::Scale scale;
  energy::RunLayout layout;
};

Breakdown priced(const Context& cx, const Events& e, const energy::Powered& p, double seconds) {
  Breakdown b = energy::event_energy(e, cx.spec.energy, cx.scale);
  b += energy::static_energy(cx.spec.energy, cx.scale, p, seconds);
  energy::add_conversion(b, cx.spec.energy);
  return b;
}

// A compiled step (a group with `activity`, possibly nested: model.prefill.<step>) and those
// below `g`: its activity's events and edge streams, one wafer's leakage and system over its
// cycles.
void model_steps(const Context& cx, const Group& g, const std::string& prefix, RunEnergy& r) {
  for (const auto& step : g.groups()) {
    const std::string name = prefix.empty() ? step->name() : prefix + "_" + step->name();
    const Group* activity = step->find_group("activity");
    if (!activity) {
      model_steps(cx, *step, name, r);
      continue;
    }
    Events e = energy::wafer_events(*activity);
    e.edge_bits = energy::step_edge_bits(*step, cx.layout);
    const double seconds = scalar(*step, "cycles") / cx.spec.wafer.clock.hz;
    const Breakdown b = priced(cx, e, energy::Powered{1, 0, false}, seconds);
    r.steps.push_back({name, b.total(), seconds});
  }
}

void model_steps(const Context& cx, const Group& root, RunEnergy& r) {
  for (const Group* w : energy::wafer_groups(root))
    if (const Group* model = w->find_group("model")) model_steps(cx, *model, w->name() == "wafer0" ? "" : w->name(), r);
}

RunEnergy measure(const Group& root, const PlatformSpec& spec, sim::Cycle cycles) {
  const Context cx{
      spec, {spec.wafer.pe.sram.port_width.bytes(), spec.wafer.pe_count()}, {spec.fabric.wavelet_width.bits}};
  RunEnergy r;
  Events e = energy::run_events(root, cx.layout);
  energy::Powered powered;
  powered.wafers = energy::wafer_groups(root).size();
  if (const Group* cluster = root.find_group("cluster")) {
    powered.switches = static_cast<std::uint64_t>(scalar(*cluster, "swarmx.switches"));
    powered.memoryx = cluster->find_group("memoryx") != nullptr;
  }
  const std::vector<const Group*> loop = loop_steps(root);
  // A training run's wafer compute: one step of one wafer, recorded once, the same on every
  // wafer and step (platforms/training).
  if (const Group* run = root.find_group("training.wafer_run"))
    e += energy::wafer_events(*run).times(static_cast<std::uint64_t>(loop.size()) * powered.wafers);
  double ps = 0;
  for (const Group* s : loop) ps += scalar(*s, "time");
  r.seconds = loop.empty() ? static_cast<double>(cycles.count()) / spec.wafer.clock.hz : ps * 1e-12;
  r.total = priced(cx, e, powered, r.seconds);
  r.flops = e.flops;
  if (!loop.empty()) {
    // Per step: its own time's static energy; the events' energy in equal shares.
    Breakdown dynamic = energy::event_energy(e, spec.energy, cx.scale);
    energy::add_conversion(dynamic, spec.energy);
    const double share = dynamic.total() / static_cast<double>(loop.size());
    for (const Group* s : loop) {
      const double seconds = scalar(*s, "time") * 1e-12;
      Breakdown b = energy::static_energy(spec.energy, cx.scale, powered, seconds);
      energy::add_conversion(b, spec.energy);
      r.steps.push_back({s->name(), b.total() + share, seconds});
    }
  }
  model_steps(cx, root, r);
  for (const Group* w : energy::wafer_groups(root))
    r.tokens += scalar(*w, "pipeline.tokens") + scalar(*w, "inference.tokens");
  r.samples = scalar(root, "training.samples");
  return r;
}

void constant(Group& g, const std::string& name, double v, const std::string& unit, const std::string& what) {
  g.formula(
      name, [v] { return v; }, unit, what);
}

void write_breakdown(Group& g, const Breakdown& b) {
  auto& w = g.group("wafer");
  constant(w, "lanes", b.lanes, "J", "lane operations of the PEs' datapaths, by class and number format");
  constant(w, "instructions", b.instructions, "J", "instruction issue: fetch, decode, register file");
  constant(w, "active_cycles", b.active, "J", "busy PE-cycles: clock tree, pipeline and control");
  constant(w, "sram", b.sram, "J", "SRAM port words read and written");
  constant(w, "router", b.router, "J", "wavelets through router outputs");
  constant(w, "link", b.link, "J", "wavelet-hops on links to neighbours and edge channels");
  constant(w, "ramp", b.ramp, "J", "wavelets between PE cores and their routers");
  constant(w, "pe_static", b.pe_static, "J", "leakage of every PE over the run");
  constant(w, "router_static", b.router_static, "J", "leakage of every router over the run");
  constant(w, "total", b.wafer(), "J", "the wafers' energy");
  auto& s = g.group("system");
  constant(s, "edge_io", b.edge_io, "J", "bits through the wafers' edges (system I/O)");
  constant(s, "static", b.system_static, "J", "cooling, control and I/O of each system over the run");
  constant(s, "conversion", b.conversion, "J", "power conversion losses delivering the wafer and edge energy");
  constant(s, "total", b.system(), "J", "the systems around the wafers");
  auto& c = g.group("cluster");
  constant(c, "swarmx", b.swarmx, "J", "bytes sent on SwarmX ports");
  constant(c, "swarmx_static", b.swarmx_static, "J", "SwarmX switches over the run");
  constant(c, "dram", b.dram, "J", "MemoryX DRAM bytes read and written");
  constant(c, "flash", b.flash, "J", "MemoryX flash bytes read and written");
  constant(c, "optimizer", b.optimizer, "J", "parameters updated by MemoryX's optimizer");
  constant(c, "memoryx_static", b.memoryx_static, "J", "MemoryX over the run");
  constant(c, "total", b.cluster(), "J", "SwarmX and MemoryX");
}

}  // namespace

void add_energy_stats(Group& root, const PlatformSpec& spec, sim::Cycle cycles) {
  if (root.find_group("energy")) return;
  const RunEnergy r = measure(root, spec, cycles);
  auto& g = root.group("energy");
  const double total = r.total.total();
  constant(g, "total", total, "J", "energy of the run: wafers, systems and cluster");
  constant(g, "seconds", r.seconds, "s", "simulated time the static power is charged over");
  const double average = r.seconds > 0 ? total / r.seconds : 0.0;
  double peak = average;
  for (const auto& s : r.steps)
    if (s.seconds > 0) peak = std::max(peak, s.joules / s.seconds);
  constant(g, "average_power", average, "W", "total energy over the simulated time");
  constant(g, "peak_power", peak, "W",
           "the highest average power of a compiled step or training step (the average without steps)");
  const energy::PeakPower design = energy::peak_power(spec.energy, spec.wafer, spec.system.io_bandwidth_bits_per_s());
  constant(g, "design_peak_power", design.system(), "W",
           "one system's peak power implied by the coefficients (wafersim info)");
  constant(g, "pj_per_flop", r.flops ? total / static_cast<double>(r.flops) * 1e12 : 0.0, "pJ/FLOP",
           "total energy over the floating-point operations the PEs executed");
  if (r.tokens > 0) constant(g, "per_token", total / r.tokens, "J/token", "total energy per token");
  if (r.samples > 0) constant(g, "per_sample", total / r.samples, "J/sample", "total energy per training sample");
  write_breakdown(g, r.total);
  constant(g.group("wafer"), "pj_per_flop", r.flops ? r.total.wafer() / static_cast<double>(r.flops) * 1e12 : 0.0,
           "pJ/FLOP", "the wafers' energy over the floating-point operations the PEs executed");
  if (r.steps.empty()) return;
  auto& steps = g.group("steps");
  for (const auto& s : r.steps) {
    auto& sg = steps.group(s.name);
    constant(sg, "energy", s.joules, "J", "energy of the step (static power over its time)");
    constant(sg, "power", s.seconds > 0 ? s.joules / s.seconds : 0.0, "W", "average power of the step");
  }
}

}  // namespace wafersim::platforms
