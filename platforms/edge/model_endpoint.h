#pragma once
// A stand-in for a wafer at the edge: consumes each layer's weight chunks in order at a
// configured rate (the layer's compute), spends a fixed time on the loss between the forward
// and backward passes, and emits one gradient chunk per backward weight chunk as soon as that
// chunk has been consumed. Lets the MemoryX -> SwarmX -> wafers -> SwarmX -> MemoryX loop run
// before the compiled wafer programs exist.

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "platforms/edge/edge_endpoint.h"

namespace wafersim::platforms::edge {

struct LayerRates {
  units::Bandwidth forward{0};   // weight bytes consumed per second in the forward pass (0: instantly)
  units::Bandwidth backward{0};  // the same in the backward pass
};

// Fills `out` (chunk.bytes / 4 values) with the gradient this endpoint produces for `info`.
using GradientFn = std::function<void(std::uint32_t endpoint, const sim::stream::ChunkInfo& info,
                                      const std::vector<float>& weights, std::vector<float>& out)>;
// Sees every weight chunk an endpoint consumes (functional runs), forward and backward, in order.
using WeightsFn =
    std::function<void(std::uint32_t endpoint, const sim::stream::ChunkInfo& info, const std::vector<float>& weights)>;

struct ModelEndpointConfig {
  std::uint32_t layers = 1;           // the loss follows the forward stream of layer layers-1
  LayerRates rates;                   // for every layer without an entry in per_layer
  std::vector<LayerRates> per_layer;  // optional, indexed by layer
  units::Duration loss_time{0};
  bool functional = false;
  std::uint64_t seed = 1;  // of the default gradients
  GradientFn gradient;     // default: default_gradient()
  WeightsFn weights_seen;  // optional
};

class ModelEndpoint : public EdgeEndpoint {
 public:
  ModelEndpoint(const sc_core::sc_module_name& name, const EdgeIoConfig& io, std::uint32_t index,
                ModelEndpointConfig config, sim::stats::Group& stats);

  // The default gradient element: uniform in [-1, 1) from (seed, endpoint, layer, step, element).
  static float default_gradient(std::uint64_t seed, std::uint32_t endpoint, std::uint32_t layer, std::uint32_t step,
                                std::uint64_t element);

  [[nodiscard]] std::uint64_t chunks_consumed() const { return consumed_; }
  [[nodiscard]] std::string describe_state() const override;

 private:
  sim::Picos step(sim::Picos now) override;
  [[nodiscard]] const LayerRates& rates(std::uint32_t layer) const;
  sim::stream::Chunk make_gradient(const sim::stream::Chunk& weights) const;

  struct Waiting {
    sim::stream::Chunk chunk;
    sim::Picos ready;
  };
  ModelEndpointConfig config_;
  std::uint32_t stream_ = 0;  // next chunk expected: stream and index
  std::uint32_t index_ = 0;
  bool busy_ = false;
  bool in_loss_ = false;
  bool loss_pending_ = false;
  sim::Picos busy_end_{0};
  std::uint32_t busy_plane_ = 0;
  std::vector<std::deque<Waiting>> gradients_;  // per plane: produced, waiting for the link
  std::vector<std::uint32_t> held_;             // per plane: gradient slots reserved (waiting + on the link)
  std::uint64_t consumed_ = 0, busy_ps_ = 0;
};

}  // namespace wafersim::platforms::edge
