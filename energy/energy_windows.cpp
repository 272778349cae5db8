#include "energy/energy_windows.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace wafersim::energy {

using sim::trace::WindowTable;

namespace {
std::uint64_t femto(double joules) { return joules > 0 ? static_cast<std::uint64_t>(std::llround(joules * 1e15)) : 0; }
}  // namespace

EnergyWindowSampler::EnergyWindowSampler(const hw::CoreArray& cores, const fabric::Mesh& mesh,
                                         const EnergyConfig& config, Scale scale, std::uint32_t wafer,
                                         sim::trace::Recorder& recorder, const sim::trace::Rect& area)
    : cores_(cores),
      mesh_(mesh),
      config_(config),
      scale_(scale),
      wafer_(wafer),
      recorder_(recorder),
      grid_(sim::trace::RegionGrid::fit(area, recorder.options().max_cells)),
      process_(fmt::format("wafer{} power", wafer)) {
  if (!mesh.keeps_link_counters())
    throw std::logic_error("EnergyWindowSampler: the mesh does not keep the per-link counters it needs");
  now_.assign(grid_.cells(), Events{});
  last_.assign(grid_.cells(), Events{});
  const double per_pe = (config.pe.static_power + config.router.static_power) * config.static_scale();
  for (std::uint32_t c = 0; c < grid_.cells(); ++c) {
    static_w_.push_back(per_pe * grid_.rect(c).size());
    static_total_w_ += static_w_.back();
  }
  if (!recorder.options().windows) return;  // timeline counter only
  const std::string name = fmt::format("energy-w{}", wafer);
  table_ = &recorder.add_table(
      name + ".csv", name, fmt::format("wafer {}'s dynamic energy per window and region", wafer),
      {{"x", "PE", "column of the region's first (north-west) PE", WindowTable::Merge::Sum},
       {"y", "PE", "row of the region's first PE", WindowTable::Merge::Sum}},
      {{"compute", "fJ", "lane operations, instructions and busy cycles of the region's PEs", WindowTable::Merge::Sum},
       {"sram", "fJ", "SRAM port words read and written", WindowTable::Merge::Sum},
       {"fabric", "fJ", "router traversals, link hops and ramp crossings of the region's routers",
        WindowTable::Merge::Sum},
       {"total", "fJ", "compute + sram + fabric", WindowTable::Merge::Sum}});
}

void EnergyWindowSampler::sample(sim::Cycle at) {
  std::fill(now_.begin(), now_.end(), Events{});
  cores_.for_each_loaded([&](const hw::Core& core) {
    const hw::PeCoord pc = core.coord();
    if (grid_.area.contains(pc.x, pc.y)) add_core(now_[grid_.cell(pc.x, pc.y)], core.counters_at(at));
  });
  const auto& g = mesh_.geometry();
  for (std::uint32_t r : mesh_.counted_routers()) {
    const hw::PeCoord pc = g.coord(r);
    if (!grid_.area.contains(pc.x, pc.y)) continue;
    Events& e = now_[grid_.cell(pc.x, pc.y)];
    for (std::uint32_t p = 0; p < fabric::kPorts; ++p) add_router_port(e, p, mesh_.link_counters(r, p).forwarded);
  }
}

void EnergyWindowSampler::power(sim::Picos at, double watts) {
  sim::trace::Timeline* t = recorder_.timeline();
  if (!t || watts == last_power_) return;
  t->counter(process_, "power (W)", at, watts);
  last_power_ = watts;
}

void EnergyWindowSampler::close_window(std::uint64_t index, sim::Cycle start, sim::Cycle end) {
  sample(end);
  std::uint64_t key[2], v[kValues];
  std::uint64_t window_total = 0;
  for (std::uint32_t cell = 0; cell < grid_.cells(); ++cell) {
    Events d = now_[cell];
    d -= last_[cell];
    const Breakdown b = event_energy(d, config_, scale_);
    v[0] = femto(b.compute());
    v[1] = femto(b.sram);
    v[2] = femto(b.fabric());
    v[3] = v[0] + v[1] + v[2];
    for (std::uint32_t k = 0; k < kValues; ++k) totals_[k] += v[k];
    window_total += v[3];
    const sim::trace::Rect rc = grid_.rect(cell);
    key[0] = rc.x0;
    key[1] = rc.y0;
    if (table_) table_->add(index, key, v);
  }
  now_.swap(last_);
  last_end_ = end;
  if (end > start) {
    const double seconds = static_cast<double>((end - start).count()) / recorder_.clock().hz;
    power(recorder_.time_of(start), static_cast<double>(window_total) * 1e-15 / seconds + static_total_w_);
  }
}

void EnergyWindowSampler::skip_windows(std::uint64_t first, std::uint64_t count) {
  // As the PE windows: a core asleep while busy keeps counting its busy cycles.
  const std::uint64_t k = recorder_.window_cycles();
  for (std::uint64_t i = first; i < first + count; ++i) close_window(i, sim::Cycle(i * k), sim::Cycle((i + 1) * k));
}

void EnergyWindowSampler::finish(std::uint64_t /*windows*/) {
  power(recorder_.time_of(last_end_), static_total_w_);
  if (!table_) return;
  auto& meta = recorder_.meta()["energy"];
  if (!meta.contains("wafers")) meta = {{"recorded", true}, {"wafers", nlohmann::ordered_json::array()}};
  nlohmann::ordered_json j;
  j["wafer"] = wafer_;
  j["table"] = table_->name();
  j["unit"] = "fJ";
  j["area"] = {grid_.area.x0, grid_.area.y0, grid_.area.x1, grid_.area.y1};
  j["region_size"] = grid_.size;
  j["cols"] = grid_.cols;
  j["rows"] = grid_.rows;
  std::vector<std::uint32_t> pes(grid_.cells(), 0);
  for (std::uint32_t c = 0; c < grid_.cells(); ++c) pes[c] = grid_.rect(c).size();
  j["pes"] = pes;
  j["tile_area_mm2"] = config_.tile_area_mm2;
  j["static_w"] = static_w_;
  j["totals"] = {{"compute", totals_[0]}, {"sram", totals_[1]}, {"fabric", totals_[2]}, {"total", totals_[3]}};
  meta["wafers"].push_back(j);
}

}  // namespace wafersim::energy
