#include "models/compiler/bound.h"

#include <algorithm>

namespace wafersim::models::compiler {

Bound bound_of(const Work& w, const Target& target) {
  Bound b;
  const auto& sram = target.wafer.pe.sram;
  auto ceil_div = [](std::uint64_t a, std::uint64_t d) { return d ? (a + d - 1) / d : a; };
  b.compute = std::max(w.datapath_steps, w.issue);
  b.sram = std::max(ceil_div(w.sram_reads, sram.read_ports), ceil_div(w.sram_writes, sram.write_ports));
  b.fabric = std::max({w.ramp_in, w.ramp_out, w.link});
  b.edge = w.edge;
  b.cycles = b.compute;
  b.binds = Binding::Compute;
  if (b.sram > b.cycles) {
    b.cycles = b.sram;
    b.binds = Binding::SramPorts;
  }
  if (b.fabric > b.cycles) {
    b.cycles = b.fabric;
    b.binds = Binding::Fabric;
  }
  if (b.edge > b.cycles) {
    b.cycles = b.edge;
    b.binds = Binding::EdgeIo;
  }
  return b;
}

}  // namespace wafersim::models::compiler
