#include "platforms/platform_spec.h"

#include <fmt/format.h>

#include <algorithm>

namespace wafersim::generated {
std::vector<std::pair<std::string_view, std::string_view>> platform_presets();
}

namespace wafersim::platforms {
using sim::config::Section;

PlatformSpec PlatformSpec::read(Section root) {
  PlatformSpec p;
  p.name = root.text("name", "custom", "platform name shown in reports");
  p.description = root.text("description", "", "one line about the platform and its sources");
  p.wafer = hw::WaferConfig::read(root.section("wafer", "the wafer: PE grid, clock and processing elements"));
  auto fab = root.section("fabric", "the on-wafer mesh fabric and its routers");
  p.fabric = fabric::FabricConfig::read(fab, p.wafer);
  auto sys = root.section("system", "one CS-X system's external I/O");
  p.system.io_ports = static_cast<std::uint32_t>(sys.integer("io_ports", 12, 1, 1024, "external I/O ports"));
  p.system.io_port_bandwidth = sys.bandwidth("io_port_bandwidth", units::Bandwidth{100e9}, units::Bandwidth{1e6},
                                             units::Bandwidth{1e15}, "bandwidth of each I/O port, each direction");
  p.system.edge_latency =
      sys.duration("edge_latency", units::Duration{100e-9}, units::Duration{1e-12}, units::Duration{1e-3},
                   "latency of each link between the system's edge and SwarmX, each direction (not published)");
  p.swarmx = swarmx::SwarmXConfig::read(root.section("swarmx", "SwarmX broadcast/reduce tree"));
  p.memoryx = memoryx::MemoryXConfig::read(root.section("memoryx", "MemoryX weight and optimizer-state store"));
  auto cl = root.section("cluster", "the cluster of systems");
  p.cluster.systems =
      static_cast<std::uint32_t>(cl.integer("systems", 1, 1, 4096, "CS-X systems (wafers) trained in data parallel"));
  p.energy = energy::EnergyConfig::read(
      root.section("energy", "energy per counted event and static power of each component (docs/energy.md)"));
  return p;
}

const sim::config::BuiltinFiles& builtin_files() {
  static const sim::config::BuiltinFiles files = generated::platform_presets();
  return files;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& [path, text] : builtin_files()) {
    std::string p(path);
    auto slash = p.rfind('/');
    std::string base = p.substr(slash == std::string::npos ? 0 : slash + 1);
    if (base.size() > 5 && base.substr(base.size() - 5) == ".yaml") names.push_back(base.substr(0, base.size() - 5));
  }
  std::sort(names.begin(), names.end());
  return names;
}

sim::config::Loader platform_loader() { return sim::config::Loader(&builtin_files(), "platforms"); }

LoadedPlatform resolve_platform(sim::config::Node root, const std::string& source,
                                const std::vector<std::string>& overrides) {
  sim::config::Loader::apply_overrides(root, overrides);
  sim::config::Resolver resolver(&root);
  LoadedPlatform out;
  out.spec = PlatformSpec::read(resolver.root());
  resolver.finish();
  out.source = source;
  out.resolved_yaml = resolver.resolved_yaml(
      fmt::format("Resolved wafersim platform (every default filled in).\nSource: {}{}", source,
                  overrides.empty() ? "" : fmt::format(" with {} --set override(s)", overrides.size())));
  return out;
}

LoadedPlatform load_platform(const std::string& path, const std::vector<std::string>& overrides) {
  return resolve_platform(platform_loader().load(path), path, overrides);
}

LoadedPlatform load_platform_text(std::string_view text, const std::string& name,
                                  const std::vector<std::string>& overrides) {
  return resolve_platform(platform_loader().load_text(text, name), name, overrides);
}

std::vector<sim::config::FieldDoc> platform_schema() {
  sim::config::Resolver resolver(nullptr);
  PlatformSpec::read(resolver.root());
  return resolver.docs();
}

std::string platform_schema_markdown() { return sim::config::markdown_table(platform_schema()); }

}  // namespace wafersim::platforms
