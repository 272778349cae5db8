#include "models/reference/training.h"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::models::reference {

Tensor swarmx_sum(const std::vector<Tensor>& per_replica, std::uint32_t arity) {
  if (per_replica.empty()) throw std::invalid_argument("reference swarmx_sum: no replicas");
  if (arity < 2) throw std::invalid_argument("reference swarmx_sum: arity must be at least 2");
  const Arith A(Format::FP32);
  std::vector<Tensor> level;
  for (const Tensor& t : per_replica) {
    if (t.format() != Format::FP32 || !(t.shape() == per_replica.front().shape()))
      throw std::invalid_argument("reference swarmx_sum: replicas must hold fp32 tensors of one shape");
    level.push_back(t);
  }
  do {
    std::vector<Tensor> up;
    for (std::size_t first = 0; first < level.size(); first += arity) {
      Tensor acc = level[first];
      for (std::size_t c = first + 1; c < std::min<std::size_t>(first + arity, level.size()); ++c)
        for (std::size_t i = 0; i < acc.size(); ++i) acc.set_bits(i, A.add(acc.bits(i), level[c].bits(i)));
      up.push_back(std::move(acc));
    }
    level = std::move(up);
  } while (level.size() > 1);
  return level.front();
}

float StepPlan::mean_scale() const { return 1.0F / static_cast<float>(replicas * microbatches); }

double StepGradients::loss() const {
  double total = 0;
  for (double l : losses) total += l;
  return losses.empty() ? 0.0 : total / static_cast<double>(losses.size());
}

StepGradients data_parallel_gradients(const Model& model, const TensorMap& parameters, const Inputs& batch,
                                      const StepPlan& plan) {
  if (model.master_format() != Format::FP32)
    throw std::invalid_argument("reference: data-parallel training needs fp32 master weights");
  const std::uint64_t B = batch.batch();
  const std::uint64_t pieces = std::uint64_t{plan.replicas} * plan.microbatches;
  if (plan.replicas == 0 || plan.microbatches == 0 || B == 0 || B % pieces != 0)
    throw sim::InputError(
        fmt::format("reference: a batch of {} samples does not split over {} replicas x {} "
                    "microbatches",
                    B, plan.replicas, plan.microbatches));
  const std::uint64_t per = B / pieces;
  const Arith A(Format::FP32);
  StepGradients out;
  std::map<std::string, std::vector<Tensor>> per_replica;
  for (std::uint32_t e = 0; e < plan.replicas; ++e) {
    TensorMap acc;
    for (std::uint32_t m = 0; m < plan.microbatches; ++m) {
      const Inputs slice = batch.batch_slice((std::uint64_t{e} * plan.microbatches + m) * per, per);
      const Forward f = model.forward(parameters, slice);
      Gradients g = model.backward(parameters, slice, f);
      out.losses.push_back(f.loss_value());
      for (auto& [name, t] : g.parameters) {
        auto it = acc.find(name);
        if (it == acc.end()) {
          acc.emplace(name, std::move(t));
          continue;
        }
        for (std::size_t i = 0; i < t.size(); ++i) it->second.set_bits(i, A.add(it->second.bits(i), t.bits(i)));
      }
    }
    for (auto& [name, t] : acc) per_replica[name].push_back(std::move(t));
  }
  for (const auto& [name, list] : per_replica) out.sum.emplace(name, swarmx_sum(list, plan.arity));
  return out;
}

Trainer::Trainer(Model model, const TensorMap& initial, const memoryx::OptimizerConfig& config)
    : model_(std::move(model)), config_(config) {
  if (model_.master_format() != Format::FP32)
    throw std::invalid_argument("reference Trainer: the model must compute in fp16, bf16 or fp32");
  config_.validate();
  for (const ParameterInfo& p : model_.parameters()) {
    auto it = initial.find(p.name);
    if (it == initial.end()) throw sim::InputError(fmt::format("reference: parameter '{}' is missing", p.name));
    if (!(it->second.shape() == p.shape))
      throw sim::InputError(fmt::format("reference: parameter '{}' has shape {}, expected {}", p.name,
                                        to_string(it->second.shape()), to_string(p.shape)));
    state_.emplace(p.name,
                   memoryx::ReferenceState::with_weights(it->second.converted(Format::FP32).to_floats(), config_.kind));
  }
}

void Trainer::mask_state(memoryx::ReferenceState& st, const std::vector<std::uint8_t>& mask) {
  for (std::size_t i = 0; i < st.weights.size(); ++i) {
    if (mask[i]) continue;
    st.weights[i] = 0.0F;
    if (!st.m.empty()) st.m[i] = 0.0F;
    if (!st.v.empty()) st.v[i] = 0.0F;
  }
}

void Trainer::set_masks(std::map<std::string, std::vector<std::uint8_t>> masks) {
  for (auto& [name, mask] : masks) {
    auto it = state_.find(name);
    if (it == state_.end()) throw sim::InputError(fmt::format("reference: no parameter '{}' to mask", name));
    if (mask.size() != it->second.weights.size())
      throw sim::InputError(fmt::format("reference: the mask of '{}' has {} elements, the parameter {}", name,
                                        mask.size(), it->second.weights.size()));
    mask_state(it->second, mask);
  }
  masks_ = std::move(masks);
}

TensorMap Trainer::parameters() const {
  TensorMap out;
  for (const ParameterInfo& p : model_.parameters())
    out.emplace(p.name, Tensor::of_floats(p.shape, state_.at(p.name).weights));
  return out;
}

StepGradients Trainer::step(const Inputs& batch, const StepPlan& plan) {
  StepGradients g = data_parallel_gradients(model_, parameters(), batch, plan);
  for (const ParameterInfo& p : model_.parameters()) {
    std::vector<float> sum = g.sum.at(p.name).to_floats();
    auto m = masks_.find(p.name);
    if (m != masks_.end())
      for (std::size_t i = 0; i < sum.size(); ++i)
        if (!m->second[i]) sum[i] = 0.0F;
    auto& st = state_.at(p.name);
    memoryx::reference_step(config_, st, sum);
    if (m != masks_.end()) mask_state(st, m->second);
  }
  ++steps_;
  return g;
}

}  // namespace wafersim::models::reference
