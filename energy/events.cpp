#include "energy/events.h"

#include <cmath>
#include <string_view>

namespace wafersim::energy {
namespace {

using sim::stats::Group;
using sim::stats::Stat;

constexpr std::uint32_t kRampPort = 4;
constexpr std::uint32_t kPorts = 5;

std::uint64_t whole(double v) { return v > 0 ? static_cast<std::uint64_t>(std::llround(v)) : 0; }

std::uint64_t scalar(const Group& g, std::string_view path) {
  const Stat* s = g.find(path);
  return s && s->kind() == Stat::Kind::Scalar ? whole(s->value()) : 0;
}

std::uint64_t element(const Group& g, std::string_view path, std::size_t i) {
  const Stat* s = g.find(path);
  return s && s->kind() == Stat::Kind::Vector && i < s->size() ? whole(s->element(i)) : 0;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The bytes of every child group of `g` whose name starts with one of `prefixes`.
std::uint64_t port_bytes(const Group& g, std::initializer_list<std::string_view> prefixes) {
  std::uint64_t n = 0;
  for (const auto& c : g.groups())
    for (std::string_view p : prefixes)
      if (starts_with(c->name(), p)) {
        n += scalar(*c, "bytes");
        break;
      }
  return n;
}

bool is_wafer(const Group& g) {
  std::string_view n = g.name();
  if (!starts_with(n, "wafer") || n.size() == 5) return false;
  for (char c : n.substr(5))
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

// The edge streams of every compiled step below `model` (steps may nest: model.prefill.<step>).
std::uint64_t model_edge_bits(const Group& model, const RunLayout& layout) {
  std::uint64_t bits = 0;
  for (const auto& g : model.groups())
    bits += g->find("wavelets_in") ? step_edge_bits(*g, layout) : model_edge_bits(*g, layout);
  return bits;
}

Events& Events::operator+=(const Events& o) {
  for (int k = 0; k < hw::kLaneKinds; ++k) lanes[k] += o.lanes[k];
  instructions += o.instructions;
  busy_cycles += o.busy_cycles;
  sram_reads += o.sram_reads;
  sram_writes += o.sram_writes;
  flops += o.flops;
  router_traversals += o.router_traversals;
  link_hops += o.link_hops;
  ramp_crossings += o.ramp_crossings;
  edge_bits += o.edge_bits;
  swarmx_bytes += o.swarmx_bytes;
  dram_read_bytes += o.dram_read_bytes;
  dram_write_bytes += o.dram_write_bytes;
  flash_read_bytes += o.flash_read_bytes;
  flash_write_bytes += o.flash_write_bytes;
  optimizer_params += o.optimizer_params;
  return *this;
}

Events& Events::operator-=(const Events& o) {
  for (int k = 0; k < hw::kLaneKinds; ++k) lanes[k] -= o.lanes[k];
  instructions -= o.instructions;
  busy_cycles -= o.busy_cycles;
  sram_reads -= o.sram_reads;
  sram_writes -= o.sram_writes;
  flops -= o.flops;
  router_traversals -= o.router_traversals;
  link_hops -= o.link_hops;
  ramp_crossings -= o.ramp_crossings;
  edge_bits -= o.edge_bits;
  swarmx_bytes -= o.swarmx_bytes;
  dram_read_bytes -= o.dram_read_bytes;
  dram_write_bytes -= o.dram_write_bytes;
  flash_read_bytes -= o.flash_read_bytes;
  flash_write_bytes -= o.flash_write_bytes;
  optimizer_params -= o.optimizer_params;
  return *this;
}

Events Events::times(std::uint64_t k) const {
  Events e = *this;
  for (auto& v : e.lanes) v *= k;
  for (std::uint64_t* v :
       {&e.instructions, &e.busy_cycles, &e.sram_reads, &e.sram_writes, &e.flops, &e.router_traversals, &e.link_hops,
        &e.ramp_crossings, &e.edge_bits, &e.swarmx_bytes, &e.dram_read_bytes, &e.dram_write_bytes, &e.flash_read_bytes,
        &e.flash_write_bytes, &e.optimizer_params})
    *v *= k;
  return e;
}

bool operator==(const Events& a, const Events& b) {
  return a.lanes == b.lanes && a.instructions == b.instructions && a.busy_cycles == b.busy_cycles &&
         a.sram_reads == b.sram_reads && a.sram_writes == b.sram_writes && a.flops == b.flops &&
         a.router_traversals == b.router_traversals && a.link_hops == b.link_hops &&
         a.ramp_crossings == b.ramp_crossings && a.edge_bits == b.edge_bits && a.swarmx_bytes == b.swarmx_bytes &&
         a.dram_read_bytes == b.dram_read_bytes && a.dram_write_bytes == b.dram_write_bytes &&
         a.flash_read_bytes == b.flash_read_bytes && a.flash_write_bytes == b.flash_write_bytes &&
         a.optimizer_params == b.optimizer_params;
}

const std::vector<std::string>& wafer_counter_paths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> p;
    for (int c = 0; c < hw::kLaneClasses; ++c) p.push_back("cores.lane_ops." + std::string(hw::lane_class_name(c)));
    for (const char* s : {"cores.instructions", "cores.busy_cycles", "cores.sram_reads", "cores.sram_writes",
                          "cores.wavelets_out", "cores.flops", "fabric.wavelets_forwarded", "fabric.forwarded_by_port"})
      p.emplace_back(s);
    return p;
  }();
  return paths;
}

Events wafer_events(const Group& w) {
  Events e;
  for (int c = 0; c < hw::kLaneClasses; ++c)
    for (int t = 0; t < hw::kLaneTypes; ++t)
      e.lanes[c * hw::kLaneTypes + t] =
          element(w, "cores.lane_ops." + std::string(hw::lane_class_name(c)), static_cast<std::size_t>(t));
  e.instructions = scalar(w, "cores.instructions");
  e.busy_cycles = scalar(w, "cores.busy_cycles");
  e.sram_reads = scalar(w, "cores.sram_reads");
  e.sram_writes = scalar(w, "cores.sram_writes");
  e.flops = scalar(w, "cores.flops");
  e.router_traversals = scalar(w, "fabric.wavelets_forwarded");
  for (std::uint32_t p = 0; p < kPorts; ++p)
    if (p != kRampPort) e.link_hops += element(w, "fabric.forwarded_by_port", p);
  e.ramp_crossings = element(w, "fabric.forwarded_by_port", kRampPort) + scalar(w, "cores.wavelets_out");
  return e;
}

std::uint64_t step_edge_bits(const Group& step, const RunLayout& layout) {
  return (scalar(step, "wavelets_in") + scalar(step, "wavelets_out")) * layout.wavelet_bits;
}

std::vector<const Group*> wafer_groups(const Group& root) {
  std::vector<const Group*> out;
  for (const Group* parent : {&root, root.find_group("cluster")})
    if (parent)
      for (const auto& g : parent->groups())
        if (is_wafer(*g)) out.push_back(g.get());
  return out;
}

Events run_events(const Group& root, const RunLayout& layout) {
  Events e;
  for (const Group* g : wafer_groups(root)) {
    e += wafer_events(*g);
    if (const Group* model = g->find_group("model")) e.edge_bits += model_edge_bits(*model, layout);
    e.edge_bits += 8 * port_bytes(*g, {"weights_in", "gradients_out"});
  }
  const Group* cluster = root.find_group("cluster");
  if (!cluster) return e;
  if (const Group* sx = cluster->find_group("swarmx"))
    for (const auto& node : sx->groups()) e.swarmx_bytes += port_bytes(*node, {"down_out", "up_out"});
  if (const Group* mx = cluster->find_group("memoryx")) {
    e.dram_read_bytes = scalar(*mx, "dram.bytes_read");
    e.dram_write_bytes = scalar(*mx, "dram.bytes_written");
    e.flash_read_bytes = scalar(*mx, "flash.bytes_read");
    e.flash_write_bytes = scalar(*mx, "flash.bytes_written");
    e.optimizer_params = scalar(*mx, "optimizer.params");
  }
  return e;
}

void add_core(Events& e, const hw::CoreCounters& c) {
  for (int k = 0; k < hw::kLaneKinds; ++k) e.lanes[k] += c.lane_ops[k];
  e.instructions += c.instructions;
  e.busy_cycles += c.busy_cycles;
  e.sram_reads += c.sram_reads;
  e.sram_writes += c.sram_writes;
  e.flops += c.flops;
  e.ramp_crossings += c.wavelets_out;
}

void add_router_port(Events& e, std::uint32_t port, std::uint64_t forwarded) {
  e.router_traversals += forwarded;
  (port == kRampPort ? e.ramp_crossings : e.link_hops) += forwarded;
}

}  // namespace wafersim::energy
