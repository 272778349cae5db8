#include "platforms/edge/edge_bridge.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace wafersim::platforms::edge {
using sim::Picos;

EdgeBridge::EdgeBridge(const sc_core::sc_module_name& name, const EdgeIoConfig& io, std::uint32_t index, Picos latency,
                       std::function<void()> on_outgoing, sim::stats::Group& stats, const std::string& stats_name)
    : EdgeEndpoint(name, io, index, stats, stats_name), latency_(latency), on_outgoing_(std::move(on_outgoing)) {
  forwarded_.assign(planes(), 0);
  seen_credits_.assign(planes(), 0);
}

void EdgeBridge::deliver(EdgeMessages from_wafer) {
  if (from_wafer.empty()) return;
  for (auto& m : from_wafer) inbox_.push_back(std::move(m));
  std::stable_sort(inbox_.begin(), inbox_.end(),
                   [](const EdgeMessage& a, const EdgeMessage& b) { return a.at < b.at; });
  wake_at(inbox_.front().at);
}

EdgeMessages EdgeBridge::take_outgoing() {
  EdgeMessages out;
  out.swap(outbox_);
  return out;
}

Picos EdgeBridge::step(Picos now) {
  bool made = false;
  for (std::uint32_t p = 0; p < planes(); ++p) {
    auto& out = gradients_out(p);
    out.advance(now);
    // The wafer starts with every credit; what came back since the last step goes to it.
    if (!started_) seen_credits_[p] = out.credits();
    for (std::uint32_t k = seen_credits_[p]; k < out.credits(); ++k) {
      EdgeMessage m;
      m.at = now + latency_;
      m.kind = EdgeMessage::Kind::Credit;
      m.plane = p;
      outbox_.push_back(std::move(m));
      made = true;
    }
  }
  started_ = true;
  std::size_t done = 0;
  for (; done < inbox_.size() && inbox_[done].at <= now; ++done) {
    EdgeMessage& m = inbox_[done];
    if (m.kind == EdgeMessage::Kind::Credit) {
      if (forwarded_.at(m.plane) == 0) throw std::logic_error(fmt::format("{}: a credit for no weight chunk", name()));
      weights_in(m.plane).pop();
      --forwarded_[m.plane];
    } else {
      auto& port = gradients_out(m.plane);
      if (!port.can_send())
        throw std::logic_error(fmt::format("{}: the wafer sent a gradient chunk without a free link", name()));
      send_gradient(std::move(m.chunk), now, now);
    }
  }
  inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<std::ptrdiff_t>(done));
  for (std::uint32_t p = 0; p < planes(); ++p) {
    auto& in = weights_in(p);
    for (; forwarded_[p] < in.size(); ++forwarded_[p]) {
      const auto& e = in.at(forwarded_[p]);
      EdgeMessage m;
      m.at = e.arrival + latency_;
      m.kind = EdgeMessage::Kind::Chunk;
      m.plane = p;
      m.chunk = e.chunk;
      outbox_.push_back(std::move(m));
      made = true;
    }
    seen_credits_[p] = gradients_out(p).credits();
  }
  if (made && on_outgoing_) on_outgoing_();
  Picos next = inbox_.empty() ? Picos::never() : inbox_.front().at;
  for (std::uint32_t p = 0; p < planes(); ++p) next = std::min(next, gradients_out(p).done_at());
  return next;
}

std::string EdgeBridge::describe_state() const {
  return EdgeEndpoint::describe_state() + fmt::format(" {} messages from the wafer pending", inbox_.size());
}

}  // namespace wafersim::platforms::edge
