#include "platforms/figures.h"

#include <algorithm>

#include "energy/peak.h"

namespace wafersim::platforms {

PlatformFigures figures(const PlatformSpec& p) {
  PlatformFigures f;
  const auto& w = p.wafer;
  const double clock = w.clock.hz;
  f.pe_count = w.pe_count();
  f.sram_bytes = f.pe_count * w.pe.sram.size.bytes();
  const double pes = static_cast<double>(f.pe_count);
  f.peak_flops_fp16 = pes * w.pe.simd_lanes.fp16 * 2.0 * clock;
  f.peak_flops_bf16 = pes * w.pe.simd_lanes.bf16 * 2.0 * clock;
  f.peak_flops_fp32 = pes * w.pe.simd_lanes.fp32 * 2.0 * clock;
  f.sram_bandwidth_bytes_per_s = pes * static_cast<double>(w.pe.sram_bytes_per_cycle()) * clock;
  const double wavelet_bytes = static_cast<double>(p.fabric.wavelet_width.bits) / 8.0;
  // One wavelet per link per direction per cycle; the bisection cuts the narrower side.
  const double cut_links = std::min(w.width, w.height);
  f.fabric_bisection_bytes_per_s = cut_links * 2.0 * wavelet_bytes * clock;
  // Counted per router port as the published figure is: 4 mesh ports x 2 directions per PE.
  f.fabric_total_bits_per_s = pes * 4 * 2.0 * static_cast<double>(p.fabric.wavelet_width.bits) * clock;
  f.edge_io_bits_per_s = 2.0 * p.fabric.edge_io_channels * static_cast<double>(p.fabric.wavelet_width.bits) * clock;
  f.io_bandwidth_bits_per_s = p.system.io_bandwidth_bits_per_s();
  f.memoryx_capacity_bytes = p.memoryx.capacity_bytes();
  for (const auto* tier : {&p.memoryx.dram, &p.memoryx.flash})
    if (tier->capacity.bits > 0) f.memoryx_read_bytes_per_s += tier->read_bandwidth.bytes_per_s();
  f.max_params = f.memoryx_capacity_bytes / p.memoryx.bytes_per_param;
  f.systems = p.cluster.systems;
  auto shape = swarmx::tree_shape(p.cluster.systems, p.swarmx);
  f.swarmx_nodes = shape.nodes_per_plane * p.swarmx.planes;
  f.swarmx_depth = shape.levels;
  f.swarmx_bandwidth_bits_per_s = p.swarmx.planes * p.swarmx.port_bandwidth.bits_per_s;
  const energy::PeakPower peak = energy::peak_power(p.energy, w, f.io_bandwidth_bits_per_s);
  f.peak_power_wafer_w = peak.wafer();
  f.peak_power_system_w = peak.system();
  f.peak_power_density_w_per_mm2 = peak.wafer() / (pes * p.energy.tile_area_mm2);
  return f;
}

nlohmann::ordered_json to_json(const PlatformFigures& f) {
  nlohmann::ordered_json j;
  j["pe_count"] = f.pe_count;
  j["sram_bytes"] = f.sram_bytes;
  j["peak_flops"] = {{"fp16", f.peak_flops_fp16}, {"bf16", f.peak_flops_bf16}, {"fp32", f.peak_flops_fp32}};
  j["sram_bandwidth_bytes_per_s"] = f.sram_bandwidth_bytes_per_s;
  j["fabric_bisection_bytes_per_s"] = f.fabric_bisection_bytes_per_s;
  j["fabric_total_bits_per_s"] = f.fabric_total_bits_per_s;
  j["edge_io_bits_per_s"] = f.edge_io_bits_per_s;
  j["io_bandwidth_bits_per_s"] = f.io_bandwidth_bits_per_s;
  j["memoryx_capacity_bytes"] = f.memoryx_capacity_bytes;
  j["memoryx_read_bytes_per_s"] = f.memoryx_read_bytes_per_s;
  j["max_params"] = f.max_params;
  j["systems"] = f.systems;
  j["swarmx_nodes"] = f.swarmx_nodes;
  j["swarmx_depth"] = f.swarmx_depth;
  j["swarmx_bandwidth_bits_per_s"] = f.swarmx_bandwidth_bits_per_s;
  j["peak_power_w"] = {{"wafer", f.peak_power_wafer_w}, {"system", f.peak_power_system_w}};
  j["peak_power_density_w_per_mm2"] = f.peak_power_density_w_per_mm2;
  return j;
}

}  // namespace wafersim::platforms
