#include "energy/energy_model.h"

namespace wafersim::energy {

static_assert(kLaneClasses == hw::kLaneClasses, "one coefficient row per lane class the cores count");

Breakdown& Breakdown::operator+=(const Breakdown& o) {
  lanes += o.lanes;
  instructions += o.instructions;
  active += o.active;
  sram += o.sram;
  router += o.router;
  link += o.link;
  ramp += o.ramp;
  pe_static += o.pe_static;
  router_static += o.router_static;
  edge_io += o.edge_io;
  system_static += o.system_static;
  conversion += o.conversion;
  swarmx += o.swarmx;
  swarmx_static += o.swarmx_static;
  dram += o.dram;
  flash += o.flash;
  optimizer += o.optimizer;
  memoryx_static += o.memoryx_static;
  return *this;
}

double lane_coefficient(const EnergyConfig& c, int kind) {
  const int cls = kind / hw::kLaneTypes, type = kind % hw::kLaneTypes;
  // DType order f16, bf16, f32, u16, u32: raw copies priced as the format of their width.
  static constexpr int kFormatOf[hw::kLaneTypes] = {0, 1, 2, 0, 2};
  return c.pe.lane[static_cast<std::size_t>(cls)][static_cast<std::size_t>(kFormatOf[type])];
}

Breakdown event_energy(const Events& e, const EnergyConfig& c, const Scale& s) {
  const double v = c.dynamic_scale();
  auto d = [](std::uint64_t n) { return static_cast<double>(n); };
  Breakdown b;
  for (int k = 0; k < hw::kLaneKinds; ++k)
    if (e.lanes[k]) b.lanes += d(e.lanes[k]) * lane_coefficient(c, k);
  b.lanes *= v;
  b.instructions = d(e.instructions) * c.pe.instruction * v;
  b.active = d(e.busy_cycles) * c.pe.active_cycle * v;
  const double port = d(s.sram_port_bytes);
  b.sram = (d(e.sram_reads) * port * c.pe.sram_read + d(e.sram_writes) * port * c.pe.sram_write) * v;
  b.router = d(e.router_traversals) * c.router.traversal * v;
  b.link = d(e.link_hops) * c.router.link * v;
  b.ramp = d(e.ramp_crossings) * c.router.ramp * v;
  b.edge_io = d(e.edge_bits) * c.edge_io;
  b.swarmx = d(e.swarmx_bytes) * c.swarmx;
  b.dram = d(e.dram_read_bytes) * c.memoryx.dram_read + d(e.dram_write_bytes) * c.memoryx.dram_write;
  b.flash = d(e.flash_read_bytes) * c.memoryx.flash_read + d(e.flash_write_bytes) * c.memoryx.flash_write;
  b.optimizer = d(e.optimizer_params) * c.memoryx.optimizer;
  return b;
}

Breakdown static_energy(const EnergyConfig& c, const Scale& s, const Powered& p, double seconds) {
  const double t = seconds, leak = seconds * c.static_scale();
  const double wafers = static_cast<double>(p.wafers), pes = static_cast<double>(s.pes);
  Breakdown b;
  b.pe_static = wafers * pes * c.pe.static_power * leak;
  b.router_static = wafers * pes * c.router.static_power * leak;
  b.system_static = wafers * c.system.static_power * t;
  b.swarmx_static = static_cast<double>(p.switches) * c.swarmx_static * t;
  b.memoryx_static = p.memoryx ? c.memoryx.static_power * t : 0.0;
  return b;
}

void add_conversion(Breakdown& b, const EnergyConfig& c) {
  b.conversion = (b.wafer() + b.edge_io) * (1.0 / c.system.supply_efficiency - 1.0);
}

}  // namespace wafersim::energy
