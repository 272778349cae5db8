// `wafersim info`: figures derived from a platform.

#include <fmt/format.h>

#include <iostream>

#include "platforms/figures.h"
#include "platforms/memory_estimate.h"
#include "sim/app/cli.h"
#include "sim/units/quantity.h"

namespace wafersim::app {
namespace {

struct InfoCommand {
  PlatformArgs platform;
  bool json = false;

  void execute() const {
    auto loaded = platform.load();
    const auto& s = loaded.spec;
    auto f = platforms::figures(s);
    const auto run = platforms::estimate_memory(s, {false, s.cluster.systems});
    const auto traffic = platforms::estimate_memory(s, {true, 1});
    if (json) {
      auto j = platforms::to_json(f);
      j["platform"] = s.name;
      j["memory_estimate_bytes"] = {{"run", run.bytes}, {"traffic", traffic.bytes}};
      std::cout << j.dump(2) << "\n";
      return;
    }
    using units::pretty;
    auto row = [](const std::string& k, const std::string& v) { std::cout << fmt::format("  {:<30} {}\n", k, v); };
    std::cout << fmt::format("{}: {}\n", s.name, s.description);
    row("systems", fmt::format("{}", s.cluster.systems));
    row("PE grid", fmt::format("{} x {} = {} PEs per wafer", s.wafer.width, s.wafer.height, f.pe_count));
    row("clock", units::format(s.wafer.clock));
    row("SRAM per wafer", fmt::format("{} ({:.2f} GiB)", pretty(static_cast<double>(f.sram_bytes), "B"),
                                      static_cast<double>(f.sram_bytes) / (1ULL << 30)));
    row("dense peak FP16 / BF16 / FP32",
        fmt::format("{} / {} / {}", pretty(f.peak_flops_fp16, "FLOP/s"), pretty(f.peak_flops_bf16, "FLOP/s"),
                    pretty(f.peak_flops_fp32, "FLOP/s")));
    row("SRAM bandwidth", pretty(f.sram_bandwidth_bytes_per_s, "B/s"));
    row("fabric bisection", pretty(f.fabric_bisection_bytes_per_s, "B/s"));
    row("fabric, all links", pretty(f.fabric_total_bits_per_s, "b/s"));
    row("edge I/O channels",
        fmt::format("{} per edge, {}", s.fabric.edge_io_channels, pretty(f.edge_io_bits_per_s, "b/s")));
    row("system I/O", fmt::format("{} x {} = {}", s.system.io_ports, units::format(s.system.io_port_bandwidth),
                                  pretty(f.io_bandwidth_bits_per_s, "b/s")));
    row("MemoryX capacity", pretty(static_cast<double>(f.memoryx_capacity_bytes), "B"));
    row("MemoryX read bandwidth", pretty(f.memoryx_read_bytes_per_s, "B/s"));
    row("largest model in MemoryX",
        fmt::format("{} parameters at {} B each", pretty(static_cast<double>(f.max_params), ""),
                    s.memoryx.bytes_per_param));
    row("SwarmX", fmt::format("{} nodes, depth {}, {} planes of {} ports", f.swarmx_nodes, f.swarmx_depth,
                              s.swarmx.planes, units::format(s.swarmx.port_bandwidth)));
    row("peak power (wafer / system)",
        fmt::format("{} / {} per system ({} over the PE tiles; docs/energy.md)", pretty(f.peak_power_wafer_w, "W"),
                    pretty(f.peak_power_system_w, "W"), pretty(f.peak_power_density_w_per_mm2, "W/mm^2")));
    row("host memory to simulate",
        fmt::format("about {} ({}); with synthetic traffic {}", platforms::memory_text(run.bytes), run.breakdown,
                    platforms::memory_text(traffic.bytes)));
  }
};

}  // namespace

void add_info_command(CLI::App& app) {
  auto cmd = std::make_shared<InfoCommand>();
  CLI::App* sub =
      app.add_subcommand("info", "print figures derived from a platform (PEs, SRAM, peak FLOP/s, bandwidths)");
  cmd->platform.add(*sub, "");
  sub->add_flag("--json", cmd->json,
                "print one JSON object: pe_count, sram_bytes, peak_flops {fp16, bf16, fp32}, "
                "sram_bandwidth_bytes_per_s, fabric_bisection_bytes_per_s, io_bandwidth_bits_per_s, "
                "memoryx_capacity_bytes, max_params, swarmx_nodes, swarmx_depth, peak_power_w {wafer, system}, ...");
  sub->footer(
      "Peak FLOP/s is dense: SIMD lanes x 2 FLOP per FMAC x clock x PEs of the configured grid.\n"
      "Peak power is what the platform's energy coefficients imply with every PE, SRAM port, router\n"
      "output and I/O port busy every cycle (docs/energy.md).");
  sub->callback([cmd] { cmd->execute(); });
}

}  // namespace wafersim::app
