#include "platforms/edge/edge_endpoint.h"

#include <fmt/format.h>

#include <stdexcept>

namespace wafersim::platforms::edge {
using sim::Picos;

EdgeEndpoint::EdgeEndpoint(const sc_core::sc_module_name& name, const EdgeIoConfig& config, std::uint32_t index,
                           sim::stats::Group& stats, const std::string& stats_name)
    : sc_core::sc_module(name), io_(config), index_(index) {
  if (io_.planes == 0 || io_.buffer_chunks == 0) throw std::logic_error("EdgeEndpoint: no planes or no buffers");
  const units::Bandwidth link = io_.plane_bandwidth();
  for (std::uint32_t p = 0; p < io_.planes; ++p) {
    weights_in_.push_back(std::make_unique<sim::stream::ChunkInPort>(fmt::format("weights_in{}", p), io_.buffer_chunks,
                                                                     [this](const sim::stream::ChunkInPort::Entry& e) {
                                                                       const auto s = e.chunk.info.stream;
                                                                       if (arrived_.size() <= s)
                                                                         arrived_.resize(s + 1, 0);
                                                                       if (++arrived_[s] == e.chunk.info.count)
                                                                         records_.stream_arrived[s] = e.arrival;
                                                                       wake_.notify(sc_core::SC_ZERO_TIME);
                                                                     }));
    gradients_out_.push_back(std::make_unique<sim::stream::ChunkOutPort>(
        fmt::format("gradients_out{}", p), link, [this] { wake_.notify(sc_core::SC_ZERO_TIME); }));
  }
  SC_HAS_PROCESS(EdgeEndpoint);
  SC_METHOD(run);
  sensitive << wake_;
  dont_initialize();

  stats_ = &stats.group(stats_name.empty() ? std::string(basename()) : stats_name);
  for (std::uint32_t p = 0; p < io_.planes; ++p) {
    weights_in_[p]->add_stats(stats_->group(weights_in_[p]->name()));
    gradients_out_[p]->add_stats(stats_->group(gradients_out_[p]->name()));
  }
}

void EdgeEndpoint::run() {
  const Picos now = sim::now();
  const Picos next = step(now);
  if (next.is_never()) return;
  if (next <= now) throw std::logic_error("EdgeEndpoint: next event not in the future");
  wake_.notify(sim::to_sc_time(next - now));
}

void EdgeEndpoint::send_gradient(sim::stream::Chunk chunk, Picos now, Picos ready) {
  const auto key = std::make_pair(chunk.info.step, chunk.info.layer);
  records_.gradient_started.emplace(key, now);
  const std::uint32_t plane = chunk.info.index % io_.planes;
  gradients_out_.at(plane)->send(std::move(chunk), now, ready);
}

void EdgeEndpoint::wake_at(Picos t) {
  const Picos now = sim::now();
  wake_.notify(t <= now ? sc_core::SC_ZERO_TIME : sim::to_sc_time(t - now));
}

void EdgeEndpoint::record_busy(Picos start, Picos end) {
  if (end <= start) return;
  auto& b = records_.busy;
  if (!b.empty() && b.back().end == start) {
    b.back().end = end;
    return;
  }
  b.push_back(Interval{start, end});
}

std::string EdgeEndpoint::describe_state() const {
  std::string out = fmt::format("{}:", name());
  for (std::uint32_t p = 0; p < io_.planes; ++p)
    out += fmt::format(" plane {} {} weights buffered, {} gradient credits;", p, weights_in_[p]->size(),
                       gradients_out_[p]->credits());
  return out;
}

}  // namespace wafersim::platforms::edge
