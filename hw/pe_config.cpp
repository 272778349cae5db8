#include "hw/pe_config.h"

#include <fmt/format.h>

namespace wafersim::hw {
using sim::Cycle;
using units::DataSize;
using units::Frequency;

PeConfig PeConfig::read(sim::config::Section s) {
  PeConfig c;
  auto sram = s.section("sram", "local SRAM of each PE");
  c.sram.size = sram.size("size", DataSize::from_bytes(48 * 1024), DataSize::from_bytes(1024),
                          DataSize::from_bytes(std::uint64_t{1} << 30), "SRAM capacity per PE");
  c.sram.banks = static_cast<std::uint32_t>(sram.integer("banks", 8, 1, 64, "SRAM banks, word-interleaved"));
  c.sram.bank_width = sram.size("bank_width", DataSize{32}, DataSize{8}, DataSize{1024}, "width of one bank word");
  c.sram.read_ports = static_cast<std::uint32_t>(sram.integer("read_ports", 2, 1, 16, "read accesses per cycle"));
  c.sram.write_ports = static_cast<std::uint32_t>(sram.integer("write_ports", 1, 1, 16, "write accesses per cycle"));
  c.sram.port_width = sram.size("port_width", DataSize{64}, DataSize{8}, DataSize{4096}, "bits per port access");
  if (c.sram.size.bits % (c.sram.bank_width.bits * c.sram.banks) != 0)
    sram.error("size", fmt::format("SRAM size {} is not a whole number of {} banks x {} words",
                                   units::format(c.sram.size), c.sram.banks, units::format(c.sram.bank_width)));
  if (c.sram.port_width.bits % c.sram.bank_width.bits != 0)
    sram.error("port_width", fmt::format("port width {} is not a multiple of the bank width {}",
                                         units::format(c.sram.port_width), units::format(c.sram.bank_width)));

  auto lanes = s.section("simd_lanes", "vector lanes (FMACs per cycle) per number format");
  c.simd_lanes.fp16 = static_cast<std::uint32_t>(lanes.integer("fp16", 4, 1, 64, "FP16 lanes per cycle"));
  c.simd_lanes.bf16 = static_cast<std::uint32_t>(lanes.integer("bf16", 4, 1, 64, "BF16 lanes per cycle"));
  c.simd_lanes.fp32 = static_cast<std::uint32_t>(lanes.integer("fp32", 1, 1, 64, "FP32 lanes per cycle"));

  c.microthreads = static_cast<std::uint32_t>(
      s.integer("microthreads", 8, 1, 63, "hardware threads running vector operations asynchronously"));

  auto lat = s.section("latency", "pipeline latencies (assumptions: not published)");
  const Cycle lo(0), hi(1000000);
  c.latency.scalar = lat.cycles("scalar", Cycle(1), Cycle(1), hi, "scalar ALU, compare and branch");
  c.latency.vector_start = lat.cycles("vector_start", Cycle(2), lo, hi, "vector op issue to first element");
  c.latency.mov = lat.cycles("mov", Cycle(1), Cycle(1), hi, "copy (FMOV) pipeline depth");
  c.latency.add = lat.cycles("add", Cycle(2), Cycle(1), hi, "FP add/sub/min/max pipeline depth");
  c.latency.mul = lat.cycles("mul", Cycle(3), Cycle(1), hi, "FP multiply pipeline depth");
  c.latency.fmac = lat.cycles("fmac", Cycle(4), Cycle(1), hi, "FMAC pipeline depth");
  c.latency.exp = lat.cycles("exp", Cycle(8), Cycle(1), hi, "exponential, cycles per element");
  c.latency.recip = lat.cycles("recip", Cycle(8), Cycle(1), hi, "reciprocal, cycles per element");
  c.latency.task_switch = lat.cycles("task_switch", Cycle(2), lo, hi, "activation to a task's first instruction");
  c.latency.forward = lat.cycles("forward", Cycle(1), Cycle(1), hi,
                                 "a vector step to a dependent step of the next operation of its ordered microthread");
  return c;
}

std::uint64_t PeConfig::sram_bytes_per_cycle() const {
  return (std::uint64_t{sram.read_ports} + sram.write_ports) * sram.port_width.bits / 8;
}

WaferConfig WaferConfig::read(sim::config::Section s) {
  WaferConfig c;
  c.width = static_cast<std::uint32_t>(s.integer("width", 757, 1, 4096, "PE columns of the fabric"));
  c.height = static_cast<std::uint32_t>(s.integer("height", 996, 1, 4096, "PE rows of the fabric"));
  c.clock = s.frequency("clock", Frequency{1.1e9}, Frequency{1e6}, Frequency{1e11}, "core and fabric clock");
  c.pe = PeConfig::read(s.section("pe", "processing element: core and SRAM"));
  return c;
}

}  // namespace wafersim::hw
