#include "memoryx/memoryx_config.h"

namespace wafersim::memoryx {
using units::Bandwidth;
using units::DataSize;
using units::Duration;

namespace {

TierConfig read_tier(sim::config::Section s, const TierConfig& d) {
  TierConfig t;
  const DataSize max_cap = DataSize{std::uint64_t{1} << 63};
  t.capacity = s.size("capacity", d.capacity, DataSize{0}, max_cap, "capacity");
  t.read_bandwidth = s.bandwidth("read_bandwidth", d.read_bandwidth, Bandwidth{1e6}, Bandwidth{1e18}, "read bandwidth");
  t.write_bandwidth =
      s.bandwidth("write_bandwidth", d.write_bandwidth, Bandwidth{1e6}, Bandwidth{1e18}, "write bandwidth");
  t.read_latency = s.duration("read_latency", d.read_latency, Duration{0}, Duration{10}, "latency of a read");
  t.write_latency = s.duration("write_latency", d.write_latency, Duration{0}, Duration{10}, "latency of a write");
  t.page_size = s.size("page_size", d.page_size, DataSize{8}, DataSize::from_bytes(std::uint64_t{1} << 30),
                       "access granularity");
  return t;
}

}  // namespace

MemoryXConfig MemoryXConfig::read(sim::config::Section s) {
  MemoryXConfig c;
  // Defaults are assumptions (not published): a DRAM tier able to feed one CS-2's 1.2 Tb/s.
  TierConfig dram_default{DataSize::from_bytes(1'500'000'000'000ULL), Bandwidth{1.6e12}, Bandwidth{1.6e12},
                          Duration{100e-9}, Duration{100e-9}, DataSize::from_bytes(64)};
  TierConfig flash_default{DataSize{0}, Bandwidth{200e9}, Bandwidth{50e9}, Duration{100e-6}, Duration{1e-3},
                           DataSize::from_bytes(16 * 1024)};
  c.dram = read_tier(s.section("dram", "DRAM tier"), dram_default);
  c.flash = read_tier(s.section("flash", "flash tier"), flash_default);
  c.optimizer_throughput = s.param_rate("optimizer_throughput", units::ParamRate{50e9}, units::ParamRate{1e3},
                                        units::ParamRate{1e18}, "parameters updated per second by the optimizer");
  c.bytes_per_param = static_cast<std::uint32_t>(s.integer(
      "bytes_per_param", 20, 2, 64, "stored bytes per parameter: FP32 weight, optimizer moments, gradient"));
  c.prefetch_depth = static_cast<std::uint32_t>(s.integer(
      "prefetch_depth", 1, 1, 64,
      "weight streams of flash-resident layers staged into DRAM ahead of the stream being sent"));
  return c;
}

}  // namespace wafersim::memoryx
