#pragma once
// The host side of a single wafer's edge channels, standing in for MemoryX and SwarmX: it
// injects each layer's weight streams into the west channels and drains its gradient streams
// from the east channels, one wavelet per channel per cycle each way (the channel's rate,
// fabric.edge_io_channels channels per edge). A cluster replaces it with the weight and
// gradient links of platforms/edge/edge_endpoint.h behind the same channels.

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/edge_listener.h"
#include "fabric/mesh.h"
#include "platforms/edge/edge_streams.h"
#include "sim/engine/clocked.h"
#include "sim/engine/engine.h"

namespace wafersim::platforms::runtime {

using edge::InStream;
using edge::OutStream;

// Contract: an engine component and the mesh's edge listener. begin() hands it a layer's
// streams; per cycle and channel it sends at most one wavelet (round robin over that
// channel's streams that have data and a credit) and pops at most one (round robin over
// the colors with a wavelet). A wavelet arriving on a channel and color no stream expects is
// a simulation error naming them. done(): every in-stream sent and every out-stream full.
class EdgeDriver final : public sim::Clocked, public fabric::EdgeListener, public edge::EdgeStreams {
 public:
  EdgeDriver(fabric::Mesh& mesh, sim::Engine& engine);

  // In-streams must carry their payloads (no refs: the host knows every value).
  void begin(std::vector<InStream> in, std::vector<OutStream> out) override;
  [[nodiscard]] bool done() const override;
  [[nodiscard]] const std::vector<OutStream>& outputs() const override { return out_; }
  // One past the last cycle in which a wavelet was sent or received (0: none yet).
  [[nodiscard]] std::uint64_t last_activity() const override { return last_; }
  [[nodiscard]] std::uint64_t wavelets_sent() const override { return sent_; }
  [[nodiscard]] std::uint64_t wavelets_received() const override { return received_; }
  // Channel-cycles in which a stream had data but no credit (the wafer did not take it).
  [[nodiscard]] std::uint64_t blocked_cycles() const { return blocked_; }
  [[nodiscard]] std::string pending() const override;

  void evaluate(sim::Cycle now) override;
  sim::Cycle write(sim::Cycle now) override;
  [[nodiscard]] std::string describe() const override;
  void on_arrival(fabric::EdgeSide side, std::uint32_t channel, hw::Color c, sim::Cycle at) override;
  void on_credit(fabric::EdgeSide side, std::uint32_t channel, hw::Color c, sim::Cycle at) override;

 private:
  struct Port {
    fabric::EdgeSide side;
    std::uint32_t channel;
    hw::RampPort* ramp;
    std::vector<std::size_t> in, out;  // stream indices
    std::size_t rr_in = 0, rr_out = 0;
  };
  Port& port(fabric::EdgeSide side, std::uint32_t channel);

  fabric::Mesh& mesh_;
  sim::Engine& engine_;
  std::vector<InStream> in_;
  std::vector<std::size_t> next_;  // per in-stream: next payload
  std::vector<OutStream> out_;
  std::vector<Port> ports_;
  bool active_ = false;
  bool progressed_ = false;
  std::uint64_t last_ = 0, sent_ = 0, received_ = 0, blocked_ = 0;
};

}  // namespace wafersim::platforms::runtime
