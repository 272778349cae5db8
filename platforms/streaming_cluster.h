#pragma once
// The weight-streaming loop of a cluster as a SystemC module tree: MemoryX, the SwarmX tree
// and one edge endpoint per system, wired plane by plane. Endpoints come from a factory: the
// model endpoint today, the wafers' edge I/O once the compiled programs exist.

#include <systemc>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memoryx/memoryx.h"
#include "platforms/edge/edge_endpoint.h"
#include "platforms/edge/model_endpoint.h"
#include "platforms/platform_spec.h"
#include "sim/stats/stats.h"
#include "swarmx/swarmx.h"

namespace wafersim::platforms {

// A wafer's edge I/O from the platform: system.io_ports x system.io_port_bandwidth,
// fabric.edge_io_channels at one wavelet per cycle, SwarmX planes and buffers.
platforms::edge::EdgeIoConfig edge_io_config(const PlatformSpec& spec);
// MemoryX's links from the platform: one per SwarmX plane, swarmx.chunk_size chunks,
// swarmx.port_bandwidth, swarmx.buffer_chunks slots.
memoryx::StreamPortConfig stream_port_config(const PlatformSpec& spec);

struct StreamingOptions {
  bool functional = false;  // carry FP32 values (weights, gradients) through the loop
  std::uint64_t seed = 1;
};

using EndpointFactory = std::function<std::unique_ptr<platforms::edge::EdgeEndpoint>(
    const char* name, std::uint32_t index, const platforms::edge::EdgeIoConfig& io, sim::stats::Group& stats)>;

// A factory of model endpoints that all share `config` (rates, loss time, gradients).
EndpointFactory model_endpoints(const platforms::edge::ModelEndpointConfig& config);

class StreamingCluster : public sc_core::sc_module {
 public:
  // One endpoint per system (spec.cluster.systems). Throws sim::InputError when the model
  // does not fit MemoryX.
  StreamingCluster(const sc_core::sc_module_name& name, const PlatformSpec& spec,
                   std::vector<memoryx::LayerSpec> layers, const memoryx::OptimizerConfig& optimizer,
                   const EndpointFactory& endpoints, const StreamingOptions& options, sim::stats::Group& stats);

  memoryx::MemoryX& memoryx() { return *memoryx_; }
  [[nodiscard]] const memoryx::MemoryX& memoryx() const { return *memoryx_; }
  swarmx::SwarmX& swarmx() { return *swarmx_; }
  [[nodiscard]] std::uint32_t endpoint_count() const { return static_cast<std::uint32_t>(endpoints_.size()); }
  platforms::edge::EdgeEndpoint& endpoint(std::uint32_t i) { return *endpoints_.at(i); }
  [[nodiscard]] std::vector<const platforms::edge::EdgeEndpoint*> endpoints() const;
  [[nodiscard]] const PlatformSpec& spec() const { return spec_; }
  [[nodiscard]] std::string describe_state() const;

 private:
  PlatformSpec spec_;
  std::unique_ptr<memoryx::MemoryX> memoryx_;
  std::unique_ptr<swarmx::SwarmX> swarmx_;
  std::vector<std::unique_ptr<platforms::edge::EdgeEndpoint>> endpoints_;
};

}  // namespace wafersim::platforms
