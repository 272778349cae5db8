#pragma once
// What MemoryX holds of a training between steps (functional runs): every cluster layer's FP32
// master weights and optimizer moments and the updates applied so far. A cluster rebuilt after
// a system failed resumes from it (docs/defects.md, "Failures while running").

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "memoryx/memoryx.h"

namespace wafersim::platforms::training {

struct LayerState {
  std::vector<float> w, m, v;  // moments empty when the optimizer keeps none
};

struct TrainingState {
  std::vector<LayerState> layers;
  std::uint32_t updates = 0;  // steps trained (every layer updated once per step)
};

// MemoryX's state after its run (functional MemoryX; every layer updated the same number of times).
TrainingState capture_state(const memoryx::MemoryX& memoryx);
// Loads `state` into a MemoryX of the same layers and optimizer (before the simulation).
// Throws std::invalid_argument when the layers' sizes differ.
void resume_state(memoryx::MemoryX& memoryx, const TrainingState& state);

// Bit-exact JSON (each vector as the hexadecimal of its bytes), for a run in a child process.
nlohmann::json to_json(const TrainingState& state);
TrainingState state_from_json(const nlohmann::json& j);

}  // namespace wafersim::platforms::training
