#pragma once
// A platform: one wafer up to a cluster of many, composed of each subsystem's config.

#include <cstdint>
#include <string>
#include <vector>

#include "energy/energy_config.h"
#include "fabric/fabric_config.h"
#include "hw/pe_config.h"
#include "memoryx/memoryx_config.h"
#include "sim/config/loader.h"
#include "sim/config/schema.h"
#include "swarmx/swarmx_config.h"

namespace wafersim::platforms {

// One CS-X system's external I/O.
struct SystemConfig {
  std::uint32_t io_ports = 12;
  units::Bandwidth io_port_bandwidth{100e9};
  // Latency of each link between the system's edge and SwarmX, each direction (wire and
  // SerDes); the lookahead of a co-simulated cluster's windows.
  units::Duration edge_latency{100e-9};
  [[nodiscard]] double io_bandwidth_bits_per_s() const { return io_ports * io_port_bandwidth.bits_per_s; }
};

struct ClusterConfig {
  std::uint32_t systems = 1;
};

// The resolved platform, passed into the constructors of the module tree.
struct PlatformSpec {
  std::string name;
  std::string description;
  hw::WaferConfig wafer;
  fabric::FabricConfig fabric;
  SystemConfig system;
  swarmx::SwarmXConfig swarmx;
  memoryx::MemoryXConfig memoryx;
  ClusterConfig cluster;
  energy::EnergyConfig energy;

  // Declares and reads every platform key (the schema); see docs/platform-config.md.
  static PlatformSpec read(sim::config::Section root);
};

// A platform as loaded for a run: the spec, where it came from and its resolved YAML.
struct LoadedPlatform {
  PlatformSpec spec;
  std::string source;         // file or built-in name given by the user
  std::string resolved_yaml;  // every key with its final value; loading it reproduces spec
};

// The preset files compiled into the binary ("platforms/tiny.yaml", ...).
const sim::config::BuiltinFiles& builtin_files();
// Names of the built-in presets ("tiny", "wse2", ...).
std::vector<std::string> preset_names();
// The loader used for platforms: files on disk first, then the built-in presets.
sim::config::Loader platform_loader();

// Loads, merges (`base:`), applies --set overrides, resolves and validates a platform.
// Throws sim::config::ConfigError (exit code 2) with every problem found.
LoadedPlatform load_platform(const std::string& path, const std::vector<std::string>& overrides = {});
// As load_platform, for YAML text in memory (`base:` may name presets or files).
LoadedPlatform load_platform_text(std::string_view text, const std::string& name,
                                  const std::vector<std::string>& overrides = {});
// Applies overrides to a merged tree, then resolves and validates it.
LoadedPlatform resolve_platform(sim::config::Node root, const std::string& source,
                                const std::vector<std::string>& overrides);

// Every platform key with its default, unit, range and description.
std::vector<sim::config::FieldDoc> platform_schema();
// The schema as a Markdown table (docs/platform-config.md is generated from it).
std::string platform_schema_markdown();

}  // namespace wafersim::platforms
