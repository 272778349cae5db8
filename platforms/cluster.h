#pragma once
// The platform as one SystemC module tree: cluster -> MemoryX, the SwarmX tree and N systems,
// each a wafer (mesh, PEs) behind its edge endpoint, sockets bound here in one place. A single
// wafer's runs build the wafers alone (nothing connects to them); a training run builds the
// whole tree, with every wafer co-simulated or, as the named replay mode, a stand-in endpoint
// per system (docs/training.md).
//
// Co-simulation: the wafers' engines are driven (sim::EngineOptions::driven) and run as the
// parts of one sim::parallel::Team job per window. The cluster's window process runs at a
// window's start T: it hands every wafer what its edge links delivered and every edge bridge
// what its wafer sent, then advances all wafers to the first cycle at or after T + W, each on
// its own thread, while SystemC (MemoryX, SwarmX, the bridges) then simulates [T, T + W).
// W is the edge links' latency (system.edge_latency): whatever one side sends in a window
// takes effect on the other side after it, so the result is the same for any thread count.
//
// Over ranks (ClusterParts::transport with more than one rank): the wafers are split into
// contiguous groups, one per rank (sim::parallel::rank_items); rank 0 holds MemoryX, SwarmX,
// every wafer's edge links and its own group of wafers and runs SystemC; another rank holds
// only its group of wafers and serves rank 0's windows (serve()). At a window's start rank 0
// sends each rank the window's end and what the links delivered to its wafers, runs its own
// wafers, and receives what the others' wafers sent, their compute intervals and whether they
// are still busy; the exchange is then the one-process one, wafer by wafer in index order.

#include <systemc>

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memoryx/memoryx.h"
#include "platforms/edge/edge_bridge.h"
#include "platforms/edge/edge_endpoint.h"
#include "platforms/edge/model_endpoint.h"
#include "platforms/edge/wafer_edge.h"
#include "platforms/platform_spec.h"
#include "platforms/wafer.h"
#include "sim/parallel/team.h"
#include "sim/parallel/transport.h"
#include "sim/stats/stats.h"
#include "swarmx/swarmx.h"

namespace wafersim::platforms {

// A wafer's edge I/O from the platform: system.io_ports x system.io_port_bandwidth,
// fabric.edge_io_channels at one wavelet per cycle, SwarmX planes and buffers.
edge::EdgeIoConfig edge_io_config(const PlatformSpec& spec);
// MemoryX's links from the platform: one per SwarmX plane, swarmx.chunk_size chunks,
// swarmx.port_bandwidth, swarmx.buffer_chunks slots.
memoryx::StreamPortConfig stream_port_config(const PlatformSpec& spec);

using EndpointFactory = std::function<std::unique_ptr<edge::EdgeEndpoint>(
    const char* name, std::uint32_t index, const edge::EdgeIoConfig& io, sim::stats::Group& stats)>;
// A factory of model endpoints (the replay's stand-ins) that all share `config`.
EndpointFactory model_endpoints(const edge::ModelEndpointConfig& config);

// What runs on a co-simulated wafer between window exchanges (the training driver's programs).
// Contract: advance() runs on the wafer's thread and touches only its wafer, its edge and its
// own state; take_compute() is called between windows.
class WaferDriver {
 public:
  virtual ~WaferDriver() = default;
  // Ticks the wafer's engine up to (not including) cycle `end`.
  virtual void advance(sim::Cycle end) = 0;
  // The wafer's compute intervals since the last call, in picoseconds.
  virtual std::vector<edge::Interval> take_compute() = 0;
};

// The parts of a training cluster beyond the platform.
struct ClusterParts {
  std::vector<memoryx::LayerSpec> layers;
  memoryx::OptimizerConfig optimizer;
  bool functional = false;  // carry FP32 values through MemoryX and SwarmX
  std::uint64_t seed = 1;
  EndpointFactory stand_ins;  // the replay: one stand-in per system; empty: co-simulated wafers
  BuildOptions build;         // the co-simulated wafers' build (routes, timing_only); its failures: wafer 0's
  unsigned threads = 1;       // host threads for the wafers (co-simulation)
  // The co-simulation's window: at most the edge latency (the lookahead); 0: the latency. Any
  // window within it gives the same results.
  sim::Picos window{0};
  // The co-simulation's ranks; null: one process.
  sim::parallel::Transport* transport = nullptr;
};

class Cluster : public sc_core::sc_module {
 public:
  // The platform's wafers alone (single-wafer runs). `stats` is the root group; the cluster
  // adds its own group named after itself.
  Cluster(const sc_core::sc_module_name& name, PlatformSpec spec, const BuildOptions& options,
          sim::stats::Group& stats);
  // A training cluster: MemoryX, SwarmX and one system per spec.cluster.systems. Throws
  // sim::InputError when the model does not fit MemoryX.
  Cluster(const sc_core::sc_module_name& name, PlatformSpec spec, ClusterParts parts, sim::stats::Group& stats);
  ~Cluster() override;

  [[nodiscard]] const PlatformSpec& spec() const { return spec_; }
  [[nodiscard]] std::size_t wafer_count() const { return wafers_.size(); }
  // Contract: wafer(i), wafer_edge(i) and set_driver(i) only for this rank's wafers.
  [[nodiscard]] Wafer& wafer(std::size_t i);
  // This rank's wafers (all of them in one process).
  [[nodiscard]] sim::parallel::ItemRange local_wafers() const { return local_; }
  [[nodiscard]] unsigned rank() const { return transport_ ? transport_->rank() : 0; }
  [[nodiscard]] unsigned ranks() const { return transport_ ? transport_->ranks() : 1; }
  [[nodiscard]] bool cosimulated() const { return !wafers_.empty() && memoryx_ != nullptr; }

  memoryx::MemoryX& memoryx() { return *memoryx_; }
  [[nodiscard]] const memoryx::MemoryX& memoryx() const { return *memoryx_; }
  swarmx::SwarmX& swarmx() { return *swarmx_; }
  [[nodiscard]] std::uint32_t endpoint_count() const { return static_cast<std::uint32_t>(endpoints_.size()); }
  edge::EdgeEndpoint& endpoint(std::uint32_t i) { return *endpoints_.at(i); }
  [[nodiscard]] std::vector<const edge::EdgeEndpoint*> endpoints() const;
  // Co-simulation: wafer i's edge endpoint (the wafer's side of its links) and its driver.
  [[nodiscard]] edge::WaferEdge& wafer_edge(std::size_t i);
  void set_driver(std::size_t i, WaferDriver* driver) { drivers_.at(i) = driver; }
  [[nodiscard]] sim::Picos window() const { return window_; }
  [[nodiscard]] std::uint64_t windows() const { return windows_; }
  [[nodiscard]] unsigned threads() const { return team_ ? team_->size() : 1; }
  // Co-simulation: the team running this rank's wafers (timed), and the ranks' transport (null:
  // one process).
  [[nodiscard]] const sim::parallel::Team* team() const { return team_.get(); }
  [[nodiscard]] sim::parallel::Transport* transport() const { return transport_; }
  [[nodiscard]] std::string describe_state() const;
  // A wafer's failure (a simulation error, a limit) stops the simulation (sc_stop); whoever
  // ran it raises it here.
  void rethrow_failure() const {
    if (failure_) std::rethrow_exception(failure_);
  }
  // A rank other than 0: runs the windows rank 0 sends until it ends the run (end_ranks()).
  // A wafer's failure is sent to rank 0 (which raises it) and thrown here.
  void serve();
  // Rank 0, once the simulation ended: ends every other rank's serve().
  void end_ranks();

 private:
  void build_training(ClusterParts& parts, sim::stats::Group& g);
  void build_wafers(const ClusterParts& parts, sim::stats::Group& g, std::uint32_t largest);
  void sync();
  // Delivers the window's inbound messages (per wafer of the range) and advances the range's
  // wafers to `end` on the team; a failure is returned, not thrown.
  std::exception_ptr advance_local(std::vector<edge::EdgeMessages>& in, sim::Cycle end);
  // Rank 0: hands wafer e's outgoing messages and compute intervals to its edge bridge.
  void exchange(std::size_t e, const edge::EdgeMessages& out, const std::vector<edge::Interval>& compute);

  PlatformSpec spec_;
  std::vector<std::unique_ptr<Wafer>> wafers_;
  std::unique_ptr<memoryx::MemoryX> memoryx_;
  std::unique_ptr<swarmx::SwarmX> swarmx_;
  std::vector<std::unique_ptr<edge::EdgeEndpoint>> endpoints_;
  std::vector<edge::EdgeBridge*> bridges_;
  std::vector<std::unique_ptr<edge::WaferEdge>> edges_;
  std::vector<WaferDriver*> drivers_;
  std::unique_ptr<sim::parallel::Team> team_;
  sim::Picos window_{0};
  std::uint64_t windows_ = 0;
  sc_core::sc_event sync_event_;
  std::exception_ptr failure_;
  sim::parallel::Transport* transport_ = nullptr;
  sim::parallel::ItemRange local_;
  bool ranks_ended_ = false;
};

}  // namespace wafersim::platforms
