#include "energy/energy_config.h"

#include <fmt/format.h>

#include <string>

namespace wafersim::energy {
using units::Energy;
using units::Power;

namespace {

constexpr Energy kMaxEvent{1e-6};  // no single event costs a microjoule

// `pj` picojoules as the configuration reads "<pj> pJ" (the decimal correctly rounded), so that
// defaults print as written.
double event(sim::config::Section& s, std::string_view name, double pj, std::string_view doc) {
  const Energy def{units::parse(fmt::format("{} pJ", pj), units::Dimension::Energy).value};
  return s.energy(name, def, Energy{0}, kMaxEvent, doc).joules;
}

// Defaults are a WSE-2 PE in TSMC 7 nm (docs/energy.md derives each): Horowitz, ISSCC 2014
// (45 nm) scaled by 0.25; bf16 multiplies by the square of the mantissa ratio (8 / 11)^2.
struct LaneDefaults {
  const char* name;
  const char* doc;
  double fp16, bf16, fp32;  // pJ
};
constexpr LaneDefaults kLanes[kLaneClasses] = {
    {"mov", "per element copied (FMOV, and u16/u32 copies)", 0.0125, 0.0125, 0.025},
    {"add", "per add, subtract, min, max, compare or reduction step", 0.1, 0.1, 0.225},
    {"mul", "per multiply", 0.275, 0.145, 0.925},
    {"fmac", "per fused multiply-accumulate (FMAC, FDOT step)", 0.375, 0.245, 1.15},
    {"exp", "per exponential (iterative unit)", 1.5, 0.98, 4.6},
    {"recip", "per reciprocal (iterative unit)", 1.125, 0.735, 3.45},
};

PeEnergy read_pe(sim::config::Section s) {
  PeEnergy p;
  auto lanes = s.section("lane", "energy per lane operation by datapath class and number format");
  for (int c = 0; c < kLaneClasses; ++c) {
    const LaneDefaults& d = kLanes[c];
    auto k = lanes.section(d.name, d.doc);
    p.lane[c][0] = event(k, "fp16", d.fp16, fmt::format("{}, fp16", d.doc));
    p.lane[c][1] = event(k, "bf16", d.bf16, fmt::format("{}, bf16", d.doc));
    p.lane[c][2] = event(k, "fp32", d.fp32, fmt::format("{}, fp32", d.doc));
  }
  p.instruction = event(s, "instruction", 17.5, "per instruction issued: fetch, decode, register file");
  p.active_cycle = event(s, "active_cycle", 2.0,
                         "per busy cycle of a PE: clock tree, pipeline and control (idle PEs are clock-gated)");
  p.sram_read = event(s, "sram_read_per_byte", 0.3125, "per byte of SRAM port word read");
  p.sram_write = event(s, "sram_write_per_byte", 0.3125, "per byte of SRAM port word written");
  p.static_power = s.power("static", Power{2e-3}, Power{0}, Power{1}, "leakage per PE, busy or idle").watts;
  return p;
}

RouterEnergy read_router(sim::config::Section s) {
  RouterEnergy r;
  r.traversal = event(s, "traversal", 1.0, "per wavelet sent through a router output (buffer, crossbar)");
  r.link = event(s, "link_hop", 0.9, "per wavelet-hop on a link to a neighbour or an edge channel");
  r.ramp = event(s, "ramp_crossing", 0.2, "per wavelet between a PE core and its router");
  r.static_power = s.power("static", Power{0.5e-3}, Power{0}, Power{1}, "leakage per router").watts;
  return r;
}

MemoryXEnergy read_memoryx(sim::config::Section s) {
  MemoryXEnergy m;
  m.dram_read = event(s, "dram_read_per_byte", 160, "per byte read from DRAM");
  m.dram_write = event(s, "dram_write_per_byte", 160, "per byte written to DRAM");
  m.flash_read = event(s, "flash_read_per_byte", 1000, "per byte read from flash");
  m.flash_write = event(s, "flash_write_per_byte", 8000, "per byte written to flash");
  m.optimizer = event(s, "optimizer_per_param", 6000, "per parameter updated by the optimizer");
  m.static_power = s.power("static", Power{1e3}, Power{0}, Power{1e6}, "MemoryX's servers besides their events").watts;
  return m;
}

}  // namespace

EnergyConfig EnergyConfig::read(sim::config::Section s) {
  EnergyConfig c;
  c.voltage = s.real("voltage", 1.0, 0.1, 3.0,
                     "the wafer's supply voltage relative to the coefficients' own: the wafer's event energies "
                     "scale with its square, its leakage with it");
  c.tile_area_mm2 = s.real("tile_area_mm2", 0.0544, 1e-6, 1e4,
                           "silicon area of one PE tile (core, SRAM, router) in mm^2, for power density");
  c.pe = read_pe(s.section("pe", "a PE's core and SRAM"));
  c.router = read_router(s.section("router", "a PE's router and its links"));
  c.edge_io = event(s, "edge_io_per_bit", 40, "per bit crossing the wafer's edge to or from the system's I/O");
  auto sx = s.section("swarmx", "SwarmX switches");
  c.swarmx = event(sx, "per_byte", 640, "per byte sent on a SwarmX port");
  c.swarmx_static =
      sx.power("static_per_switch", Power{500}, Power{0}, Power{1e6}, "per switch besides its events").watts;
  c.memoryx = read_memoryx(s.section("memoryx", "MemoryX"));
  auto sys = s.section("system", "one CS-X system around its wafer");
  c.system.static_power =
      sys.power("static", Power{1.5e3}, Power{0}, Power{1e6}, "cooling, control and I/O of one system").watts;
  c.system.supply_efficiency = sys.real("supply_efficiency", 0.87, 0.1, 1.0,
                                        "wafer-side power over wall power of the system's power conversion");
  return c;
}

}  // namespace wafersim::energy
