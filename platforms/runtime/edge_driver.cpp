#include "platforms/runtime/edge_driver.h"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::platforms::runtime {

EdgeDriver::EdgeDriver(fabric::Mesh& mesh, sim::Engine& engine) : mesh_(mesh), engine_(engine) {
  engine_.add(this);
  mesh_.set_edge_listener(this);
}

EdgeDriver::Port& EdgeDriver::port(fabric::EdgeSide side, std::uint32_t channel) {
  for (auto& p : ports_)
    if (p.side == side && p.channel == channel) return p;
  ports_.push_back(Port{side, channel, &mesh_.edge_channel(side, channel), {}, {}});
  return ports_.back();
}

void EdgeDriver::begin(std::vector<InStream> in, std::vector<OutStream> out) {
  for (const auto& s : in)
    if (s.payloads.size() != s.size()) throw std::logic_error("EdgeDriver: an in-stream without its payloads");
  in_ = std::move(in);
  out_ = std::move(out);
  next_.assign(in_.size(), 0);
  for (auto& p : ports_) {
    p.in.clear();
    p.out.clear();
    p.rr_in = p.rr_out = 0;
  }
  for (std::size_t i = 0; i < in_.size(); ++i) port(in_[i].side, in_[i].channel).in.push_back(i);
  for (std::size_t i = 0; i < out_.size(); ++i) port(out_[i].side, out_[i].channel).out.push_back(i);
  active_ = true;
  engine_.wake(this, engine_.now());
}

bool EdgeDriver::done() const {
  for (std::size_t i = 0; i < in_.size(); ++i)
    if (next_[i] < in_[i].payloads.size()) return false;
  for (const auto& o : out_)
    if (o.received.size() < o.expected) return false;
  return true;
}

void EdgeDriver::evaluate(sim::Cycle now) {
  progressed_ = false;
  if (!active_) return;
  for (auto& p : ports_) {
    // Send: the first stream (round robin) with data and a credit.
    bool waiting = false;
    for (std::size_t k = 0; k < p.in.size(); ++k) {
      const std::size_t i = p.in[(p.rr_in + k) % p.in.size()];
      if (next_[i] >= in_[i].payloads.size()) continue;
      if (!p.ramp->can_send(in_[i].color)) {
        waiting = true;
        continue;
      }
      p.ramp->send(hw::Wavelet{in_[i].payloads[next_[i]++], in_[i].color, false}, now);
      p.rr_in = (p.rr_in + k + 1) % p.in.size();
      ++sent_;
      last_ = now.count() + 1;
      progressed_ = true;
      waiting = false;
      break;
    }
    if (waiting) ++blocked_;
    // Receive: one wavelet from the first color (round robin) that has one.
    for (std::size_t k = 0; k < p.out.size(); ++k) {
      const std::size_t i = p.out[(p.rr_out + k) % p.out.size()];
      if (!p.ramp->has(out_[i].color)) continue;
      if (out_[i].received.size() >= out_[i].expected)
        throw sim::SimulationError(fmt::format(
            "edge driver: {} edge channel {} received more than the {} wavelets expected on color {}",
            p.side == fabric::EdgeSide::West ? "west" : "east", p.channel, out_[i].expected, out_[i].color.id()));
      out_[i].received.push_back(p.ramp->front(out_[i].color).payload);
      p.ramp->pop(out_[i].color, now);
      p.rr_out = (p.rr_out + k + 1) % p.out.size();
      ++received_;
      last_ = now.count() + 1;
      progressed_ = true;
      break;
    }
  }
}

sim::Cycle EdgeDriver::write(sim::Cycle now) {
  if (!active_ || !progressed_) return sim::Cycle::never();
  return now + sim::Cycle(1);
}

void EdgeDriver::on_arrival(fabric::EdgeSide side, std::uint32_t channel, hw::Color c, sim::Cycle at) {
  bool expected = false;
  for (const auto& o : out_) expected = expected || (o.side == side && o.channel == channel && o.color == c);
  if (!expected)
    throw sim::SimulationError(
        fmt::format("edge driver: a wavelet arrives on the {} edge channel {}, color {}, "
                    "which no stream of this layer expects",
                    side == fabric::EdgeSide::West ? "west" : "east", channel, c.id()));
  engine_.wake(this, at);
}

void EdgeDriver::on_credit(fabric::EdgeSide /*side*/, std::uint32_t /*channel*/, hw::Color /*c*/, sim::Cycle at) {
  if (active_) engine_.wake(this, at);
}

std::string EdgeDriver::pending() const {
  std::string s;
  for (std::size_t i = 0; i < in_.size(); ++i)
    if (next_[i] < in_[i].payloads.size())
      s += fmt::format("\n  west channel {} color {}: {} of {} wavelets sent", in_[i].channel, in_[i].color.id(),
                       next_[i], in_[i].payloads.size());
  for (const auto& o : out_)
    if (o.received.size() < o.expected)
      s += fmt::format("\n  east channel {} color {}: {} of {} wavelets received", o.channel, o.color.id(),
                       o.received.size(), o.expected);
  return s;
}

std::string EdgeDriver::describe() const {
  return fmt::format("edge driver: {} sent, {} received{}", sent_, received_, done() ? "" : pending());
}

}  // namespace wafersim::platforms::runtime
