#include "fabric/traffic/generator.h"

#include <systemc>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/engine/engine.h"
#include "sim/errors.h"

namespace wafersim::fabric::traffic {
namespace {

// Colors of `mask` in round-robin order starting at `from` (rotated so bit 0 is `from`).
inline std::uint64_t rotate(std::uint64_t mask, std::uint32_t from) {
  from &= 63u;
  return from ? (mask >> from) | (mask << (64 - from)) : mask;
}

std::uint32_t count_sources(const Mesh& mesh, std::uint32_t colors, std::vector<std::uint64_t>& masks) {
  const std::uint32_t n = mesh.geometry().routers();
  masks.assign(n, 0);
  std::uint32_t count = 0;
  for (std::uint32_t r = 0; r < n; ++r) {
    if (mesh.routing() == Routing::XY) {
      masks[r] = colors >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << colors) - 1;
    } else if (const RouteTable* t = mesh.routes()) {
      for (std::uint32_t c = 0; c < mesh.colors(); ++c)
        if (t->at(r, c).accept & bit(Port::Ramp)) masks[r] |= std::uint64_t{1} << c;
    }
    count += masks[r] != 0;
  }
  return count;
}

}  // namespace

TrafficGenerator::TrafficGenerator(Mesh& mesh, TrafficOptions options, sim::Engine* engine)
    : mesh_(mesh),
      options_(std::move(options)),
      engine_(engine),
      pattern_(Pattern::make(options_.pattern, mesh.geometry().width(), mesh.geometry().height(), options_.hotspot,
                             options_.hotspot_fraction)),
      process_(options_.rate / options_.packet_size),
      measurement_(options_.warmup, options_.warmup + options_.measure, 1, mesh.geometry().routers()),
      xy_(mesh.routing() == Routing::XY),
      routers_(mesh.geometry().routers()),
      window_end_(options_.warmup + options_.measure),
      drain_end_(options_.warmup + options_.measure + options_.drain) {
  options_.validate(mesh.config(), mesh.geometry(), !xy_);
  std::vector<std::uint64_t> masks;
  sources_count_ = count_sources(mesh, options_.colors, masks);
  if (!xy_ && sources_count_ == 0)
    throw sim::InputError("no PE can send: no route in the route table accepts a color from a ramp");
  measurement_ = Measurement(options_.warmup, window_end_, sources_count_, routers_);
  sources_.resize(routers_);
  calendar_.resize(kCalendar);
  for (std::uint32_t r = 0; r < routers_; ++r) {
    Source& s = sources_[r];
    s.rng = SplitMix64::stream(options_.seed, r);
    s.colors = masks[r];
    if (s.colors) schedule(r, process_.gap(s.rng), 0);
  }
  active_sources_.resize(routers_);
  sinks_.resize(mesh.endpoints());
  sink_pending_.assign(mesh.endpoints(), 0);
  sink_rr_.assign(mesh.endpoints(), 0);
  if (xy_) sink_packet_.assign(std::size_t{routers_} * options_.colors, kNone);
  multi_ = xy_ && options_.packet_size > 1;
  mesh_.set_endpoint_listener(this);
  if (engine_) {
    engine_->add(this);
    engine_->wake(this, sim::Cycle(0));
  }
}

ExpectedTraffic TrafficGenerator::expected_traffic(const TrafficOptions& options, const MeshGeometry& geometry,
                                                   Routing routing) {
  if (routing != Routing::XY || options.packet_size != 1) return ExpectedTraffic{};
  // The mean hops over destinations drawn for every source in turn (a stream of its own, so
  // the run's draws are untouched), plus the ejection.
  const Pattern pattern =
      Pattern::make(options.pattern, geometry.width(), geometry.height(), options.hotspot, options.hotspot_fraction);
  constexpr std::uint32_t kDraws = 4096;
  const std::uint32_t w = geometry.width(), routers = geometry.routers();
  SplitMix64 rng(0x1a9e5);
  std::uint64_t hops = 0;
  for (std::uint32_t i = 0; i < kDraws; ++i) {
    const std::uint32_t src = i % routers, dst = pattern.destination(src, rng);
    const auto dx = static_cast<std::int64_t>(src % w) - dst % w, dy = static_cast<std::int64_t>(src / w) - dst / w;
    hops += static_cast<std::uint64_t>((dx < 0 ? -dx : dx) + (dy < 0 ? -dy : dy));
  }
  ExpectedTraffic t;
  t.moves = options.rate * (static_cast<double>(hops) / kDraws + 1.0);
  t.single_wavelet_colors = options.colors;
  return t;
}

void TrafficGenerator::add_packet(hw::PeCoord src, hw::PeCoord dst, std::uint32_t size, sim::Cycle at) {
  const MeshGeometry& g = mesh_.geometry();
  if (!xy_) throw std::logic_error("TrafficGenerator::add_packet needs XY routing");
  if (!g.contains(src.x, src.y) || !g.contains(dst.x, dst.y) || size == 0)
    throw std::logic_error("TrafficGenerator::add_packet: source or destination outside the mesh");
  if (size > 1 && mesh_.lanes())
    throw std::logic_error(
        "TrafficGenerator::add_packet: a packet of several wavelets on a mesh built for single-wavelet packets");
  if (!scripted_.empty() && at.count() < scripted_.back().at) scripted_sorted_ = false;
  scripted_.push_back(Scripted{at.count(), g.router(src), g.router(dst), size});
  multi_ = multi_ || size > 1;
  if (engine_) engine_->wake(this, at);
}

void TrafficGenerator::set_observer(std::function<void(const Delivery&)> observer) {
  if (generated_packets_ != 0)
    throw std::logic_error("TrafficGenerator::set_observer after packets were created (set it before the run)");
  observer_ = std::move(observer);
}

inline void TrafficGenerator::schedule(std::uint32_t s, std::uint64_t at, std::uint64_t now) {
  sources_[s].next_packet = at;
  if (at >= BernoulliProcess::kNever) return;
  if (at - now < kCalendar) {
    calendar_[at % kCalendar].push_back(s);
    ++calendar_count_;
  } else {
    far_.emplace_back(at, s);
    far_min_ = std::min(far_min_, at);
  }
}

inline void TrafficGenerator::create(std::uint32_t src, std::uint32_t dst, std::uint32_t size, std::uint64_t now,
                                     bool measured) {
  if (creation_observer_) creation_observer_(now, src, dst, size);
  ++generated_packets_;
  generated_wavelets_ += size;
  queued_wavelets_ += size;
  measurement_.created(now, size);
  if (measured && xy_) {
    ++measured_outstanding_;
    ++measured_created_;
  }
  Source& s = sources_[src];
  if (s.active || !by_cycle(size)) {
    enqueue(src, new_packet(src, dst, size, now, measured));
    return;
  }
  s.first = tagged_wavelet(src, dst, now, measured);
  s.has_first = true;
  ++s.seq;
  s.active = true;
  active_sources_[active_count_++] = src;
}

inline Flit TrafficGenerator::tagged_wavelet(std::uint32_t src, std::uint32_t dst, std::uint64_t created,
                                             bool measured) const {
  const std::uint32_t w = mesh_.geometry().width();
  return Flit::make(xy_ ? pack_destination(dst % w, dst / w) : src, cycle_tag(created, measured), true, true);
}

inline std::uint32_t TrafficGenerator::new_packet(std::uint32_t src, std::uint32_t dst, std::uint32_t size,
                                                  std::uint64_t now, bool measured) {
  std::uint32_t id;
  if (free_count_) {
    id = free_packets_[--free_count_];
  } else {
    if (packets_.size() >= Flit::kTagMask)
      throw sim::SimulationError(fmt::format(
          "synthetic traffic: more than {} packets waiting at the sources; the offered load is far beyond what the "
          "fabric accepts (lower --rate or shorten --warmup/--measure/--drain)",
          Flit::kTagMask));
    id = static_cast<std::uint32_t>(packets_.size());
    packets_.emplace_back();
    free_packets_.resize(packets_.size());
  }
  packets_[id] = Packet{now, sources_[src].seq++, src, dst, kNone, size, 0, 0, 0, measured};
  return id;
}

inline void TrafficGenerator::enqueue(std::uint32_t src, std::uint32_t id) {
  Source& s = sources_[src];
  if (s.tail == kNone)
    s.head = id;
  else
    packets_[s.tail].next = id;
  s.tail = id;
  if (!s.active) {
    s.active = true;
    active_sources_[active_count_++] = src;
  }
}

inline std::uint32_t TrafficGenerator::open_color(std::uint32_t src, const Source& s) const {
  for (std::uint64_t m = rotate(s.colors, s.rr); m; m &= m - 1) {
    const std::uint32_t c = (static_cast<std::uint32_t>(__builtin_ctzll(m)) + s.rr) & 63u;
    if (mesh_.can_send(src, hw::Color(static_cast<std::uint8_t>(c)))) return c;
  }
  return kNone;
}

inline void TrafficGenerator::inject(std::uint32_t src, sim::Cycle now) {
  Source& s = sources_[src];
  if (s.has_first) {
    const std::uint32_t c = open_color(src, s);
    if (c == kNone) return;
    mesh_.send(src, hw::Color(static_cast<std::uint8_t>(c)), s.first, now);
    s.rr = static_cast<std::uint8_t>((c + 1) & 63u);
    s.has_first = false;
    --queued_wavelets_;
    return;
  }
  const std::uint32_t id = s.head;
  Packet& p = packets_[id];
  std::uint32_t c = p.color;
  if (p.sent == 0) {
    c = open_color(src, s);
    if (c == kNone) return;
    p.color = static_cast<std::uint8_t>(c);
    s.rr = static_cast<std::uint8_t>((c + 1) & 63u);
  } else if (!mesh_.can_send(src, hw::Color(static_cast<std::uint8_t>(c)))) {
    return;
  }
  const bool tagged = by_cycle(p.size);
  const Flit f = tagged ? tagged_wavelet(src, p.dst, p.created, p.measured)
                 : p.sent
                     ? Flit::make(p.sent, id, false, p.sent + 1 == p.size)
                     : Flit::make(pack_destination(p.dst % mesh_.geometry().width(), p.dst / mesh_.geometry().width()),
                                  id, true, p.size == 1);
  mesh_.send(src, hw::Color(static_cast<std::uint8_t>(c)), f, now);
  ++p.sent;
  --queued_wavelets_;
  if (p.sent < p.size) return;
  s.head = p.next;
  if (s.head == kNone) s.tail = kNone;
  if (tagged) free_packets_[free_count_++] = id;
}

inline void TrafficGenerator::eject(std::uint32_t sink, sim::Cycle now) {
  const std::uint64_t visible = mesh_.visible(sink);
  if (!visible) return;
  const std::uint32_t c =
      (static_cast<std::uint32_t>(__builtin_ctzll(rotate(visible, sink_rr_[sink]))) + sink_rr_[sink]) & 63u;
  sink_rr_[sink] = static_cast<std::uint8_t>((c + 1) & 63u);
  const hw::Color color(static_cast<std::uint8_t>(c));
  const Flit f = mesh_.pop(sink, color, now);
  --sink_pending_[sink];
  ++ejected_wavelets_;
  const std::uint64_t t = now.count();
  measurement_.ejected(t);
  if (!xy_) {
    receive_static(sink, c, f, t);
    return;
  }
  if (!(f.head() && f.tail() && carries_cycle(1))) {
    receive_record(sink, c, f, t);
    return;
  }
  // A single-wavelet packet without a record (see carries_cycle): its destination is in its
  // payload, its creation cycle and measured mark in its tag.
  const MeshGeometry& g = mesh_.geometry();
  if (multi_ && sink_packet_[std::size_t{sink} * options_.colors + c] != kNone) inside_packet(sink, c);
  if (const std::uint32_t to = g.router(destination_x(f.payload), destination_y(f.payload)); to != sink)
    misdelivered(to, sink, c);
  ++delivered_packets_;
  if (f.tag() & kMeasuredTag) {
    measurement_.latency(tag_latency(f, t));
    --measured_outstanding_;
  }
}

void TrafficGenerator::receive_static(std::uint32_t sink, std::uint32_t c, Flit f, std::uint64_t t) {
  const std::uint64_t latency = tag_latency(f, t), created = t - latency;
  if (f.tag() & kMeasuredTag) measurement_.latency(latency);
  ++delivered_packets_;
  if (observer_) observer_(Delivery{f.payload, sink, c, 1, 0, created, t});
}

void TrafficGenerator::receive_record(std::uint32_t sink, std::uint32_t c, Flit f, std::uint64_t t) {
  const std::uint32_t id = f.tag();
  Packet& p = packets_[id];
  std::uint32_t& current = sink_packet_[std::size_t{sink} * options_.colors + c];
  const bool in_order = p.dst == sink && p.color == c &&
                        (f.head() ? current == kNone && p.received == 0 : current == id && f.payload == p.received);
  if (!in_order) out_of_order(id, sink, c);
  ++p.received;
  if (!f.tail()) {
    current = id;
    return;
  }
  current = kNone;
  if (p.received != p.size) throw std::logic_error("synthetic traffic: packet tail ejected before its body");
  ++delivered_packets_;
  if (p.measured) {
    measurement_.latency(t - p.created);
    --measured_outstanding_;
  }
  if (observer_) observer_(Delivery{p.src, p.dst, c, p.size, p.seq, p.created, t});
  free_packets_[free_count_++] = id;
}

void TrafficGenerator::inside_packet(std::uint32_t sink, std::uint32_t c) const {
  throw std::logic_error(
      fmt::format("synthetic traffic: a single-wavelet packet was ejected at {} on color {} inside another packet",
                  mesh_.geometry().name(sink), c));
}

void TrafficGenerator::misdelivered(std::uint32_t to, std::uint32_t sink, std::uint32_t c) const {
  const MeshGeometry& g = mesh_.geometry();
  throw std::logic_error(
      fmt::format("synthetic traffic: a packet for {} was ejected at {} on color {}", g.name(to), g.name(sink), c));
}

void TrafficGenerator::out_of_order(std::uint32_t id, std::uint32_t sink, std::uint32_t c) const {
  const Packet& p = packets_[id];
  const MeshGeometry& g = mesh_.geometry();
  throw std::logic_error(
      fmt::format("synthetic traffic: wavelet {} of packet {} ({} -> {}) ejected out of order at {} on color {}",
                  p.received, id, g.name(p.src), g.name(p.dst), g.name(sink), c));
}

void TrafficGenerator::evaluate(sim::Cycle now) {
  if (finished_) return;
  const std::uint64_t t = now.count();
  if (!scripted_sorted_) {
    std::stable_sort(scripted_.begin(), scripted_.end(),
                     [](const Scripted& a, const Scripted& b) { return a.at < b.at; });
    scripted_sorted_ = true;
  }
  const bool scripted_done = next_scripted_ == scripted_.size();
  if (xy_) {
    if (t >= window_end_ && measured_outstanding_ == 0 && scripted_done) {
      drained_ = true;
      finish(now);
      return;
    }
  } else if (t >= window_end_ && active_count_ == 0 && sink_count_ == 0 && mesh_.idle()) {
    drained_ = true;
    finish(now);
    return;
  }
  if (t >= drain_end_) {
    finish(now);
    return;
  }

  if (xy_ || t < window_end_) {
    if (far_min_ < t + kCalendar) {
      std::size_t kept = 0;
      far_min_ = BernoulliProcess::kNever;
      for (const auto& [at, src] : far_) {
        if (at < t + kCalendar) {
          calendar_[at % kCalendar].push_back(src);
          ++calendar_count_;
        } else {
          far_[kept++] = {at, src};
          far_min_ = std::min(far_min_, at);
        }
      }
      far_.resize(kept);
    }
    // Scheduling never adds to this cycle's bucket (the next packet is at least a cycle later).
    auto& due = calendar_[t % kCalendar];
    const std::uint32_t size = xy_ ? options_.packet_size : 1;
    const bool measured = measurement_.in_window(t);
    for (std::size_t i = 0; i < due.size(); ++i) {
      const std::uint32_t r = due[i];
      Source& s = sources_[r];
      if (s.next_packet != t) throw std::logic_error("synthetic traffic: a source missed its injection cycle");
      const std::uint32_t dst = xy_ ? pattern_.destination(r, s.rng) : r;  // static: the routes decide
      create(r, dst, size, t, measured);
      const std::uint64_t gap = process_.gap(s.rng);
      schedule(r, gap >= BernoulliProcess::kNever ? BernoulliProcess::kNever : t + 1 + gap, t);
    }
    calendar_count_ -= due.size();
    due.clear();
  }
  while (next_scripted_ < scripted_.size() && scripted_[next_scripted_].at <= t) {
    const Scripted& sp = scripted_[next_scripted_++];
    if (sp.at < t) throw std::logic_error("synthetic traffic: a scripted packet was scheduled in the past");
    create(sp.src, sp.dst, sp.size, t, true);
  }

  std::uint32_t kept = 0;
  for (std::uint32_t i = 0; i < active_count_; ++i) {
    const std::uint32_t src = active_sources_[i];
    inject(src, now);
    if (sources_[src].has_first || sources_[src].head != kNone)
      active_sources_[kept++] = src;
    else
      sources_[src].active = false;
  }
  active_count_ = kept;

  kept = 0;
  for (std::uint32_t i = 0; i < sink_count_; ++i) {
    const std::uint32_t sink = sinks_[i];
    eject(sink, now);
    if (sink_pending_[sink]) sinks_[kept++] = sink;
  }
  sink_count_ = kept;
}

void TrafficGenerator::finish(sim::Cycle now) {
  finished_ = true;
  end_cycle_ = now.count();
}

sim::Cycle TrafficGenerator::write(sim::Cycle now) {
  if (finished_) {
    if (engine_) sc_core::sc_stop();
    return sim::Cycle::never();
  }
  if (active_count_ || sink_count_) return now + sim::Cycle(1);
  const std::uint64_t t = now.count();
  std::uint64_t next = std::max<std::uint64_t>(window_end_, t + 1);
  if (!xy_ && t + 1 >= window_end_) next = t + 1;  // waiting for the fabric to empty
  next = std::min(next, std::max<std::uint64_t>(drain_end_, t + 1));
  if (xy_ || t + 1 < window_end_) {
    next = std::min(next, far_min_);
    if (calendar_count_)
      for (std::uint64_t k = 1; k < kCalendar; ++k)
        if (!calendar_[(t + k) % kCalendar].empty()) {
          next = std::min(next, t + k);
          break;
        }
  }
  if (next_scripted_ < scripted_.size()) next = std::min(next, scripted_[next_scripted_].at);
  return sim::Cycle(std::max(next, t + 1));
}

void TrafficGenerator::on_arrival(std::uint32_t ep, std::uint32_t, sim::Cycle at) {
  if (sink_pending_[ep]++ == 0) sinks_[sink_count_++] = ep;
  wake(at);
}

void TrafficGenerator::wake(sim::Cycle at) {
  if (!engine_ || at == last_wake_) return;
  last_wake_ = at;
  engine_->wake(this, at);
}

TrafficResult TrafficGenerator::result() const {
  TrafficResult r;
  r.rate = options_.rate;
  measurement_.fill(r);
  r.cycles = end_cycle_;
  r.drained = drained_;
  r.undelivered = xy_ ? measured_outstanding_ : (drained_ ? 0 : queued_wavelets_ + mesh_.in_network());
  return r;
}

void TrafficGenerator::add_stats(sim::stats::Group& g) {
  g.counter("generated_packets", &generated_packets_, "packets", "packets created at the sources");
  g.counter("generated_wavelets", &generated_wavelets_, "wavelets", "wavelets created at the sources");
  g.counter("delivered_packets", &delivered_packets_, "packets",
            "packets whose tail was ejected (static routes: wavelet copies ejected)");
  g.counter("ejected_wavelets", &ejected_wavelets_, "wavelets", "wavelets popped by the sinks");
  g.counter("queued_wavelets", &queued_wavelets_, "wavelets", "wavelets still waiting in source queues");
  g.formula(
      "offered", [this] { return measurement_.offered(); }, "wavelets/node/cycle",
      "wavelets created per source per cycle in the measurement window");
  g.formula(
      "accepted", [this] { return measurement_.accepted(); }, "wavelets/node/cycle",
      "wavelets ejected per router per cycle in the measurement window");
  g.distribution("latency", &measurement_.latencies(), "cycles",
                 "packet latency, creation to ejection of the tail, of packets created in the measurement window");
  g.formula(
      "drained", [this] { return drained_ ? 1.0 : 0.0; }, "bool",
      "1 when every measured packet was delivered within the drain limit", true);
}

std::string TrafficGenerator::describe() const {
  return fmt::format("synthetic traffic ({}, {} wavelets/node/cycle, {} sources)", pattern_.name(), options_.rate,
                     sources_count_);
}

}  // namespace wafersim::fabric::traffic
