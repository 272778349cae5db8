#pragma once
// The cluster's side of a co-simulated wafer's edge links: the endpoint SwarmX's leaf switches
// connect to (per plane a weights-in and a gradients-out chunk link, as every endpoint), which
// forwards what arrives to the wafer and sends what the wafer sent, each a link latency later,
// as time-stamped messages (edge_message.h). Its statistics are the links' (weights_in<p>,
// gradients_out<p>), as for any endpoint.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "platforms/edge/edge_endpoint.h"
#include "platforms/edge/edge_message.h"

namespace wafersim::platforms::edge {

// Contract: deliver() takes the wafer's messages, each stamped at or after the present;
// take_outgoing() gives the messages for the wafer, each stamped `latency` after its cause
// (a weight chunk's arrival here, a gradient credit's return). `on_outgoing` runs when a
// message for the wafer is made (the cluster then exchanges at the latest at its time).
class EdgeBridge final : public EdgeEndpoint {
 public:
  EdgeBridge(const sc_core::sc_module_name& name, const EdgeIoConfig& io, std::uint32_t index, sim::Picos latency,
             std::function<void()> on_outgoing, sim::stats::Group& stats, const std::string& stats_name);

  void deliver(EdgeMessages from_wafer);
  EdgeMessages take_outgoing();
  [[nodiscard]] bool has_outgoing() const { return !outbox_.empty(); }
  // The wafer computed over [start, end) (for the step timeline).
  void record_compute(sim::Picos start, sim::Picos end) { record_busy(start, end); }
  [[nodiscard]] std::string describe_state() const override;

 private:
  sim::Picos step(sim::Picos now) override;

  sim::Picos latency_;
  std::function<void()> on_outgoing_;
  EdgeMessages inbox_, outbox_;
  std::vector<std::uint32_t> forwarded_;     // per plane: buffered weight chunks already forwarded
  std::vector<std::uint32_t> seen_credits_;  // per plane: gradient credits as last seen
  bool started_ = false;
};

}  // namespace wafersim::platforms::edge
