#include "energy/peak.h"

#include <algorithm>

namespace wafersim::energy {

PeakPower peak_power(const EnergyConfig& c, const hw::WaferConfig& w, double io_bits_per_s) {
  constexpr int kFmac = 3;        // lane class order: mov, add, mul, fmac, exp, recip
  constexpr double kOutputs = 5;  // four links and the ramp
  constexpr double kLinks = 4;
  constexpr double kRampWays = 2;  // delivered to the PE, sent by it
  const double v = c.dynamic_scale(), hz = w.clock.hz, pes = static_cast<double>(w.pe_count());
  const auto& lanes = w.pe.simd_lanes;
  const double per_format[kFormats] = {lanes.fp16 * c.pe.lane[kFmac][0], lanes.bf16 * c.pe.lane[kFmac][1],
                                       lanes.fp32 * c.pe.lane[kFmac][2]};
  const double port = static_cast<double>(w.pe.sram.port_width.bytes());
  const double per_cycle = pes * hz * v;  // PE-cycles per second, times the voltage scale
  PeakPower p;
  p.lanes = per_cycle * *std::max_element(per_format, per_format + kFormats);
  p.active = per_cycle * c.pe.active_cycle;
  p.sram = per_cycle * port * (w.pe.sram.read_ports * c.pe.sram_read + w.pe.sram.write_ports * c.pe.sram_write);
  p.router = per_cycle * kOutputs * c.router.traversal;
  p.link = per_cycle * kLinks * c.router.link;
  p.ramp = per_cycle * kRampWays * c.router.ramp;
  p.pe_static = pes * c.pe.static_power * c.static_scale();
  p.router_static = pes * c.router.static_power * c.static_scale();
  p.edge_io = 2 * io_bits_per_s * c.edge_io;
  p.conversion = (p.wafer() + p.edge_io) * (1.0 / c.system.supply_efficiency - 1.0);
  p.system_static = c.system.static_power;
  return p;
}

}  // namespace wafersim::energy
