#include "platforms/edge_windows.h"

#include <fmt/format.h>

namespace wafersim::platforms {

using sim::trace::WindowTable;

EdgeWindowSampler::EdgeWindowSampler(const edge::WaferEdge& edge, std::uint32_t wafer, sim::trace::Recorder& recorder)
    : edge_(edge), wafer_(wafer), recorder_(recorder) {
  if (!recorder.options().windows) return;
  const std::string name = fmt::format("edge-w{}", wafer);
  table_ = &recorder.add_table(
      name + ".csv", name,
      fmt::format("wafer {}'s edge per window: wavelets into and out of the mesh and the cycles it waited", wafer),
      {{"wafer", "", "the wafer (its index in the cluster)", WindowTable::Merge::Sum}},
      {{"wavelets_in", "wavelets", "wavelets into the mesh's west edge channels (weights)", WindowTable::Merge::Sum},
       {"wavelets_out", "wavelets", "wavelets out of the mesh's east edge channels (gradients)",
        WindowTable::Merge::Sum},
       {"starved", "cycles", "cycles an in-stream waited for its weights to arrive from the cluster",
        WindowTable::Merge::Sum},
       {"fabric_blocked", "channel-cycles", "channel-cycles an in-stream had a wavelet but the mesh no credit",
        WindowTable::Merge::Sum},
       {"io_limited_in", "channel-cycles", "channel-cycles a weight wavelet was held back by the system's I/O limit",
        WindowTable::Merge::Sum},
       {"io_limited_out", "channel-cycles", "channel-cycles a gradient wavelet was held back by the system's I/O limit",
        WindowTable::Merge::Sum},
       {"held_gradients", "cycles", "cycles no gradient wavelet left the mesh for lack of room at the edge",
        WindowTable::Merge::Sum}});
}

std::array<std::uint64_t, EdgeWindowSampler::kValues> EdgeWindowSampler::sample(sim::Cycle at) const {
  const edge::WaferEdge::Counters k = edge_.counters_at(at);
  return {edge_.wavelets_sent(), edge_.wavelets_received(), k.starved,       k.fabric_blocked,
          k.io_limited_in,       k.io_limited_out,          k.held_gradients};
}

void EdgeWindowSampler::close_window(std::uint64_t index, sim::Cycle /*start*/, sim::Cycle end) {
  const auto now = sample(end);
  std::uint64_t delta[kValues];
  for (std::size_t v = 0; v < kValues; ++v) delta[v] = now[v] - last_[v];
  last_ = now;
  const std::uint64_t key[1] = {wafer_};
  if (table_) table_->add(index, key, delta);
}

void EdgeWindowSampler::skip_windows(std::uint64_t first, std::uint64_t count) {
  // A wait the edge sleeps through keeps counting: each skipped window is closed from
  // counters_at like any other.
  const std::uint64_t k = recorder_.window_cycles();
  for (std::uint64_t i = first; i < first + count; ++i) close_window(i, sim::Cycle(i * k), sim::Cycle((i + 1) * k));
}

void EdgeWindowSampler::finish(std::uint64_t /*windows*/) {
  if (!table_) return;
  auto& edge = recorder_.meta()["edge"];
  if (!edge.is_object() || !edge.value("recorded", false))
    edge = {{"recorded", true}, {"wafers", nlohmann::ordered_json::array()}};
  edge["wafers"].push_back({{"wafer", wafer_}, {"table", table_->name()}});
}

}  // namespace wafersim::platforms
