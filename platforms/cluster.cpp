#include "platforms/cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

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
  memoryx_ =
      std::make_unique<memoryx::MemoryX>("memoryx", spec_.memoryx, ports, std::move(parts.layers), parts.optimizer,
                                         memoryx::MemoryXOptions{parts.functional, parts.seed}, g);
  const std::uint32_t n = spec_.cluster.systems;
  swarmx_ = std::make_unique<swarmx::SwarmX>("swarmx", spec_.swarmx, n, io.plane_bandwidth(), parts.functional, g);
  if (parts.stand_ins) {
    for (std::uint32_t e = 0; e < n; ++e)
      endpoints_.push_back(parts.stand_ins(fmt::format("wafer{}", e).c_str(), e, io, g));
  } else {
    const Picos latency = sim::to_picos(spec_.system.edge_latency);
    if (parts.window > latency)
      throw std::logic_error("cluster: a co-simulation window longer than the edge latency (the lookahead)");
    window_ = parts.window == Picos(0) ? latency : parts.window;
    BuildOptions build = parts.build;
    build.driven = true;
    // Every wafer's host memory, before any is built.
    check_memory(estimate_memory(spec_, Workload{false, n}), build.max_memory);
    edge::WaferEdgeConfig wc;
    wc.io = io;
    wc.latency = latency;
    wc.chunk_bytes = ports.chunk_bytes;
    // Two layers' streams: the one the PEs read and the next one arriving.
    wc.staging_chunks = 2 * largest;
    wc.wavelet_bits = spec_.fabric.wavelet_width.bits;
    wc.clock_hz = spec_.wafer.clock.hz;
    for (std::uint32_t e = 0; e < n; ++e) {
      BuildOptions own = build;
      if (e != 0) own.failures.clear();  // links and PEs fail on wafer 0
      wafers_.push_back(std::make_unique<Wafer>(fmt::format("wafer{}", e).c_str(), spec_, own, g, e));
      auto& w = *wafers_.back();
      auto bridge = std::make_unique<edge::EdgeBridge>(
          fmt::format("wafer{}_edge_links", e).c_str(), io, e, latency,
          [this] { sync_event_.notify(sc_core::SC_ZERO_TIME); }, g, fmt::format("wafer{}", e));
      bridges_.push_back(bridge.get());
      endpoints_.push_back(std::move(bridge));
      edges_.push_back(std::make_unique<edge::WaferEdge>(fmt::format("wafer{}.edge", e), wc, w.mesh(), w.engine(),
                                                         w.stats().group("edge")));
    }
    drivers_.assign(n, nullptr);
    team_ = std::make_unique<sim::parallel::Team>(std::max(1U, parts.threads));
    g.formula(
        "window", [this] { return static_cast<double>(window_.count()); }, "ps",
        "co-simulation window: the wafers run this far between exchanges (the edge links' latency)", true);
    g.counter("windows", &windows_, "windows", "window exchanges between the wafers and the cluster");
    SC_HAS_PROCESS(Cluster);
    SC_METHOD(sync);
    sensitive << sync_event_;
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

void Cluster::exchange() {
  for (std::size_t e = 0; e < edges_.size(); ++e) {
    bridges_[e]->deliver(edges_[e]->take_outgoing());
    for (const auto& iv : drivers_[e]->take_compute()) bridges_[e]->record_compute(iv.start, iv.end);
  }
}

void Cluster::sync() {
  for (std::size_t e = 0; e < drivers_.size(); ++e)
    if (!drivers_[e]) throw std::logic_error(fmt::format("cluster: co-simulated wafer {} has no driver", e));
  const Picos now = sim::now();
  for (std::size_t e = 0; e < edges_.size(); ++e) edges_[e]->deliver(bridges_[e]->take_outgoing());
  const sim::Cycle end = edges_.front()->cycle_at_or_after(now + window_);
  try {
    team_->run(edges_.size(), [&](std::size_t e) { drivers_[e]->advance(end); });
  } catch (...) {
    failure_ = std::current_exception();
    sc_core::sc_stop();
    return;
  }
  ++windows_;
  exchange();
  bool busy = false;
  for (const auto& w : wafers_) busy = busy || !w->engine().quiescent();
  if (busy) sync_event_.notify(sim::to_sc_time(window_));
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
  for (const auto& e : edges_) out += "\n" + e->describe();
  return out;
}

}  // namespace wafersim::platforms
