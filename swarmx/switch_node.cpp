#include "swarmx/switch_node.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::swarmx {
using sim::Picos;
using sim::stream::Chunk;
using sim::stream::ChunkInPort;
using sim::stream::ChunkOutPort;

SwitchNode::SwitchNode(const sc_core::sc_module_name& name, const SwitchPorts& ports, bool functional,
                       sim::stats::Group& stats)
    : sc_core::sc_module(name), ports_(ports), functional_(functional) {
  if (ports_.down_bandwidth.empty()) throw std::logic_error("SwitchNode: no children");
  auto wake = [this] { wake_.notify(sc_core::SC_ZERO_TIME); };
  auto on_arrival = [this](const ChunkInPort::Entry&) { wake_.notify(sc_core::SC_ZERO_TIME); };
  down_in_ = std::make_unique<ChunkInPort>("down_in", ports_.buffer_chunks, on_arrival);
  up_out_ = std::make_unique<ChunkOutPort>("up_out", ports_.up_bandwidth, wake);
  for (std::uint32_t i = 0; i < ports_.down_bandwidth.size(); ++i) {
    down_out_.push_back(std::make_unique<ChunkOutPort>(fmt::format("down_out{}", i), ports_.down_bandwidth[i], wake));
    up_in_.push_back(std::make_unique<ChunkInPort>(fmt::format("up_in{}", i), ports_.buffer_chunks, on_arrival));
  }
  sent_.assign(down_out_.size(), 0);

  SC_HAS_PROCESS(SwitchNode);
  SC_METHOD(run);
  sensitive << wake_;
  dont_initialize();

  auto& g = stats.group(basename());
  g.counter("broadcasts", &broadcasts_, "chunks", "weight chunks received and sent to every child");
  g.counter("reductions", &reductions_, "chunks", "gradient chunks summed from the children and sent up");
  down_in_->add_stats(g.group("down_in"));
  up_out_->add_stats(g.group("up_out"));
  for (std::uint32_t i = 0; i < down_out_.size(); ++i) {
    down_out_[i]->add_stats(g.group(down_out_[i]->name()));
    up_in_[i]->add_stats(g.group(up_in_[i]->name()));
  }
}

void SwitchNode::run() {
  const Picos now = sim::now();
  bool progress = true;
  while (progress) {
    progress = false;
    progress = broadcast(now) || progress;
    progress = reduce(now) || progress;
  }
  const Picos next = next_event(now);
  if (next.is_never()) return;
  if (next <= now) throw std::logic_error("SwitchNode: next event not in the future");
  wake_.notify(sim::to_sc_time(next - now));
}

// Each child link sends the FIFO's chunks in order, on its own; a slot is freed when every
// child has finished sending its chunk.
bool SwitchNode::broadcast(Picos now) {
  bool progress = false;
  for (std::uint32_t i = 0; i < down_out_.size(); ++i)
    if (down_out_[i]->advance(now)) {
      ++sent_[i];
      progress = true;
    }
  while (!down_in_->empty() && *std::min_element(sent_.begin(), sent_.end()) > 0) {
    down_in_->pop();
    for (auto& s : sent_) --s;
    ++broadcasts_;
    progress = true;
  }
  for (std::uint32_t i = 0; i < down_out_.size(); ++i) {
    ChunkOutPort& out = *down_out_[i];
    if (!out.can_send() || sent_[i] >= down_in_->size()) continue;
    const ChunkInPort::Entry& e = down_in_->at(sent_[i]);
    const Picos ready = e.arrival + ports_.latency;
    if (ready > now) continue;
    out.send(e.chunk, now, ready);
    progress = true;
  }
  return progress;
}

// The children's front chunks (the same chunk of the same layer) are summed in child order
// while the result streams up; their slots are freed when the sum has been sent.
bool SwitchNode::reduce(Picos now) {
  bool progress = false;
  if (up_out_->advance(now)) {
    for (auto& in : up_in_) in->pop();
    reducing_ = false;
    ++reductions_;
    progress = true;
  }
  if (reducing_ || !up_out_->can_send()) return progress;
  Picos ready{0};
  for (const auto& in : up_in_) {
    if (in->empty()) return progress;
    ready = std::max(ready, in->front().arrival + ports_.latency);
  }
  if (ready > now) return progress;
  const Chunk& first = up_in_[0]->front().chunk;
  for (std::uint32_t i = 1; i < up_in_.size(); ++i)
    if (!up_in_[i]->front().chunk.info.same_chunk(first.info))
      throw sim::SimulationError(fmt::format("{}: cannot reduce {} (child 0) with {} (child {})", name(),
                                             first.info.describe(), up_in_[i]->front().chunk.info.describe(), i));
  Chunk sum{first.info, nullptr};
  if (functional_) {
    for (std::uint32_t i = 0; i < up_in_.size(); ++i)
      if (!up_in_[i]->front().chunk.data)
        throw sim::SimulationError(
            fmt::format("{}: {} from child {} carries no values", name(), first.info.describe(), i));
    auto acc = std::make_shared<std::vector<float>>(*first.data);
    // A sparse chunk alternates values and index words: values are summed, indices must agree.
    const std::size_t stride = first.info.sparse ? 2 : 1;
    for (std::uint32_t i = 1; i < up_in_.size(); ++i) {
      const auto& v = *up_in_[i]->front().chunk.data;
      if (v.size() != acc->size())
        throw sim::SimulationError(fmt::format("{}: {} from child {} has {} values, expected {}", name(),
                                               first.info.describe(), i, v.size(), acc->size()));
      for (std::size_t k = 0; k < acc->size(); k += stride) (*acc)[k] = (*acc)[k] + v[k];
      for (std::size_t k = 1; stride == 2 && k < acc->size(); k += 2)
        if (std::memcmp(&(*acc)[k], &v[k], sizeof(float)) != 0)
          throw sim::SimulationError(fmt::format("{}: {} from child {} has other sparse indices than child 0", name(),
                                                 first.info.describe(), i));
    }
    sum.data = std::move(acc);
  }
  up_out_->send(std::move(sum), now, ready);
  reducing_ = true;
  return true;
}

Picos SwitchNode::next_event(Picos now) const {
  Picos next = Picos::never();
  auto consider = [&](Picos t) {
    if (t > now && t < next) next = t;
  };
  for (std::uint32_t i = 0; i < down_out_.size(); ++i) {
    consider(down_out_[i]->done_at());
    if (sent_[i] < down_in_->size()) consider(down_in_->at(sent_[i]).arrival + ports_.latency);
  }
  consider(up_out_->done_at());
  if (!reducing_) {
    Picos ready{0};
    bool all = true;
    for (const auto& in : up_in_) {
      if (in->empty()) {
        all = false;
        break;
      }
      ready = std::max(ready, in->front().arrival + ports_.latency);
    }
    if (all) consider(ready);
  }
  return next;
}

std::string SwitchNode::describe_state() const {
  std::string out = fmt::format("{}: down {} buffered", name(), down_in_->size());
  for (std::uint32_t i = 0; i < up_in_.size(); ++i) out += fmt::format(", up_in{} {} buffered", i, up_in_[i]->size());
  return out + (reducing_ ? ", reducing" : "");
}

}  // namespace wafersim::swarmx
