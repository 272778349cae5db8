#include "platforms/training/cluster_model.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "sim/errors.h"

__extension__ typedef unsigned __int128 u128;

namespace wafersim::platforms::training {

sim::Picos cycles_to_picos(std::uint64_t cycles, double clock_hz) {
  return sim::Picos(static_cast<std::uint64_t>(std::llround(static_cast<double>(cycles) * 1e12 / clock_hz)));
}

ClusterModel cluster_model(const models::reference::Model& model, const WaferTimes& times, bool masks) {
  const models::ModelSpec& spec = model.spec();
  std::map<std::string, std::vector<const models::reference::ParameterInfo*>> params;
  for (const auto& p : model.parameters()) params[p.layer].push_back(&p);
  ClusterModel cm;
  std::map<std::string, int> owner;  // model layer -> cluster layer (-1: the loss)
  std::vector<std::string> pending;  // parameterless layers before the first layer with parameters
  for (const auto& l : spec.layers) {
    auto it = params.find(l.name);
    if (it == params.end()) {
      if (cm.layers.empty()) {
        pending.push_back(l.name);
      } else {
        cm.layers.back().carries.push_back(l.name);
        owner[l.name] = static_cast<int>(cm.layers.size() - 1);
      }
      continue;
    }
    ClusterLayer c;
    c.name = l.name;
    for (const auto* p : it->second) {
      c.parameters.push_back(ParameterSlot{p->name, p->shape, c.params});
      c.params += p->shape.elements();
    }
    if (const models::LayerSparsity* sp = spec.sparsity.find(l.name)) {
      const std::string weight = l.name + ".weight";
      std::uint64_t at = 0;
      bool found = false;
      for (const auto& slot : c.parameters)
        if (slot.name == weight && slot.shape.elements() == sp->elements()) {
          at = slot.offset;
          found = true;
        }
      if (!found)
        throw sim::InputError(
            fmt::format("sparse layer '{}' has no {} x {} weight tensor", l.name, sp->rows, sp->cols));
      c.kept = c.params - sp->elements() + sp->kept;
      c.density = static_cast<double>(sp->kept) / static_cast<double>(sp->elements());
      if (masks) {
        const models::WeightMask w = sp->mask(spec.sparsity.seed);
        auto m = std::make_shared<std::vector<std::uint8_t>>(c.params, std::uint8_t{1});
        std::copy(w.begin(), w.end(), m->begin() + static_cast<std::ptrdiff_t>(at));
        c.mask = std::move(m);
      }
    }
    owner[l.name] = static_cast<int>(cm.layers.size());
    cm.layers.push_back(std::move(c));
  }
  if (cm.layers.empty())
    throw sim::InputError(fmt::format("model '{}' has no layer with parameters: nothing to train", spec.name));
  for (const auto& n : pending) {
    cm.layers.front().carries.insert(cm.layers.front().carries.begin(), n);
    owner[n] = 0;
  }
  // Parameterless layers after the last layer with parameters run between the passes.
  auto& last = cm.layers.back();
  for (const auto& n : last.carries) {
    cm.loss_layers.push_back(n);
    owner[n] = -1;
  }
  last.carries.clear();
  for (const auto& p : times.programs) {
    auto it = owner.find(p.layer);
    if (it == owner.end())
      throw sim::SimulationError(fmt::format("a program of layer '{}' belongs to no model layer", p.layer));
    std::uint64_t cycles = p.cycles;
    if (const models::LayerSparsity* sp = spec.sparsity.find(p.layer))
      cycles = static_cast<std::uint64_t>((static_cast<u128>(cycles) * sp->kept + sp->elements() - 1) / sp->elements());
    const sim::Picos t = cycles_to_picos(cycles, times.clock_hz);
    if (it->second < 0) {
      cm.loss += t;
      continue;
    }
    auto& c = cm.layers[static_cast<std::size_t>(it->second)];
    (p.phase == models::compiler::Phase::Forward ? c.forward : c.backward) += t;
  }
  return cm;
}

std::vector<memoryx::LayerSpec> ClusterModel::memoryx_layers() const {
  std::vector<memoryx::LayerSpec> out;
  for (const auto& l : layers) out.push_back(memoryx::LayerSpec{l.name, l.params, l.kept, l.mask});
  return out;
}

std::uint64_t ClusterLayer::stream_bytes() const { return memoryx::LayerSpec{name, params, kept, mask}.stream_bytes(); }

platforms::edge::ModelEndpointConfig ClusterModel::endpoint_config() const {
  platforms::edge::ModelEndpointConfig ec;
  ec.layers = static_cast<std::uint32_t>(layers.size());
  ec.loss_time = units::Duration{loss.seconds()};
  auto rate = [](std::uint64_t bytes, sim::Picos t) {
    // 0 means "instantly" to the endpoint; a layer that takes no time consumes at once.
    return units::Bandwidth{t.count() ? static_cast<double>(bytes * 8) / t.seconds() : 0.0};
  };
  for (const auto& l : layers)
    ec.per_layer.push_back({rate(l.stream_bytes(), l.forward), rate(l.stream_bytes(), l.backward)});
  return ec;
}

std::vector<float> ClusterModel::flatten(std::uint32_t l, const models::reference::TensorMap& parameters) const {
  const ClusterLayer& c = layers.at(l);
  std::vector<float> flat(c.params);
  for (const auto& p : c.parameters) {
    auto it = parameters.find(p.name);
    if (it == parameters.end()) throw sim::InputError(fmt::format("parameter '{}' is missing", p.name));
    const auto v = it->second.converted(models::reference::Format::FP32).to_floats();
    std::copy(v.begin(), v.end(), flat.begin() + static_cast<std::ptrdiff_t>(p.offset));
  }
  return flat;
}

void ClusterModel::unflatten(std::uint32_t l, const std::vector<float>& flat, models::reference::TensorMap& out) const {
  const ClusterLayer& c = layers.at(l);
  for (const auto& p : c.parameters) {
    const auto first = flat.begin() + static_cast<std::ptrdiff_t>(p.offset);
    out[p.name] = models::reference::Tensor::of_floats(
        p.shape, std::vector<float>(first, first + static_cast<std::ptrdiff_t>(p.shape.elements())));
  }
}

}  // namespace wafersim::platforms::training
