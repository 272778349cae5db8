#include "fabric/trace/mesh_windows.h"

#include <fmt/format.h>

#include <stdexcept>

namespace wafersim::fabric::trace {

using sim::trace::WindowTable;

MeshWindowSampler::MeshWindowSampler(const Mesh& mesh, std::uint32_t wafer, sim::trace::Recorder& recorder,
                                     const sim::trace::Rect& area, bool by_color)
    : mesh_(mesh),
      wafer_(wafer),
      recorder_(recorder),
      grid_(sim::trace::RegionGrid::fit(area, recorder.options().max_cells)),
      by_color_(by_color),
      colors_(by_color ? mesh.colors() : 1),
      table_(nullptr),
      process_(fmt::format("wafer{} fabric", wafer)) {
  if (!mesh.keeps_link_counters() || (by_color && !mesh.keeps_color_counters()))
    throw std::logic_error("MeshWindowSampler: the mesh does not keep the per-link counters it needs");
  const std::size_t n = std::size_t{grid_.cells()} * kPorts * colors_ * kValues;
  now_.assign(n, 0);
  last_.assign(n, 0);

  if (!recorder.options().windows) return;  // timeline counters only
  std::vector<WindowTable::Column> keys = {
      {"x", "router", "column of the region's first (north-west) router", WindowTable::Merge::Sum},
      {"y", "router", "row of the region's first router", WindowTable::Merge::Sum},
      {"dir", "", "0 north, 1 east, 2 south, 3 west, 4 ramp", WindowTable::Merge::Sum}};
  if (by_color) keys.push_back({"color", "", "color (virtual channel)", WindowTable::Merge::Sum});
  const std::string name = fmt::format("fabric-w{}", wafer);
  table_ = &recorder.add_table(
      name + ".csv", name,
      fmt::format("wafer {}'s fabric per window, region, direction{}", wafer, by_color ? " and color" : ""),
      std::move(keys),
      {{"forwarded", "wavelets", "wavelets sent through the routers' outputs towards dir", WindowTable::Merge::Sum},
       {"stalled", "output-color-cycles", "cycles a color had a wavelet for the output towards dir but no credit",
        WindowTable::Merge::Sum},
       {"occupancy", "wavelet-cycles", "integral of the wavelets queued in the input queues from dir",
        WindowTable::Merge::Sum}});
  // Links per region and direction (an output exists where a neighbour, an edge channel or
  // the ramp is beyond it): the denominators of utilization.
  const MeshGeometry& g = mesh.geometry();
  std::vector<std::vector<std::uint32_t>> links(grid_.cells(), std::vector<std::uint32_t>(kPorts, 0));
  std::vector<std::uint32_t> routers(grid_.cells(), 0);
  for (std::uint32_t y = grid_.area.y0; y <= grid_.area.y1; ++y)
    for (std::uint32_t x = grid_.area.x0; x <= grid_.area.x1; ++x) {
      const std::uint32_t cell = grid_.cell(x, y), r = g.router(x, y);
      ++routers[cell];
      for (std::uint32_t p = 0; p < kPorts; ++p)
        if (g.connected(r, port_at(p))) ++links[cell][p];
    }
  nlohmann::ordered_json j;
  j["wafer"] = wafer;
  j["table"] = name;
  j["width"] = g.width();
  j["height"] = g.height();
  j["area"] = {grid_.area.x0, grid_.area.y0, grid_.area.x1, grid_.area.y1};
  j["region_size"] = grid_.size;
  j["cols"] = grid_.cols;
  j["rows"] = grid_.rows;
  j["colors"] = mesh.colors();
  j["by_color"] = by_color;
  j["routers"] = routers;
  j["links"] = links;
  j["directions"] = {"north", "east", "south", "west", "ramp"};
  recorder.meta()["fabric"].push_back(std::move(j));
}

void MeshWindowSampler::sample() {
  std::fill(now_.begin(), now_.end(), 0);
  const MeshGeometry& g = mesh_.geometry();
  const std::uint32_t per_cell = kPorts * colors_ * kValues;
  for (std::uint32_t r : mesh_.counted_routers()) {
    const hw::PeCoord pc = g.coord(r);
    if (!grid_.area.contains(pc.x, pc.y)) continue;
    std::uint64_t* cell = &now_[std::size_t{grid_.cell(pc.x, pc.y)} * per_cell];
    for (std::uint32_t p = 0; p < kPorts; ++p)
      for (std::uint32_t c = 0; c < colors_; ++c) {
        const LinkCounters k = by_color_ ? mesh_.link_counters(r, p, c) : mesh_.link_counters(r, p);
        std::uint64_t* v = cell + (p * colors_ + c) * kValues;
        v[0] += k.forwarded;
        v[1] += k.stalled;
        v[2] += k.occupancy;
      }
  }
}

void MeshWindowSampler::counters(sim::Picos at, double forwarded, double stalled, double occupancy) {
  sim::trace::Timeline* t = recorder_.timeline();
  if (!t) return;
  t->counter(process_, "wavelets forwarded per cycle", at, forwarded);
  t->counter(process_, "credit stalls per cycle", at, stalled);
  t->counter(process_, "wavelets queued (mean)", at, occupancy);
}

void MeshWindowSampler::close_window(std::uint64_t index, sim::Cycle start, sim::Cycle end) {
  sample();
  std::uint64_t key[4];
  std::uint64_t delta[kValues];
  std::uint64_t window_totals[kValues] = {};
  for (std::uint32_t cell = 0; cell < grid_.cells(); ++cell) {
    const sim::trace::Rect rc = grid_.rect(cell);
    for (std::uint32_t p = 0; p < kPorts; ++p)
      for (std::uint32_t c = 0; c < colors_; ++c) {
        const std::size_t i = ((std::size_t{cell} * kPorts + p) * colors_ + c) * kValues;
        for (std::uint32_t v = 0; v < kValues; ++v) {
          delta[v] = now_[i + v] - last_[i + v];
          window_totals[v] += delta[v];
        }
        key[0] = rc.x0;
        key[1] = rc.y0;
        key[2] = p;
        key[3] = c;
        if (table_) table_->add(index, key, delta);
      }
  }
  now_.swap(last_);
  last_end_ = end;
  for (std::uint32_t v = 0; v < kValues; ++v) totals_[v] += window_totals[v];
  const bool zero = window_totals[0] == 0 && window_totals[1] == 0 && window_totals[2] == 0;
  // Zero after zero is left out: a window the engine skipped writes nothing either.
  if (recorder_.timeline() && end > start && !(zero && counters_zero_)) {
    const auto cycles = static_cast<double>((end - start).count());
    counters(recorder_.time_of(start), static_cast<double>(window_totals[0]) / cycles,
             static_cast<double>(window_totals[1]) / cycles, static_cast<double>(window_totals[2]) / cycles);
    counters_zero_ = zero;
  }
}

void MeshWindowSampler::skip_windows(std::uint64_t first, std::uint64_t /*count*/) {
  if (counters_zero_) return;
  counters(recorder_.time_of(sim::Cycle(first * recorder_.window_cycles())), 0, 0, 0);
  counters_zero_ = true;
}

void MeshWindowSampler::finish(std::uint64_t /*windows*/) {
  if (!counters_zero_) counters(recorder_.time_of(last_end_), 0, 0, 0);
  if (!table_) return;
  for (auto& f : recorder_.meta()["fabric"])
    if (f["wafer"] == wafer_)
      f["totals"] = {{"forwarded", totals_[0]}, {"stalled", totals_[1]}, {"occupancy", totals_[2]}};
}

}  // namespace wafersim::fabric::trace
