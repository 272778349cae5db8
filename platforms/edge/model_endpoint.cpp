#include "platforms/edge/model_endpoint.h"

#include <fmt/format.h>

#include "sim/errors.h"

namespace wafersim::platforms::edge {
using sim::Picos;
using sim::stream::Chunk;
using sim::stream::Pass;

namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

float ModelEndpoint::default_gradient(std::uint64_t seed, std::uint32_t endpoint, std::uint32_t layer,
                                      std::uint32_t step, std::uint64_t element) {
  std::uint64_t x = mix(seed);
  x = mix(x ^ endpoint);
  x = mix(x ^ (std::uint64_t{layer} << 32 | step));
  x = mix(x ^ element);
  const float u = static_cast<float>(x >> 40) * (1.0F / 16777216.0F);
  return u * 2.0F - 1.0F;
}

ModelEndpoint::ModelEndpoint(const sc_core::sc_module_name& name, const EdgeIoConfig& io, std::uint32_t index,
                             ModelEndpointConfig config, sim::stats::Group& stats)
    : EdgeEndpoint(name, io, index, stats), config_(std::move(config)) {
  if (config_.layers == 0) throw sim::InputError("model endpoint: a model needs at least one layer");
  gradients_.resize(planes());
  held_.assign(planes(), 0);
  auto& g = stats_group();
  g.counter("chunks_consumed", &consumed_, "chunks", "weight chunks consumed (computed with)");
  g.counter("busy", &busy_ps_, "ps", "time spent computing (layers and loss)");
}

const LayerRates& ModelEndpoint::rates(std::uint32_t layer) const {
  return layer < config_.per_layer.size() ? config_.per_layer[layer] : config_.rates;
}

Chunk ModelEndpoint::make_gradient(const Chunk& weights) const {
  Chunk g;
  g.info = weights.info;
  g.info.pass = Pass::Gradient;
  g.info.stream = 0;
  if (!config_.functional) return g;
  if (!weights.data)
    throw sim::SimulationError(fmt::format("{}: {} carries no values", name(), weights.info.describe()));
  auto out = std::make_shared<std::vector<float>>(weights.info.bytes / 4);
  if (config_.gradient) {
    config_.gradient(index(), g.info, *weights.data, *out);
  } else {
    const std::uint64_t first = g.info.offset / 4;
    for (std::size_t k = 0; k < out->size(); ++k)
      (*out)[k] = default_gradient(config_.seed, index(), g.info.layer, g.info.step, first + k);
  }
  g.data = std::move(out);
  return g;
}

Picos ModelEndpoint::step(Picos now) {
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::uint32_t p = 0; p < planes(); ++p)
      if (gradients_out(p).advance(now)) {
        --held_[p];
        progress = true;
      }
    if (busy_ && busy_end_ <= now) {
      busy_ = false;
      progress = true;
      if (in_loss_) {
        in_loss_ = false;
      } else {
        auto& in = weights_in(busy_plane_);
        const Chunk& c = in.front().chunk;
        if (config_.functional && config_.weights_seen && c.data) config_.weights_seen(index(), c.info, *c.data);
        if (c.info.pass == Pass::Backward) gradients_[busy_plane_].push_back(Waiting{make_gradient(c), now});
        const bool last = ++index_ == c.info.count;
        if (last) {
          ++stream_;
          index_ = 0;
          if (c.info.pass == Pass::Forward && c.info.layer + 1 == config_.layers) loss_pending_ = true;
        }
        in.pop();
        ++consumed_;
      }
    }
    if (!busy_ && loss_pending_) {
      loss_pending_ = false;
      in_loss_ = busy_ = true;
      busy_end_ = now + sim::to_picos(config_.loss_time);
      record_busy(now, busy_end_);
      busy_ps_ += (busy_end_ - now).count();
      progress = true;
    }
    if (!busy_) {
      const std::uint32_t p = index_ % planes();
      auto& in = weights_in(p);
      if (!in.empty()) {
        const auto& info = in.front().chunk.info;
        if (info.stream != stream_ || info.index != index_)
          throw sim::SimulationError(
              fmt::format("{}: expected chunk {} of stream {} on plane {}, found {} of stream {}", name(), index_,
                          stream_, p, info.describe(), info.stream));
        const bool backward = info.pass == Pass::Backward;
        if (!backward || held_[p] < io().buffer_chunks) {
          if (backward) ++held_[p];
          const LayerRates& r = rates(info.layer);
          busy_ = true;
          busy_plane_ = p;
          busy_end_ = now + sim::transfer_time(info.bytes, backward ? r.backward : r.forward);
          record_busy(now, busy_end_);
          busy_ps_ += (busy_end_ - now).count();
          progress = true;
        }
      }
    }
    for (std::uint32_t p = 0; p < planes(); ++p) {
      auto& q = gradients_[p];
      if (q.empty() || !gradients_out(p).can_send()) continue;
      send_gradient(std::move(q.front().chunk), now, q.front().ready);
      q.pop_front();
      progress = true;
    }
  }
  Picos next = busy_ ? busy_end_ : Picos::never();
  for (std::uint32_t p = 0; p < planes(); ++p) next = std::min(next, gradients_out(p).done_at());
  return next;
}

std::string ModelEndpoint::describe_state() const {
  return EdgeEndpoint::describe_state() +
         fmt::format(" waiting for chunk {} of stream {}{}", index_, stream_, busy_ ? " (busy)" : "");
}

}  // namespace wafersim::platforms::edge
