#include "hw/trace/core_windows.h"

#include <fmt/format.h>

namespace wafersim::hw::trace {

using sim::trace::WindowTable;

namespace {
constexpr std::uint32_t kInUse = CoreWindowSampler::kPeValues + 4;  // the level among the values
}

CoreWindowSampler::CoreWindowSampler(const CoreArray& cores, std::uint32_t wafer, sim::trace::Recorder& recorder,
                                     const sim::trace::Rect& area)
    : cores_(cores),
      wafer_(wafer),
      recorder_(recorder),
      grid_(sim::trace::RegionGrid::fit(area, recorder.options().max_cells)),
      process_(fmt::format("wafer{} PEs", wafer)) {
  now_.assign(std::size_t{grid_.cells()} * kValues, 0);
  last_.assign(now_.size(), 0);
  totals_.assign(kValues, 0);
  if (!recorder.options().windows) return;  // timeline counter only
  const std::vector<WindowTable::Column> keys = {
      {"x", "PE", "column of the region's first (north-west) PE", WindowTable::Merge::Sum},
      {"y", "PE", "row of the region's first PE", WindowTable::Merge::Sum}};
  std::vector<WindowTable::Column> pe = {
      {"busy", "cycles", "cycles with a task running or a vector operation in flight, summed over the region's PEs",
       WindowTable::Merge::Sum},
      {"instructions", "instructions", "instructions issued", WindowTable::Merge::Sum},
      {"vector_elements", "elements", "elements processed by vector instructions", WindowTable::Merge::Sum},
      {"flops", "FLOP", "floating-point operations (an FMAC counts 2)", WindowTable::Merge::Sum},
      {"wavelets_in", "wavelets", "wavelets taken from the ramp", WindowTable::Merge::Sum},
      {"wavelets_out", "wavelets", "wavelets sent into the ramp", WindowTable::Merge::Sum}};
  for (int s = 0; s < kStallCauses; ++s)
    pe.push_back({"stall_" + std::string(stall_name(static_cast<Stall>(s))), "thread-cycles",
                  std::string(stall_description(static_cast<Stall>(s))), WindowTable::Merge::Sum});
  const std::string pe_name = fmt::format("pe-w{}", wafer), sram_name = fmt::format("sram-w{}", wafer);
  pe_table_ = &recorder.add_table(pe_name + ".csv", pe_name,
                                  fmt::format("wafer {}'s PE cores per window and region: busy cycles, work and "
                                              "stalled thread-cycles by cause",
                                              wafer),
                                  keys, std::move(pe));
  sram_table_ = &recorder.add_table(
      sram_name + ".csv", sram_name,
      fmt::format("wafer {}'s PE SRAM per window and region: accesses and bytes in use", wafer), keys,
      {{"reads", "accesses", "SRAM read port accesses (one port word each)", WindowTable::Merge::Sum},
       {"writes", "accesses", "SRAM write port accesses (one port word each)", WindowTable::Merge::Sum},
       {"bytes_read", "B", "element bytes read by instructions", WindowTable::Merge::Sum},
       {"bytes_written", "B", "element bytes written by instructions", WindowTable::Merge::Sum},
       {"in_use", "B", "bytes the loaded programs occupy (data and descriptor ranges), summed over the region's PEs",
        WindowTable::Merge::Max}});
}

void CoreWindowSampler::sample(sim::Cycle at) {
  std::fill(now_.begin(), now_.end(), 0);
  std::uint64_t loaded = 0;
  cores_.for_each_loaded([&](const Core& core) {
    const PeCoord pc = core.coord();
    if (!grid_.area.contains(pc.x, pc.y)) return;
    ++loaded;
    std::uint64_t* v = &now_[std::size_t{grid_.cell(pc.x, pc.y)} * kValues];
    const CoreCounters k = core.counters_at(at);
    v[0] += k.busy_cycles;
    v[1] += k.instructions;
    v[2] += k.vector_elements;
    v[3] += k.flops;
    v[4] += k.wavelets_in;
    v[5] += k.wavelets_out;
    for (int s = 0; s < kStallCauses; ++s) v[6 + s] += k.stall[s];
    v[kPeValues + 0] += k.sram_reads;
    v[kPeValues + 1] += k.sram_writes;
    v[kPeValues + 2] += k.sram_bytes_read;
    v[kPeValues + 3] += k.sram_bytes_written;
    v[kInUse] += core.sram_in_use();
  });
  max_loaded_ = std::max(max_loaded_, loaded);
}

void CoreWindowSampler::close_window(std::uint64_t index, sim::Cycle start, sim::Cycle end) {
  sample(end);
  std::uint64_t key[2];
  std::uint64_t delta[kValues];
  std::uint64_t busy = 0;
  for (std::uint32_t cell = 0; cell < grid_.cells(); ++cell) {
    const sim::trace::Rect rc = grid_.rect(cell);
    const std::size_t i = std::size_t{cell} * kValues;
    for (std::uint32_t v = 0; v < kValues; ++v) {
      delta[v] = v == kInUse ? now_[i + v] : now_[i + v] - last_[i + v];
      if (v != kInUse) totals_[v] += delta[v];
    }
    totals_[kInUse] = std::max(totals_[kInUse], delta[kInUse]);
    busy += delta[0];
    key[0] = rc.x0;
    key[1] = rc.y0;
    if (pe_table_) pe_table_->add(index, key, delta);
    if (sram_table_) sram_table_->add(index, key, delta + kPeValues);
  }
  now_.swap(last_);
  last_end_ = end;
  sim::trace::Timeline* t = recorder_.timeline();
  if (t && end > start && max_loaded_ > 0 && !(busy == 0 && counter_zero_)) {
    t->counter(process_, "PEs busy", recorder_.time_of(start),
               static_cast<double>(busy) / static_cast<double>((end - start).count()));
    counter_zero_ = busy == 0;
  }
}

void CoreWindowSampler::skip_windows(std::uint64_t first, std::uint64_t count) {
  // The engine did not tick, but a core asleep while busy (a long operation, a stall it
  // waits out) keeps counting: each skipped window is closed like any other, from
  // counters_at, so that idle skipping changes no row.
  const std::uint64_t k = recorder_.window_cycles();
  for (std::uint64_t i = first; i < first + count; ++i) close_window(i, sim::Cycle(i * k), sim::Cycle((i + 1) * k));
}

void CoreWindowSampler::finish(std::uint64_t /*windows*/) {
  sim::trace::Timeline* t = recorder_.timeline();
  if (t && !counter_zero_) t->counter(process_, "PEs busy", recorder_.time_of(last_end_), 0);
  auto& pe = recorder_.meta()["pe"];
  auto& sram = recorder_.meta()["sram"];
  if (max_loaded_ == 0) {
    if (!pe.value("recorded", false)) {
      pe = {{"recorded", false}, {"reason", "no PE ran a program in this run"}};
      sram = pe;
    }
    return;
  }
  if (!pe_table_) {
    if (!pe.value("recorded", false)) {
      pe = {{"recorded", false}, {"reason", "PE windows were not traced (--trace windows)"}};
      sram = pe;
    }
    return;
  }
  if (!pe.value("recorded", false)) {
    pe = {{"recorded", true}, {"wafers", nlohmann::ordered_json::array()}};
    sram = {{"recorded", true}, {"wafers", nlohmann::ordered_json::array()}};
  }
  std::vector<std::uint32_t> pes(grid_.cells(), 0);
  for (std::uint32_t c = 0; c < grid_.cells(); ++c) pes[c] = grid_.rect(c).size();
  nlohmann::ordered_json j;
  j["wafer"] = wafer_;
  j["table"] = pe_table_->name();
  j["area"] = {grid_.area.x0, grid_.area.y0, grid_.area.x1, grid_.area.y1};
  j["region_size"] = grid_.size;
  j["cols"] = grid_.cols;
  j["rows"] = grid_.rows;
  j["pes"] = pes;
  j["pes_loaded"] = max_loaded_;
  nlohmann::ordered_json causes = nlohmann::ordered_json::array();
  for (int s = 0; s < kStallCauses; ++s) causes.push_back(std::string(stall_name(static_cast<Stall>(s))));
  j["stall_causes"] = causes;
  nlohmann::ordered_json totals;
  totals["busy"] = totals_[0];
  totals["instructions"] = totals_[1];
  totals["vector_elements"] = totals_[2];
  totals["flops"] = totals_[3];
  totals["wavelets_in"] = totals_[4];
  totals["wavelets_out"] = totals_[5];
  for (int s = 0; s < kStallCauses; ++s)
    totals["stall_" + std::string(stall_name(static_cast<Stall>(s)))] = totals_[6 + s];
  j["totals"] = totals;
  pe["wafers"].push_back(j);
  nlohmann::ordered_json k;
  k["wafer"] = wafer_;
  k["table"] = sram_table_->name();
  k["capacity_bytes"] = cores_.params().sram_bytes;
  k["totals"] = {{"reads", totals_[kPeValues]},
                 {"writes", totals_[kPeValues + 1]},
                 {"bytes_read", totals_[kPeValues + 2]},
                 {"bytes_written", totals_[kPeValues + 3]},
                 {"in_use", totals_[kInUse]}};
  sram["wafers"].push_back(k);
}

}  // namespace wafersim::hw::trace
