#include "fabric/defects/defect_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "sim/config/loader.h"

namespace wafersim::fabric::defects {
namespace {

// The physical cell at `at` ([x, y]) if it lies in the array; an error on `s` otherwise.
bool read_cell(sim::config::Section& s, const PhysicalArray& array, std::uint32_t& x, std::uint32_t& y) {
  const auto at = s.integers("at", {}, 0, 65535, "physical coordinates [x, y] on the physical array");
  if (at.size() != 2) {
    s.error("at", "expected [x, y]");
    return false;
  }
  if (!array.contains(at[0], at[1])) {
    s.error("at", fmt::format("({}, {}) lies outside the {} x {} physical array", at[0], at[1], array.width(),
                              array.height()));
    return false;
  }
  x = static_cast<std::uint32_t>(at[0]);
  y = static_cast<std::uint32_t>(at[1]);
  return true;
}

}  // namespace

double DefectConfig::core_kill_probability() const { return -std::expm1(-density_per_mm2 * core_area_mm2); }

void read_defect_list(const std::string& path, const PhysicalArray& array, DefectConfig& out) {
  const sim::config::Node root = sim::config::Loader().load(path);
  sim::config::Resolver resolver(&root);
  auto s = resolver.root();
  s.text("description", "", "free text");
  for (auto& c : s.sections("cores", "dead cores")) {
    DeadCore d;
    if (read_cell(c, array, d.x, d.y)) out.cores.push_back(d);
  }
  for (auto& l : s.sections("links", "dead links")) {
    DeadLink d;
    const std::string port = l.choice("port", "east", {"north", "east", "south", "west"}, "the link's side");
    d.port = port == "north" ? Port::North : port == "south" ? Port::South : port == "west" ? Port::West : Port::East;
    if (!read_cell(l, array, d.x, d.y)) continue;
    const std::int64_t nx = std::int64_t{d.x} + (d.port == Port::East ? 1 : d.port == Port::West ? -1 : 0);
    const std::int64_t ny = std::int64_t{d.y} + (d.port == Port::South ? 1 : d.port == Port::North ? -1 : 0);
    if (!array.contains(nx, ny)) {
      l.error("port", fmt::format("core ({}, {}) has no neighbour beyond its {} side", d.x, d.y, port));
      continue;
    }
    out.links.push_back(d);
  }
  resolver.finish();
}

DefectConfig DefectConfig::read(sim::config::Section s, const PhysicalArray& array) {
  DefectConfig c;
  c.density_per_mm2 = s.real("density_per_mm2", 0, 0, 1e6,
                             "expected defects per mm^2 of core silicon, sampled independently per core (0: none)");
  c.core_area_mm2 = s.real("core_area_mm2", 0.05, 1e-6, 1e4, "silicon area of one core in mm^2, for the density");
  c.seed = static_cast<std::uint64_t>(
      s.integer("seed", 1, 0, std::int64_t{1} << 62, "seed of the sampled defect map (each wafer mixes in its index)"));
  const std::string file = s.text(
      "file", "", "a list of dead cores and links in physical coordinates (docs/defects.md), relative to this file");
  if (file.empty()) return c;
  if (c.density_per_mm2 > 0) {
    s.error("file", "give either a density or a file of defects, not both");
    return c;
  }
  std::filesystem::path p(file);
  const std::string from = s.location("file").file;
  if (p.is_relative() && !from.empty() && from.front() != '<') p = std::filesystem::path(from).parent_path() / p;
  if (!std::filesystem::is_regular_file(p)) {
    s.error("file", fmt::format("cannot read the defect list '{}'", p.string()));
    return c;
  }
  c.file = p.string();
  read_defect_list(c.file, array, c);
  return c;
}

}  // namespace wafersim::fabric::defects
