#pragma once
// A training run's final weights as their FP32 bit patterns, layer by layer, for tests that
// compare two runs bit for bit.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include "platforms/training/training_run.h"

namespace wafersim::test {

inline nlohmann::json final_weight_bits(const platforms::training::TrainingReport& r) {
  nlohmann::json layers = nlohmann::json::array();
  for (std::uint32_t l = 0; l < r.layers.layers.size(); ++l) {
    const auto flat = r.layers.flatten(l, r.final_parameters);
    std::vector<std::uint32_t> bits(flat.size());
    std::memcpy(bits.data(), flat.data(), flat.size() * sizeof(float));
    layers.push_back(bits);
  }
  return layers;
}

}  // namespace wafersim::test
