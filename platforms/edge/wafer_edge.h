#pragma once
// A wafer's edge endpoint in a co-simulated cluster, on the wafer's side of its edge links: it
// moves weight chunks from the cluster's links into the mesh's west edge channels and
// gradient wavelets from the east channels into gradient chunks, wavelet by wavelet, under
// the system's I/O limit (system.io_ports x system.io_port_bandwidth, each direction) and
// with credit back-pressure both ways. It runs on the wafer's engine and thread; what it
// exchanges with the cluster are time-stamped messages (edge_message.h), taken and given by
// the cluster at window boundaries (platforms/cluster.h).

#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "fabric/mesh.h"
#include "platforms/edge/edge_io_config.h"
#include "platforms/edge/edge_message.h"
#include "platforms/edge/edge_streams.h"
#include "sim/engine/clocked.h"
#include "sim/engine/engine.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms::edge {

struct WaferEdgeConfig {
  EdgeIoConfig io;
  sim::Picos latency{100000};  // each edge link, each direction: the lookahead
  std::uint64_t chunk_bytes = 4096;
  std::uint32_t staging_chunks = 8;  // weight chunks the edge holds for the programs
  std::uint32_t wavelet_bits = 32;
  double clock_hz = 1.1e9;
};

// Where the values of a host tensor's wavelets come from: cluster layer `layer`, starting at
// element `offset` of its flat FP32 stream; `image` (may be null: timing only) holds them in
// the wafer's format once they arrived.
struct TensorSource {
  std::int64_t layer = -1;  // -1: not streamed (a wavelet referring to it is a logic error)
  std::uint64_t offset = 0;
  const std::vector<std::uint32_t>* image = nullptr;
};

// Contract:
// - The cluster hands in messages (deliver) stamped at or after the wafer's present, and takes
//   those the edge produced (take_outgoing), every one stamped latency after its cause.
// - A weight chunk that arrives waits for a staging slot; once staged, its slot on the link is
//   free again (a credit to the cluster) and `on_staged` sees it (the values go into the host
//   tensors). A chunk stays staged until release() of its stream (MemoryX's schedule
//   position); chunks of a released stream are freed as they are staged. Only chunks of the
//   two lowest streams not released are staged (the staging holds two streams: the one the
//   PEs read and the next), so a stream never waits behind a later one.
// - An in-stream's wavelet (WaveletRef) may go once its element's chunk of the current step
//   (set_step) has been staged: whichever pass brought it (the weights do not change within a
//   step). At most one wavelet per channel per cycle, and all channels together within the
//   I/O limit; the same limit holds for the wavelets out.
// - send_gradient() queues a chunk for plane index % planes, sent in queue order when the
//   link is free and a credit is back. While `buffer_chunks` or more wait, no gradient
//   wavelet leaves the mesh (back-pressure into the fabric).
class WaferEdge final : public sim::Clocked, public fabric::EdgeListener, public EdgeStreams {
 public:
  WaferEdge(const std::string& name, const WaferEdgeConfig& config, fabric::Mesh& mesh, sim::Engine& engine,
            sim::stats::Group& stats);

  void set_sources(std::vector<TensorSource> sources) { sources_ = std::move(sources); }
  void set_on_staged(std::function<void(const sim::stream::Chunk&)> fn) { on_staged_ = std::move(fn); }
  void set_step(std::uint32_t step) { step_ = step; }
  void release(std::uint32_t stream);
  void send_gradient(sim::stream::Chunk chunk);
  [[nodiscard]] bool gradients_sent() const;  // nothing queued or on the links

  // The cluster's side of the window exchange.
  void deliver(EdgeMessages messages);
  EdgeMessages take_outgoing();

  // EdgeStreams
  void begin(std::vector<InStream> in, std::vector<OutStream> out) override;
  [[nodiscard]] bool done() const override;
  [[nodiscard]] const std::vector<OutStream>& outputs() const override { return out_; }
  [[nodiscard]] std::uint64_t last_activity() const override { return last_; }
  [[nodiscard]] std::uint64_t wavelets_sent() const override { return sent_; }
  [[nodiscard]] std::uint64_t wavelets_received() const override { return received_; }
  [[nodiscard]] std::string pending() const override;
  // The cycle the current streams' first wavelet went into the mesh (Cycle::never(): none yet).
  [[nodiscard]] sim::Cycle first_sent() const { return first_sent_; }

  // Clocked and EdgeListener
  void evaluate(sim::Cycle now) override;
  sim::Cycle write(sim::Cycle now) override;
  [[nodiscard]] std::string describe() const override;
  void on_arrival(fabric::EdgeSide side, std::uint32_t channel, hw::Color c, sim::Cycle at) override;
  void on_credit(fabric::EdgeSide side, std::uint32_t channel, hw::Color c, sim::Cycle at) override;

  [[nodiscard]] sim::Picos ps_of(sim::Cycle c) const;
  [[nodiscard]] sim::Cycle cycle_at_or_after(sim::Picos t) const;
  [[nodiscard]] const WaferEdgeConfig& config() const { return config_; }

  struct Counters {
    std::uint64_t io_limited_in = 0, io_limited_out = 0;  // channel-cycles held back by the I/O limit
    std::uint64_t starved = 0;                            // cycles an in-stream waited for its weights to arrive
    std::uint64_t fabric_blocked = 0;                     // channel-cycles an in-stream had data but no fabric credit
    std::uint64_t held_gradients = 0;  // cycles no gradient wavelet left for lack of room at the edge
    std::uint64_t chunks_in = 0, chunks_out = 0, peak_staged = 0;
    std::uint64_t gradient_busy_ps = 0, gradient_blocked_ps = 0;
  };
  [[nodiscard]] const Counters& counters() const { return n_; }
  // The counters at the start of cycle `at` (no earlier than the last cycle evaluated), with
  // the waits still going on (starved, held_gradients) counted up to it.
  [[nodiscard]] Counters counters_at(sim::Cycle at) const;

 private:
  struct Port {
    fabric::EdgeSide side;
    std::uint32_t channel;
    hw::RampPort* ramp;
    std::vector<std::size_t> in, out;
    std::size_t rr_in = 0, rr_out = 0;
  };
  struct Bucket {  // the I/O limit of one direction, in bit-hertz
    std::uint64_t gain = 0, cost = 0, cap = 0, tokens = 0;
    std::uint64_t at = 0;  // cycle the tokens are for
    void refill(std::uint64_t now);
    [[nodiscard]] bool unlimited() const { return gain == 0; }
  };
  struct GradientPlane {
    std::deque<std::pair<sim::stream::Chunk, sim::Picos>> queue;  // with the time it was queued
    std::uint32_t credits = 0;
    sim::Picos busy_until{0};
  };
  Port& port(fabric::EdgeSide side, std::uint32_t channel);
  void take_messages(sim::Cycle now);
  void stage(sim::Cycle now);
  void send_gradients(sim::Cycle now);
  bool ready(const InStream& s, std::size_t k) const;
  std::uint32_t payload(const InStream& s, std::size_t k) const;
  void move_in(sim::Cycle now);
  void move_out(sim::Cycle now);
  std::size_t gradients_waiting() const;

  std::string name_;
  WaferEdgeConfig config_;
  fabric::Mesh& mesh_;
  sim::Engine& engine_;
  double period_ps_;
  std::vector<TensorSource> sources_;
  std::function<void(const sim::stream::Chunk&)> on_staged_;
  std::uint32_t step_ = 0;

  EdgeMessages inbox_;  // sorted by (at, kind, plane) stably
  std::size_t inbox_next_ = 0;
  EdgeMessages outbox_;
  std::vector<std::deque<sim::stream::Chunk>> waiting_;  // per plane: arrived, not staged
  std::vector<std::uint32_t> staged_;                    // the stream of each staged chunk
  std::set<std::uint32_t> released_;                     // streams released at or above floor_
  std::uint32_t floor_ = 0;                              // every stream below it is released
  std::vector<std::vector<std::uint32_t>> arrived_;      // [layer][chunk]: the step + 1 it was last staged in
  std::vector<GradientPlane> gplanes_;

  std::vector<InStream> in_;
  std::vector<std::size_t> next_;
  std::vector<OutStream> out_;
  std::vector<Port> ports_;
  std::vector<std::size_t> in_ports_, out_ports_;  // ports with streams each way, in order of first use
  Bucket bucket_in_, bucket_out_;
  std::size_t rr_in_ports_ = 0, rr_out_ports_ = 0;  // the port served first this cycle
  bool progressed_ = false, limited_ = false, starving_ = false, holding_ = false;
  std::uint64_t starve_since_ = 0, hold_since_ = 0;
  std::uint64_t last_ = 0, sent_ = 0, received_ = 0;
  sim::Cycle first_sent_ = sim::Cycle::never();
  Counters n_;
};

}  // namespace wafersim::platforms::edge
