#include "sim/app/report/report_energy.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "sim/app/report/table_reader.h"
#include "sim/errors.h"

namespace wafersim::app::report {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

void add_energy(json& fabric, const fs::path& dir, const json& meta, const json& energy, std::uint64_t windows) {
  const fs::path meta_path = dir / "meta.json";
  for (const char* k : {"cols", "rows", "region_size", "area"})
    if (energy.at(k) != fabric.at(k))
      throw sim::InputError(
          fmt::format("{}: the energy windows of wafer {} are not on the fabric's regions ('{}' differs)",
                      meta_path.string(), fabric.at("wafer").dump(), k));
  const auto cols = fabric.at("cols").get<std::uint32_t>(), rows = fabric.at("rows").get<std::uint32_t>();
  const auto size = fabric.at("region_size").get<std::uint32_t>();
  const auto area = fabric.at("area").get<std::vector<std::uint32_t>>();
  const std::uint32_t cells = cols * rows;
  json& frames = fabric["frames"];
  const std::size_t frame_count = frames.size();
  const std::uint64_t per_frame = frame_count == 0 ? 1 : (windows + frame_count - 1) / frame_count;
  constexpr std::size_t kParts = 3;  // compute, sram, fabric
  std::vector<std::vector<std::uint64_t>> per_cell(frame_count, std::vector<std::uint64_t>(cells, 0));
  std::vector<std::vector<std::uint64_t>> series(kParts, std::vector<std::uint64_t>(windows, 0));
  const json& describe = meta.at("tables").at(field<std::string>(energy, "table", meta_path));
  if (describe.at("values").size() != kParts + 1)
    throw sim::InputError(fmt::format("{}: the energy table has {} values, expected {}", meta_path.string(),
                                      describe.at("values").size(), kParts + 1));
  const fs::path table = dir / describe.at("file").get<std::string>();
  read_table(table, describe, [&](const std::vector<std::uint64_t>& f, std::uint64_t line) {
    const std::uint64_t w = f[0], x = f[1], y = f[2];
    if (w >= windows || x < area[0] || y < area[1] || x > area[2] || y > area[3] || (x - area[0]) % size ||
        (y - area[1]) % size)
      throw sim::InputError(fmt::format("{}:{}: window or region out of range", table.string(), line));
    const auto cell = static_cast<std::uint32_t>((y - area[1]) / size * cols + (x - area[0]) / size);
    per_cell[w / per_frame][cell] += f[3 + kParts];
    for (std::size_t k = 0; k < kParts; ++k) series[k][w] += f[3 + k];
  });
  for (std::size_t fr = 0; fr < frame_count; ++fr) frames[fr]["energy"] = per_cell[fr];
  json out;
  for (const char* k : {"pes", "static_w", "tile_area_mm2", "totals"}) out[k] = energy.at(k);
  out["series"] = {{"compute", series[0]}, {"sram", series[1]}, {"fabric", series[2]}};
  fabric["energy"] = std::move(out);
}

}  // namespace wafersim::app::report
