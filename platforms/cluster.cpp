#include "platforms/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "platforms/edge/edge_wire.h"
#include "platforms/memory_estimate.h"
#include "sim/errors.h"

namespace wafersim::platforms {
using sim::Picos;

edge::EdgeIoConfig edge_io_config(const PlatformSpec& spec) {
  edge::EdgeIoConfig io;
  io.io_ports = spec.system.io_ports;
  io.io_port_bandwidth = spec.system.io_port_bandwidth;
  io.edge_io_channels = spec.fabric.edge_io_channels;
  io.channel_bandwidth = units::Bandwidth{static_cast<double>(spec.fabric.wavelet_width.bits) * spec.wafer.clock.hz};
  io.planes = spec.swarmx.planes;
  io.swarmx_port_bandwidth = spec.swarmx.port_bandwidth;
  io.buffer_chunks = spec.swarmx.buffer_chunks;
  return io;
}

memoryx::StreamPortConfig stream_port_config(const PlatformSpec& spec) {
  memoryx::StreamPortConfig p;
  p.planes = spec.swarmx.planes;
  p.chunk_bytes = spec.swarmx.chunk_size.bytes();
  p.port_bandwidth = spec.swarmx.port_bandwidth;
  p.buffer_chunks = spec.swarmx.buffer_chunks;
  return p;
}

EndpointFactory model_endpoints(const edge::ModelEndpointConfig& config) {
  return [config](const char* name, std::uint32_t index, const edge::EdgeIoConfig& io,
                  sim::stats::Group& stats) -> std::unique_ptr<edge::EdgeEndpoint> {
    return std::make_unique<edge::ModelEndpoint>(name, io, index, config, stats);
  };
}

Cluster::Cluster(const sc_core::sc_module_name& name, PlatformSpec spec, const BuildOptions& options,
                 sim::stats::Group& stats)
    : sc_core::sc_module(name), spec_(std::move(spec)) {
  check_memory(estimate_memory(spec_, Workload{options.synthetic_traffic, spec_.cluster.systems}), options.max_memory);
  auto& g = stats.group(basename());
  g.formula(
      "systems", [this] { return static_cast<double>(spec_.cluster.systems); }, "systems",
      "CS-X systems in the cluster", true);
  for (std::uint32_t i = 0; i < spec_.cluster.systems; ++i)
    wafers_.push_back(std::make_unique<Wafer>(("wafer" + std::to_string(i)).c_str(), spec_, options, g, i));
  local_ = {0, wafers_.size()};
}

Cluster::Cluster(const sc_core::sc_module_name& name, PlatformSpec spec, ClusterParts parts, sim::stats::Group& stats)
    : sc_core::sc_module(name), spec_(std::move(spec)) {
  build_training(parts, stats.group(basename()));
}

Cluster::~Cluster() = default;

void Cluster::build_training(ClusterParts& parts, sim::stats::Group& g) {
  const auto io = edge_io_config(spec_);
  const auto ports = stream_port_config(spec_);
  std::uint32_t largest = 1;
  for (const auto& l : parts.layers)
    largest = std::max(largest, sim::stream::chunk_count(l.stream_bytes(), ports.chunk_bytes));
  const std::uint32_t n = spec_.cluster.systems;
  transport_ = parts.transport;
  local_ = sim::parallel::rank_items(n, ranks(), rank());
  if (ranks() > 1 && parts.stand_ins) throw std::logic_error("cluster: the replay runs in one process");
  if (rank() > 0) {
    // Only this rank's wafers; MemoryX, SwarmX and the edge links are rank 0's.
    build_wafers(parts, g, largest);
    return;
  }
  memoryx_ =
      std::make_unique<memoryx::MemoryX>("memoryx", spec_.memoryx, ports, std::move(parts.layers), parts.optimizer,
                                         memoryx::MemoryXOptions{parts.functional, parts.seed}, g);
  swarmx_ = std::make_unique<swarmx::SwarmX>("swarmx", spec_.swarmx, n, io.plane_bandwidth(), parts.functional, g);
  if (parts.stand_ins) {
    for (std::uint32_t e = 0; e < n; ++e)
      endpoints_.push_back(parts.stand_ins(fmt::format("wafer{}", e).c_str(), e, io, g));
  } else {
    build_wafers(parts, g, largest);
  }
  for (std::uint32_t p = 0; p < spec_.swarmx.planes; ++p) {
    memoryx_->stream_out(p).connect(swarmx_->root_in(p));
    swarmx_->root_out(p).connect(memoryx_->gradient_in(p));
    for (std::uint32_t e = 0; e < n; ++e) {
      swarmx_->leaf_out(e, p).connect(endpoints_[e]->weights_in(p));
      endpoints_[e]->gradients_out(p).connect(swarmx_->leaf_in(e, p));
    }
  }
}

void Cluster::build_wafers(const ClusterParts& parts, sim::stats::Group& g, std::uint32_t largest) {
  const auto io = edge_io_config(spec_);
  const std::uint32_t n = spec_.cluster.systems;
  const Picos latency = sim::to_picos(spec_.system.edge_latency);
  if (parts.window > latency)
    throw std::logic_error("cluster: a co-simulation window longer than the edge latency (the lookahead)");
  window_ = parts.window == Picos(0) ? latency : parts.window;
  BuildOptions build = parts.build;
  build.driven = true;
  // This rank's wafers' host memory, before any is built.
  check_memory(estimate_memory(spec_, Workload{false, static_cast<std::uint32_t>(local_.size())}), build.max_memory);
  edge::WaferEdgeConfig wc;
  wc.io = io;
  wc.latency = latency;
  wc.chunk_bytes = stream_port_config(spec_).chunk_bytes;
  // Two layers' streams: the one the PEs read and the next one arriving.
  wc.staging_chunks = 2 * largest;
  wc.wavelet_bits = spec_.fabric.wavelet_width.bits;
  wc.clock_hz = spec_.wafer.clock.hz;
  wafers_.resize(n);
  edges_.resize(n);
  for (std::uint32_t e = 0; e < n; ++e) {
    if (local_.contains(e)) {
      BuildOptions own = build;
      if (e != 0) own.failures.clear();  // links and PEs fail on wafer 0
      wafers_[e] = std::make_unique<Wafer>(fmt::format("wafer{}", e).c_str(), spec_, own, g, e);
    }
    if (local_.contains(e)) {
      auto& w = *wafers_[e];
      edges_[e] = std::make_unique<edge::WaferEdge>(fmt::format("wafer{}.edge", e), wc, w.mesh(), w.engine(),
                                                    w.stats().group("edge"));
    }
    // The links' statistics follow the wafer's own: rank 0, which holds them, moves them after
    // a remote wafer's recorded ones (gather_outcomes), so every rank count lists them alike.
    if (rank() == 0) {
      auto bridge = std::make_unique<edge::EdgeBridge>(
          fmt::format("wafer{}_edge_links", e).c_str(), io, e, latency,
          [this] { sync_event_.notify(sc_core::SC_ZERO_TIME); }, g, fmt::format("wafer{}", e));
      bridges_.push_back(bridge.get());
      endpoints_.push_back(std::move(bridge));
    }
  }
  drivers_.assign(n, nullptr);
  team_ = std::make_unique<sim::parallel::Team>(std::max(1U, parts.threads), true);
  if (rank() > 0) return;
  g.formula(
      "window", [this] { return static_cast<double>(window_.count()); }, "ps",
      "co-simulation window: the wafers run this far between exchanges (the edge links' latency)", true);
  g.counter("windows", &windows_, "windows", "window exchanges between the wafers and the cluster");
  SC_HAS_PROCESS(Cluster);
  SC_METHOD(sync);
  sensitive << sync_event_;
}

Wafer& Cluster::wafer(std::size_t i) {
  if (!wafers_.at(i)) throw std::logic_error(fmt::format("cluster: wafer {} is on another rank", i));
  return *wafers_[i];
}

edge::WaferEdge& Cluster::wafer_edge(std::size_t i) {
  if (!edges_.at(i)) throw std::logic_error(fmt::format("cluster: wafer {} is on another rank", i));
  return *edges_[i];
}

void Cluster::exchange(std::size_t e, const edge::EdgeMessages& out, const std::vector<edge::Interval>& compute) {
  bridges_[e]->deliver(out);
  for (const auto& iv : compute) bridges_[e]->record_compute(iv.start, iv.end);
}

std::exception_ptr Cluster::advance_local(std::vector<edge::EdgeMessages>& in, sim::Cycle end) {
  for (std::size_t e = local_.begin; e < local_.end; ++e) {
    if (!drivers_[e]) throw std::logic_error(fmt::format("cluster: co-simulated wafer {} has no driver", e));
    edges_[e]->deliver(std::move(in[e - local_.begin]));
  }
  try {
    team_->run(local_.size(), [&](std::size_t i) { drivers_[local_.begin + i]->advance(end); });
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

namespace {

enum class Order : std::uint8_t { Window, End };

// A rank's failure as bytes, and back as the exception rank 0 raises.
void put_failure(sim::parallel::Writer& w, const std::exception_ptr& failure) {
  w.put<std::uint8_t>(failure ? 1 : 0);
  if (!failure) return;
  try {
    std::rethrow_exception(failure);
  } catch (const sim::Error& e) {
    w.put<std::int32_t>(e.exit_code());
    w.put_string(e.what());
  } catch (const std::exception& e) {
    w.put<std::int32_t>(sim::kExitInternal);
    w.put_string(e.what());
  }
}

std::exception_ptr get_failure(sim::parallel::Reader& r, unsigned rank) {
  if (r.get<std::uint8_t>() == 0) return nullptr;
  const auto code = static_cast<sim::ExitCode>(r.get<std::int32_t>());
  const std::string what = fmt::format("rank {}: {}", rank, r.get_string());
  if (code == sim::kExitInternal) return std::make_exception_ptr(std::logic_error(what));
  return std::make_exception_ptr(sim::Error(code, what));
}

}  // namespace

void Cluster::sync() {
  const Picos now = sim::now();
  const std::size_t n = bridges_.size();
  std::vector<edge::EdgeMessages> in(n);
  for (std::size_t e = 0; e < n; ++e) in[e] = bridges_[e]->take_outgoing();
  const sim::Cycle end = edges_.front()->cycle_at_or_after(now + window_);
  for (unsigned r = 1; r < ranks(); ++r) {
    sim::parallel::Writer w;
    w.put(Order::Window);
    w.put<std::uint64_t>(now.count());
    w.put<std::uint64_t>(end.count());
    const auto group = sim::parallel::rank_items(n, ranks(), r);
    for (std::size_t e = group.begin; e < group.end; ++e) edge::put_messages(w, in[e]);
    transport_->send(r, w.bytes());
  }
  std::vector<edge::EdgeMessages> mine(in.begin() + static_cast<std::ptrdiff_t>(local_.begin),
                                       in.begin() + static_cast<std::ptrdiff_t>(local_.end));
  std::exception_ptr failure = advance_local(mine, end);
  std::vector<edge::EdgeMessages> out(n);
  std::vector<std::vector<edge::Interval>> compute(n);
  bool busy = false;
  for (unsigned r = 1; r < ranks(); ++r) {
    const std::string bytes = transport_->receive(r);
    sim::parallel::Reader rd(bytes);
    const auto group = sim::parallel::rank_items(n, ranks(), r);
    for (std::size_t e = group.begin; e < group.end; ++e) {
      out[e] = edge::get_messages(rd);
      compute[e] = edge::get_intervals(rd);
    }
    if (rd.get<std::uint8_t>() != 0) busy = true;
    if (auto f = get_failure(rd, r); f && !failure) failure = f;
  }
  if (failure) {
    failure_ = failure;
    sc_core::sc_stop();
    return;
  }
  ++windows_;
  for (std::size_t e = local_.begin; e < local_.end; ++e) {
    out[e] = edges_[e]->take_outgoing();
    compute[e] = drivers_[e]->take_compute();
  }
  for (std::size_t e = 0; e < n; ++e) exchange(e, out[e], compute[e]);
  for (std::size_t e = local_.begin; e < local_.end; ++e) busy = busy || !wafers_[e]->engine().quiescent();
  if (busy) sync_event_.notify(sim::to_sc_time(window_));
}

void Cluster::serve() {
  for (;;) {
    const std::string bytes = transport_->receive(0);
    sim::parallel::Reader rd(bytes);
    const auto order = rd.get<Order>();
    // This rank's SystemC time follows rank 0's (what the wafers read of it is the same).
    const Picos at(rd.get<std::uint64_t>());
    if (at > sim::now()) sc_core::sc_start(sim::to_sc_time(at - sim::now()));
    if (order == Order::End) return;
    const sim::Cycle end(rd.get<std::uint64_t>());
    std::vector<edge::EdgeMessages> in(local_.size());
    for (auto& m : in) m = edge::get_messages(rd);
    const std::exception_ptr failure = advance_local(in, end);
    ++windows_;
    sim::parallel::Writer w;
    bool busy = false;
    for (std::size_t e = local_.begin; e < local_.end; ++e) {
      edge::put_messages(w, edges_[e]->take_outgoing());
      edge::put_intervals(w, drivers_[e]->take_compute());
      busy = busy || !wafers_[e]->engine().quiescent();
    }
    w.put<std::uint8_t>(busy ? 1 : 0);
    put_failure(w, failure);
    transport_->send(0, w.bytes());
    if (failure) std::rethrow_exception(failure);
  }
}

void Cluster::end_ranks() {
  if (ranks_ended_ || rank() != 0) return;
  ranks_ended_ = true;
  for (unsigned r = 1; r < ranks(); ++r) {
    sim::parallel::Writer w;
    w.put(Order::End);
    w.put<std::uint64_t>(sim::now().count());
    transport_->send(r, w.bytes());
  }
}

std::vector<const edge::EdgeEndpoint*> Cluster::endpoints() const {
  std::vector<const edge::EdgeEndpoint*> out;
  for (const auto& e : endpoints_) out.push_back(e.get());
  return out;
}

std::string Cluster::describe_state() const {
  if (!memoryx_) return name();
  std::string out = memoryx_->describe_state() + "\n" + swarmx_->describe_state();
  for (const auto& e : endpoints_) out += "\n" + e->describe_state();
  for (const auto& e : edges_)
    if (e) out += "\n" + e->describe();
  return out;
}

}  // namespace wafersim::platforms
