#include "platforms/training/replica_gradients.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "sim/errors.h"

namespace wafersim::platforms::training {
namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t b = 0;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace

ReplicaGradients::ReplicaGradients(const models::reference::Model& model, ClusterModel layers,
                                   const models::reference::SyntheticTask& task, std::uint64_t batch,
                                   std::uint32_t replicas)
    : model_(model), layers_(std::move(layers)), task_(task), batch_(batch), replicas_(replicas) {
  if (replicas_ == 0 || batch_ == 0 || batch_ % replicas_ != 0)
    throw sim::InputError(
        fmt::format("a global batch of {} samples does not split evenly over {} wafers", batch_, replicas_));
  weights_.resize(replicas_);
  for (auto& w : weights_)
    for (const auto& l : layers_.layers) w.emplace_back(l.params);
  for (const auto& l : layers_.layers) {
    std::vector<std::uint32_t> kept;
    if (l.kept) {
      if (!l.mask) throw sim::InputError(fmt::format("sparse layer '{}' has no mask in a functional run", l.name));
      for (std::uint64_t i = 0; i < l.params; ++i)
        if ((*l.mask)[i]) kept.push_back(static_cast<std::uint32_t>(i));
    }
    kept_.push_back(std::move(kept));
  }
}

void ReplicaGradients::attach(const std::shared_ptr<ReplicaGradients>& self, platforms::edge::ModelEndpointConfig& ec) {
  ec.functional = true;
  ec.weights_seen = [self](std::uint32_t e, const sim::stream::ChunkInfo& info, const std::vector<float>& w) {
    self->weights_seen(e, info, w);
  };
  ec.gradient = [self](std::uint32_t e, const sim::stream::ChunkInfo& info, const std::vector<float>&,
                       std::vector<float>& out) { self->gradient(e, info, out); };
}

void ReplicaGradients::weights_seen(std::uint32_t e, const sim::stream::ChunkInfo& info, const std::vector<float>& w) {
  auto& dst = weights_.at(e).at(info.layer);
  if (info.sparse) {
    // (value, index) entries; pruned weights are never sent and stay zero.
    for (std::size_t k = 0; k + 1 < w.size(); k += 2) {
      std::uint32_t index = 0;
      std::memcpy(&index, &w[k + 1], sizeof index);
      if (index >= dst.size())
        throw sim::SimulationError(
            fmt::format("wafer {}: {} has index {} outside layer {}", e, info.describe(), index, info.layer));
      dst[index] = w[k];
    }
    return;
  }
  const std::uint64_t first = info.offset / 4;
  if (first + w.size() > dst.size())
    throw sim::SimulationError(fmt::format("wafer {}: {} lies outside layer {}", e, info.describe(), info.layer));
  std::copy(w.begin(), w.end(), dst.begin() + static_cast<std::ptrdiff_t>(first));
}

void ReplicaGradients::compute(std::uint32_t e, std::uint32_t step) {
  if (trajectory_) {
    if (step >= trajectory_->gradients.size())
      throw sim::SimulationError(
          fmt::format("wafer {} asks for the gradients of step {}; the programs' trajectory has {}", e, step,
                      trajectory_->gradients.size()));
    for (std::uint32_t l = 0; l < layers_.layers.size(); ++l) {
      const auto& got = weights_[e][l];
      const auto& want = trajectory_->weights[step][l];
      for (std::size_t i = 0; i < want.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
          throw sim::SimulationError(fmt::format(
              "wafer {}, step {}: layer '{}' element {} received {} ({:#x}), the programs' gradients were computed "
              "from {} ({:#x})",
              e, step, layers_.layers[l].name, i, got[i], bits_of(got[i]), want[i], bits_of(want[i])));
    }
    Computed c;
    c.gradients = trajectory_->gradients[step].at(e);
    for (const auto& l : layers_.layers) c.total += l.params;
    computed_[{e, step}] = std::move(c);
    auto& ls = losses_[step];
    ls.resize(replicas_);
    ls[e] = trajectory_->losses[step].at(e);
    return;
  }
  models::reference::TensorMap params;
  for (std::uint32_t l = 0; l < layers_.layers.size(); ++l) layers_.unflatten(l, weights_[e][l], params);
  const std::uint64_t per = batch_ / replicas_;
  const models::reference::Inputs slice =
      task_.batch(first_step_ + step, batch_).batch_slice(std::uint64_t{e} * per, per);
  const models::reference::Forward f = model_.forward(params, slice);
  models::reference::Gradients g = model_.backward(params, slice, f);
  Computed c;
  for (std::uint32_t l = 0; l < layers_.layers.size(); ++l) {
    c.gradients.push_back(layers_.flatten(l, g.parameters));
    c.total += layers_.layers[l].kept ? layers_.layers[l].kept : layers_.layers[l].params;
  }
  computed_[{e, step}] = std::move(c);
  auto& ls = losses_[step];
  ls.resize(replicas_);
  ls[e] = f.loss_value();
}

void ReplicaGradients::gradient(std::uint32_t e, const sim::stream::ChunkInfo& info, std::vector<float>& out) {
  const std::pair<std::uint32_t, std::uint32_t> key{e, info.step};
  if (!computed_.count(key)) compute(e, info.step);
  Computed& c = computed_[key];
  const auto& g = c.gradients.at(info.layer);
  if (info.sparse) {
    // The gradient of each kept weight, in the entries of the weight chunk it answers (a
    // masked weight gradient: pruned positions are not computed or sent).
    const auto& kept = kept_.at(info.layer);
    const std::uint64_t first = info.offset / sim::stream::kSparseEntryBytes;
    if (first + out.size() / 2 > kept.size())
      throw sim::SimulationError(fmt::format("wafer {}: {} lies outside layer {}", e, info.describe(), info.layer));
    for (std::size_t k = 0; k + 1 < out.size(); k += 2) {
      const std::uint32_t index = kept[first + k / 2];
      out[k] = g[index];
      std::memcpy(&out[k + 1], &index, sizeof index);
    }
    c.served += out.size() / 2;
    if (c.served == c.total) c.gradients.clear();
    return;
  }
  const std::uint64_t first = info.offset / 4;
  if (first + out.size() > g.size())
    throw sim::SimulationError(fmt::format("wafer {}: {} lies outside layer {}", e, info.describe(), info.layer));
  std::copy_n(g.begin() + static_cast<std::ptrdiff_t>(first), out.size(), out.begin());
  c.served += out.size();
  if (c.served == c.total) c.gradients.clear();  // every chunk handed out; keep the entry as "done"
}

std::vector<double> ReplicaGradients::step_losses() const {
  std::vector<double> out;
  for (const auto& [step, ls] : losses_) {
    double sum = 0;
    for (double l : ls) sum += l;
    out.push_back(sum / static_cast<double>(ls.size()));
  }
  return out;
}

}  // namespace wafersim::platforms::training
