#pragma once
// A compiled model as the cluster sees it: one MemoryX layer per model layer with parameters
// (its parameter tensors concatenated, FP32), and the compute time each wafer spends per
// layer and pass, taken from the per-program wafer times (docs/training.md, "Timing").

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memoryx/placement.h"
#include "models/reference/model.h"
#include "platforms/edge/model_endpoint.h"
#include "platforms/training/wafer_times.h"
#include "sim/picos.h"

namespace wafersim::platforms::training {

// A parameter tensor inside its cluster layer's flat FP32 vector.
struct ParameterSlot {
  std::string name;
  models::Shape shape;
  std::uint64_t offset = 0;  // elements
};

struct ClusterLayer {
  std::string name;                       // the model layer owning the parameters
  std::vector<ParameterSlot> parameters;  // in the model's parameter order
  std::uint64_t params = 0;               // elements in all
  std::vector<std::string> carries;       // parameterless layers whose time this layer carries
  sim::Picos forward{0}, backward{0};     // compute per wafer (backward: data and weight gradients)
  // Sparse weights: parameters kept (pruned weights excluded; the bias and other tensors all
  // count), 0 when dense; `mask` per parameter (functional runs only); the weight density.
  std::uint64_t kept = 0;
  std::shared_ptr<const std::vector<std::uint8_t>> mask;
  double density = 1.0;
  [[nodiscard]] std::uint64_t stream_bytes() const;  // one weight stream (memoryx::LayerSpec::stream_bytes)
};

struct ClusterModel {
  std::vector<ClusterLayer> layers;
  std::vector<std::string> loss_layers;  // parameterless layers after the last layer with parameters
  sim::Picos loss{0};                    // their forward and backward time (between the passes)
  [[nodiscard]] std::vector<memoryx::LayerSpec> memoryx_layers() const;
  // Rates that make each wafer consume a layer's FP32 weight stream in its compute time.
  [[nodiscard]] platforms::edge::ModelEndpointConfig endpoint_config() const;
  // The flat FP32 vector of cluster layer `l` from named parameters, and back.
  [[nodiscard]] std::vector<float> flatten(std::uint32_t l, const models::reference::TensorMap& parameters) const;
  void unflatten(std::uint32_t l, const std::vector<float>& flat, models::reference::TensorMap& out) const;
};

// Groups the programs' times by layer: a parameterless layer is carried by the nearest
// layer with parameters before it (or the first one), except those after the last layer
// with parameters, which form the loss. Throws sim::InputError when no layer has parameters.
// A sparse layer (model.spec().sparsity) keeps `kept` parameters, and its own programs'
// times scale with its weight density: ceil(t x kept weights / weights) (docs/training.md);
// `masks` materialises the per-parameter masks (functional runs).
ClusterModel cluster_model(const models::reference::Model& model, const WaferTimes& times, bool masks = false);

// Cycles at `clock_hz` in picoseconds, rounded to nearest.
sim::Picos cycles_to_picos(std::uint64_t cycles, double clock_hz);

}  // namespace wafersim::platforms::training
