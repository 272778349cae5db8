#include "platforms/training/training_state.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace wafersim::platforms::training {

TrainingState capture_state(const memoryx::MemoryX& memoryx) {
  TrainingState s;
  const auto L = static_cast<std::uint32_t>(memoryx.layers().size());
  for (std::uint32_t l = 0; l < L; ++l) {
    s.layers.push_back(LayerState{memoryx.weights(l), memoryx.moment1(l), memoryx.moment2(l)});
    const std::uint32_t done = memoryx.updates_before(l) + memoryx.updates_done(l);
    if (l > 0 && done != s.updates) throw std::logic_error("capture_state: layers updated unequally");
    s.updates = done;
  }
  return s;
}

void resume_state(memoryx::MemoryX& memoryx, const TrainingState& state) {
  if (state.layers.size() != memoryx.layers().size())
    throw std::invalid_argument("resume_state: a state of another model's layers");
  for (std::uint32_t l = 0; l < state.layers.size(); ++l) {
    const LayerState& s = state.layers[l];
    memoryx.resume(l, s.w, s.m, s.v, state.updates);
  }
}

namespace {

std::string hex_of(const std::vector<float>& v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(v.size() * 8, '0');
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v[i], 4);
    for (int d = 7; d >= 0; --d, bits >>= 4) out[i * 8 + static_cast<std::size_t>(d)] = kDigits[bits & 15U];
  }
  return out;
}

std::vector<float> floats_of(const std::string& hex) {
  if (hex.size() % 8 != 0) throw std::invalid_argument("state_from_json: a vector's hex is not whole floats");
  std::vector<float> v(hex.size() / 8);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto bits = static_cast<std::uint32_t>(std::stoul(hex.substr(i * 8, 8), nullptr, 16));
    std::memcpy(&v[i], &bits, 4);
  }
  return v;
}

}  // namespace

nlohmann::json to_json(const TrainingState& state) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : state.layers) layers.push_back({{"w", hex_of(l.w)}, {"m", hex_of(l.m)}, {"v", hex_of(l.v)}});
  return {{"updates", state.updates}, {"layers", layers}};
}

TrainingState state_from_json(const nlohmann::json& j) {
  TrainingState s;
  s.updates = j.at("updates").get<std::uint32_t>();
  for (const auto& l : j.at("layers"))
    s.layers.push_back(LayerState{floats_of(l.at("w").get<std::string>()), floats_of(l.at("m").get<std::string>()),
                                  floats_of(l.at("v").get<std::string>())});
  return s;
}

}  // namespace wafersim::platforms::training
