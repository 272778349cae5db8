#include "platforms/streaming_cluster.h"

#include <fmt/format.h>

namespace wafersim::platforms {

platforms::edge::EdgeIoConfig edge_io_config(const PlatformSpec& spec) {
  platforms::edge::EdgeIoConfig io;
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

EndpointFactory model_endpoints(const platforms::edge::ModelEndpointConfig& config) {
  return [config](const char* name, std::uint32_t index, const platforms::edge::EdgeIoConfig& io,
                  sim::stats::Group& stats) -> std::unique_ptr<platforms::edge::EdgeEndpoint> {
    return std::make_unique<platforms::edge::ModelEndpoint>(name, io, index, config, stats);
  };
}

StreamingCluster::StreamingCluster(const sc_core::sc_module_name& name, const PlatformSpec& spec,
                                   std::vector<memoryx::LayerSpec> layers, const memoryx::OptimizerConfig& optimizer,
                                   const EndpointFactory& endpoints, const StreamingOptions& options,
                                   sim::stats::Group& stats)
    : sc_core::sc_module(name), spec_(spec) {
  auto& g = stats.group(basename());
  const auto io = edge_io_config(spec_);
  memoryx_ =
      std::make_unique<memoryx::MemoryX>("memoryx", spec_.memoryx, stream_port_config(spec_), std::move(layers),
                                         optimizer, memoryx::MemoryXOptions{options.functional, options.seed}, g);
  const std::uint32_t n = spec_.cluster.systems;
  swarmx_ = std::make_unique<swarmx::SwarmX>("swarmx", spec_.swarmx, n, io.plane_bandwidth(), options.functional, g);
  for (std::uint32_t e = 0; e < n; ++e) endpoints_.push_back(endpoints(fmt::format("wafer{}", e).c_str(), e, io, g));
  for (std::uint32_t p = 0; p < spec_.swarmx.planes; ++p) {
    memoryx_->stream_out(p).connect(swarmx_->root_in(p));
    swarmx_->root_out(p).connect(memoryx_->gradient_in(p));
    for (std::uint32_t e = 0; e < n; ++e) {
      swarmx_->leaf_out(e, p).connect(endpoints_[e]->weights_in(p));
      endpoints_[e]->gradients_out(p).connect(swarmx_->leaf_in(e, p));
    }
  }
}

std::vector<const platforms::edge::EdgeEndpoint*> StreamingCluster::endpoints() const {
  std::vector<const platforms::edge::EdgeEndpoint*> out;
  for (const auto& e : endpoints_) out.push_back(e.get());
  return out;
}

std::string StreamingCluster::describe_state() const {
  std::string out = memoryx_->describe_state() + "\n" + swarmx_->describe_state();
  for (const auto& e : endpoints_) out += "\n" + e->describe_state();
  return out;
}

}  // namespace wafersim::platforms
