#include "platforms/edge/wafer_edge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/errors.h"

namespace wafersim::platforms::edge {
using sim::Cycle;
using sim::Picos;
using sim::stream::Chunk;

namespace {

const char* side_name(fabric::EdgeSide s) { return s == fabric::EdgeSide::West ? "west" : "east"; }

}  // namespace

void WaferEdge::Bucket::refill(std::uint64_t now) {
  if (unlimited() || now <= at) return;
  const std::uint64_t steps = now - at;
  at = now;
  if (steps > cap / gain + 1) {
    tokens = cap;
    return;
  }
  tokens = std::min(cap, tokens + steps * gain);
}

WaferEdge::WaferEdge(const std::string& name, const WaferEdgeConfig& config, fabric::Mesh& mesh, sim::Engine& engine,
                     sim::stats::Group& stats)
    : name_(name), config_(config), mesh_(mesh), engine_(engine), period_ps_(1e12 / config.clock_hz) {
  const auto& io = config_.io;
  if (io.planes == 0 || io.buffer_chunks == 0 || config_.staging_chunks == 0 || config_.chunk_bytes == 0)
    throw std::logic_error("WaferEdge: no planes, buffers, staging or chunk size");
  if (config_.latency == Picos(0)) throw std::logic_error("WaferEdge: the edge links need a latency (the lookahead)");
  waiting_.resize(io.planes);
  gplanes_.resize(io.planes);
  for (auto& g : gplanes_) g.credits = io.buffer_chunks;
  // The I/O limit in bit-hertz: each cycle adds the ports' bits per second, a wavelet costs its
  // bits times the clock; up to one cycle's worth (plus a wavelet's remainder) carries over.
  const auto gain = static_cast<std::uint64_t>(std::llround(io.io_ports * io.io_port_bandwidth.bits_per_s));
  const auto cost =
      static_cast<std::uint64_t>(config_.wavelet_bits) * static_cast<std::uint64_t>(std::llround(config_.clock_hz));
  for (Bucket* b : {&bucket_in_, &bucket_out_}) {
    b->gain = gain;
    b->cost = cost;
    b->cap = gain + cost - 1;
    b->tokens = b->cap;
  }
  engine_.add(this);
  mesh_.set_edge_listener(this);
  auto& g = stats;
  g.counter("wavelets_in", &sent_, "wavelets", "wavelets into the mesh's edge channels (weights)");
  g.counter("wavelets_out", &received_, "wavelets", "wavelets out of the mesh's edge channels (gradients)");
  g.counter("io_limited_in", &n_.io_limited_in, "channel-cycles",
            "a weight wavelet ready for a channel with a fabric credit, held back by the system's I/O limit");
  g.counter("io_limited_out", &n_.io_limited_out, "channel-cycles",
            "a gradient wavelet waiting in a channel, held back by the system's I/O limit");
  g.counter("starved", &n_.starved, "cycles", "cycles an in-stream waited for its weights to arrive from the cluster");
  g.counter("fabric_blocked", &n_.fabric_blocked, "channel-cycles",
            "a weight wavelet ready for a channel without a fabric credit (the mesh did not take it)");
  g.counter("held_gradients", &n_.held_gradients, "cycles",
            "cycles no gradient wavelet left the mesh because the edge's gradient buffer was full");
  g.counter("chunks_in", &n_.chunks_in, "chunks", "weight chunks received from the cluster");
  g.counter("chunks_out", &n_.chunks_out, "chunks", "gradient chunks sent to the cluster");
  g.counter("peak_staged", &n_.peak_staged, "chunks", "most weight chunks staged at once");
  g.counter("gradient_busy", &n_.gradient_busy_ps, "ps", "time the gradient links serialised chunks");
  g.counter("gradient_blocked", &n_.gradient_blocked_ps, "ps",
            "time a gradient chunk waited on a free link for a credit (back-pressure from SwarmX)");
}

Picos WaferEdge::ps_of(Cycle c) const {
  return Picos(static_cast<std::uint64_t>(std::round(static_cast<double>(c.count()) * period_ps_)));
}

Cycle WaferEdge::cycle_at_or_after(Picos t) const {
  auto c = static_cast<std::uint64_t>(std::ceil(static_cast<double>(t.count()) / period_ps_ - 1e-9));
  while (c > 0 && ps_of(Cycle(c - 1)) >= t) --c;
  while (ps_of(Cycle(c)) < t) ++c;
  return Cycle(c);
}

WaferEdge::Port& WaferEdge::port(fabric::EdgeSide side, std::uint32_t channel) {
  for (auto& p : ports_)
    if (p.side == side && p.channel == channel) return p;
  ports_.push_back(Port{side, channel, &mesh_.edge_channel(side, channel), {}, {}});
  return ports_.back();
}

void WaferEdge::begin(std::vector<InStream> in, std::vector<OutStream> out) {
  for (const auto& s : in)
    for (const auto& r : s.refs)
      if (r.tensor >= sources_.size() || sources_[r.tensor].layer < 0)
        throw std::logic_error(
            fmt::format("{}: an in-stream refers to host tensor {}, which is not streamed", name_, r.tensor));
  in_ = std::move(in);
  out_ = std::move(out);
  next_.assign(in_.size(), 0);
  first_sent_ = sim::Cycle::never();
  for (auto& p : ports_) {
    p.in.clear();
    p.out.clear();
    p.rr_in = p.rr_out = 0;
  }
  for (std::size_t i = 0; i < in_.size(); ++i) port(in_[i].side, in_[i].channel).in.push_back(i);
  for (std::size_t i = 0; i < out_.size(); ++i) port(out_[i].side, out_[i].channel).out.push_back(i);
  in_ports_.clear();
  out_ports_.clear();
  for (std::size_t k = 0; k < ports_.size(); ++k) {
    if (!ports_[k].in.empty()) in_ports_.push_back(k);
    if (!ports_[k].out.empty()) out_ports_.push_back(k);
  }
  rr_in_ports_ = rr_out_ports_ = 0;
  engine_.wake(this, engine_.now());
}

bool WaferEdge::done() const {
  for (std::size_t i = 0; i < in_.size(); ++i)
    if (next_[i] < in_[i].size()) return false;
  for (const auto& o : out_)
    if (o.received.size() < o.expected) return false;
  return true;
}

void WaferEdge::release(std::uint32_t stream) {
  if (stream < floor_) return;
  released_.insert(stream);
  while (released_.count(floor_)) released_.erase(floor_++);
  staged_.erase(std::remove(staged_.begin(), staged_.end(), stream), staged_.end());
  engine_.wake(this, engine_.now());
}

void WaferEdge::send_gradient(Chunk chunk) {
  const std::uint32_t p = chunk.info.index % config_.io.planes;
  gplanes_[p].queue.emplace_back(std::move(chunk), ps_of(engine_.now()));
  engine_.wake(this, engine_.now());
}

bool WaferEdge::gradients_sent() const {
  for (const auto& g : gplanes_)
    if (!g.queue.empty()) return false;
  return true;
}

std::size_t WaferEdge::gradients_waiting() const {
  std::size_t n = 0;
  for (const auto& g : gplanes_) n += g.queue.size();
  return n;
}

void WaferEdge::deliver(EdgeMessages messages) {
  if (messages.empty()) return;
  inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<std::ptrdiff_t>(inbox_next_));
  inbox_next_ = 0;
  for (auto& m : messages) inbox_.push_back(std::move(m));
  std::stable_sort(inbox_.begin(), inbox_.end(),
                   [](const EdgeMessage& a, const EdgeMessage& b) { return a.at < b.at; });
  engine_.wake(this, cycle_at_or_after(inbox_.front().at));
}

EdgeMessages WaferEdge::take_outgoing() {
  EdgeMessages out;
  out.swap(outbox_);
  return out;
}

void WaferEdge::take_messages(Cycle now) {
  while (inbox_next_ < inbox_.size() && cycle_at_or_after(inbox_[inbox_next_].at) <= now) {
    EdgeMessage& m = inbox_[inbox_next_++];
    if (m.kind == EdgeMessage::Kind::Chunk) {
      waiting_.at(m.plane).push_back(std::move(m.chunk));
      ++n_.chunks_in;
    } else {
      ++gplanes_.at(m.plane).credits;
    }
    progressed_ = true;
  }
}

void WaferEdge::stage(Cycle now) {
  for (std::uint32_t p = 0; p < waiting_.size(); ++p) {
    auto& w = waiting_[p];
    while (!w.empty()) {
      const std::uint32_t stream = w.front().info.stream;
      const bool gone = stream < floor_ || released_.count(stream) > 0;
      if (!gone && (stream >= floor_ + 2 || staged_.size() >= config_.staging_chunks)) break;
      const Chunk c = std::move(w.front());
      w.pop_front();
      const auto& info = c.info;
      if (arrived_.size() <= info.layer) arrived_.resize(info.layer + 1);
      auto& a = arrived_[info.layer];
      if (a.size() <= info.index) a.resize(info.index + 1, 0);
      a[info.index] = info.step + 1;
      if (!gone) staged_.push_back(stream);
      n_.peak_staged = std::max<std::uint64_t>(n_.peak_staged, staged_.size());
      if (on_staged_) on_staged_(c);
      EdgeMessage credit;
      credit.at = ps_of(now) + config_.latency;
      credit.kind = EdgeMessage::Kind::Credit;
      credit.plane = p;
      outbox_.push_back(std::move(credit));
      progressed_ = true;
    }
  }
}

void WaferEdge::send_gradients(Cycle now) {
  const Picos t = ps_of(now);
  for (std::uint32_t p = 0; p < gplanes_.size(); ++p) {
    auto& g = gplanes_[p];
    if (g.queue.empty() || g.credits == 0 || g.busy_until > t) continue;
    auto [chunk, queued] = std::move(g.queue.front());
    g.queue.pop_front();
    const Picos could = ps_of(cycle_at_or_after(std::max(queued, g.busy_until)));
    if (t > could) n_.gradient_blocked_ps += (t - could).count();
    const Picos s = sim::transfer_time(chunk.info.bytes, config_.io.plane_bandwidth());
    EdgeMessage m;
    m.at = t + config_.latency;
    m.kind = EdgeMessage::Kind::Chunk;
    m.plane = p;
    m.chunk = std::move(chunk);
    outbox_.push_back(std::move(m));
    g.busy_until = t + s;
    --g.credits;
    ++n_.chunks_out;
    n_.gradient_busy_ps += s.count();
    progressed_ = true;
  }
}

bool WaferEdge::ready(const InStream& s, std::size_t k) const {
  if (!s.payloads.empty()) return true;
  const WaveletRef& r = s.refs[k];
  const TensorSource& src = sources_[r.tensor];
  const std::uint64_t chunk = (src.offset + r.element) * 4 / config_.chunk_bytes;
  const auto layer = static_cast<std::size_t>(src.layer);
  return layer < arrived_.size() && chunk < arrived_[layer].size() && arrived_[layer][chunk] == step_ + 1;
}

std::uint32_t WaferEdge::payload(const InStream& s, std::size_t k) const {
  if (!s.payloads.empty()) return s.payloads[k];
  const WaveletRef& r = s.refs[k];
  const auto* image = sources_[r.tensor].image;
  return image ? image->at(r.element) : 0;
}

void WaferEdge::move_in(Cycle now) {
  bucket_in_.refill(now.count());
  bool sent = false, starved = false;
  // The limit's share rotates: the port served first moves on by one every cycle.
  const std::size_t n = in_ports_.size();
  for (std::size_t j = 0; j < n; ++j) {
    Port& p = ports_[in_ports_[(rr_in_ports_ + j) % n]];
    for (std::size_t k = 0; k < p.in.size(); ++k) {
      const std::size_t i = p.in[(p.rr_in + k) % p.in.size()];
      const InStream& s = in_[i];
      if (next_[i] >= s.size()) continue;
      if (!ready(s, next_[i])) {
        starved = true;
        continue;
      }
      if (!p.ramp->can_send(s.color)) {
        ++n_.fabric_blocked;
        continue;
      }
      if (!bucket_in_.unlimited() && bucket_in_.tokens < bucket_in_.cost) {
        ++n_.io_limited_in;
        limited_ = true;
        break;
      }
      if (!bucket_in_.unlimited()) bucket_in_.tokens -= bucket_in_.cost;
      p.ramp->send(hw::Wavelet{payload(s, next_[i]), s.color, false}, now);
      ++next_[i];
      if (first_sent_.is_never()) first_sent_ = now;
      p.rr_in = (p.rr_in + k + 1) % p.in.size();
      ++sent_;
      last_ = now.count() + 1;
      progressed_ = sent = true;
      break;
    }
  }
  if (starved && !sent) {
    if (!starving_) {
      starving_ = true;
      starve_since_ = now.count();
    }
  } else if (starving_) {
    starving_ = false;
    n_.starved += now.count() - starve_since_;
  }
}

WaferEdge::Counters WaferEdge::counters_at(Cycle at) const {
  Counters c = n_;
  if (starving_ && at.count() > starve_since_) c.starved += at.count() - starve_since_;
  if (holding_ && at.count() > hold_since_) c.held_gradients += at.count() - hold_since_;
  return c;
}

void WaferEdge::move_out(Cycle now) {
  if (gradients_waiting() >= config_.io.buffer_chunks) {
    if (!holding_) {
      holding_ = true;
      hold_since_ = now.count();
    }
    return;
  }
  if (holding_) {
    holding_ = false;
    n_.held_gradients += now.count() - hold_since_;
  }
  bucket_out_.refill(now.count());
  const std::size_t n = out_ports_.size();
  for (std::size_t j = 0; j < n; ++j) {
    Port& p = ports_[out_ports_[(rr_out_ports_ + j) % n]];
    for (std::size_t k = 0; k < p.out.size(); ++k) {
      const std::size_t i = p.out[(p.rr_out + k) % p.out.size()];
      OutStream& o = out_[i];
      if (!p.ramp->has(o.color)) continue;
      if (o.received.size() >= o.expected)
        throw sim::SimulationError(
            fmt::format("{}: {} edge channel {} received more than the {} wavelets expected on color {}", name_,
                        side_name(p.side), p.channel, o.expected, o.color.id()));
      if (!bucket_out_.unlimited() && bucket_out_.tokens < bucket_out_.cost) {
        ++n_.io_limited_out;
        limited_ = true;
        break;
      }
      if (!bucket_out_.unlimited()) bucket_out_.tokens -= bucket_out_.cost;
      o.received.push_back(p.ramp->front(o.color).payload);
      p.ramp->pop(o.color, now);
      p.rr_out = (p.rr_out + k + 1) % p.out.size();
      ++received_;
      last_ = now.count() + 1;
      progressed_ = true;
      break;
    }
  }
}

void WaferEdge::evaluate(Cycle now) {
  progressed_ = limited_ = false;
  take_messages(now);
  stage(now);
  send_gradients(now);
  move_in(now);
  move_out(now);
  if (!in_ports_.empty()) rr_in_ports_ = (rr_in_ports_ + 1) % in_ports_.size();
  if (!out_ports_.empty()) rr_out_ports_ = (rr_out_ports_ + 1) % out_ports_.size();
}

Cycle WaferEdge::write(Cycle now) {
  Cycle next = Cycle::never();
  if (progressed_ || limited_) next = now + Cycle(1);
  if (inbox_next_ < inbox_.size())
    next = std::min(next, std::max(now + Cycle(1), cycle_at_or_after(inbox_[inbox_next_].at)));
  for (const auto& g : gplanes_)
    if (!g.queue.empty() && g.credits > 0)
      next = std::min(next, std::max(now + Cycle(1), cycle_at_or_after(g.busy_until)));
  return next;
}

void WaferEdge::on_arrival(fabric::EdgeSide side, std::uint32_t channel, hw::Color c, Cycle at) {
  bool expected = false;
  for (const auto& o : out_) expected = expected || (o.side == side && o.channel == channel && o.color == c);
  if (!expected)
    throw sim::SimulationError(
        fmt::format("{}: a wavelet arrives on the {} edge channel {}, color {}, which no "
                    "stream of this layer expects",
                    name_, side_name(side), channel, c.id()));
  engine_.wake(this, at);
}

void WaferEdge::on_credit(fabric::EdgeSide /*side*/, std::uint32_t /*channel*/, hw::Color /*c*/, Cycle at) {
  engine_.wake(this, at);
}

std::string WaferEdge::pending() const {
  std::string s;
  for (std::size_t i = 0; i < in_.size(); ++i)
    if (next_[i] < in_[i].size())
      s += fmt::format("\n  {} channel {} color {}: {} of {} wavelets sent{}", side_name(in_[i].side), in_[i].channel,
                       in_[i].color.id(), next_[i], in_[i].size(),
                       ready(in_[i], next_[i]) ? "" : " (waiting for its weights)");
  for (const auto& o : out_)
    if (o.received.size() < o.expected)
      s += fmt::format("\n  {} channel {} color {}: {} of {} wavelets received", side_name(o.side), o.channel,
                       o.color.id(), o.received.size(), o.expected);
  return s;
}

std::string WaferEdge::describe() const {
  std::size_t waiting = 0;
  for (const auto& w : waiting_) waiting += w.size();
  return fmt::format("{}: {} wavelets in, {} out; {} weight chunks staged, {} waiting, {} gradient chunks queued{}",
                     name_, sent_, received_, staged_.size(), waiting, gradients_waiting(), done() ? "" : pending());
}

}  // namespace wafersim::platforms::edge
