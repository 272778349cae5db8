#pragma once
// MemoryX as a TLM-2.0 module: holds every layer's FP32 weights and optimizer state in DRAM
// and flash, streams each layer's weights out twice per training step (forward, then
// backward) in chunks over `planes` links, prefetches flash-resident weights into DRAM,
// receives the reduced gradients and runs the optimizer as each layer's gradient completes.
// One SC_METHOD re-arms itself at the next time anything can happen (docs/memoryx.md).

#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "memoryx/memoryx_config.h"
#include "memoryx/optimizer.h"
#include "memoryx/placement.h"
#include "sim/picos.h"
#include "sim/stats/stats.h"
#include "sim/stream/chunk_link.h"

namespace wafersim::memoryx {

// The links MemoryX drives: one weights-out and one gradients-in link per plane.
struct StreamPortConfig {
  std::uint32_t planes = 1;
  std::uint64_t chunk_bytes = 4096;        // a multiple of 4 (FP32)
  units::Bandwidth port_bandwidth{100e9};  // each weights-out link
  std::uint32_t buffer_chunks = 4;         // slots per port (out: issued reads; in: gradients)
};

struct MemoryXOptions {
  bool functional = false;  // keep FP32 values (weights, moments, gradients) and move them in chunks
  std::uint64_t seed = 1;   // initial weights of a functional run
};

// One weight stream: a layer's weights for one pass of one step.
struct StreamRecord {
  std::uint32_t layer = 0;
  sim::stream::Pass pass = sim::stream::Pass::Forward;
  std::uint32_t step = 0;
  std::uint32_t chunks = 0;
  bool flash = false;                            // staged from flash through DRAM
  sim::Picos wanted = sim::Picos::never();       // first time a plane could have read it but for staging
  sim::Picos first_issue = sim::Picos::never();  // first DRAM read issued
  sim::Picos last_sent = sim::Picos::never();    // last chunk has left MemoryX
  std::uint32_t sent = 0;
};

struct GradientRecord {
  std::uint32_t layer = 0, step = 0;
  sim::Picos first_arrival = sim::Picos::never();
  sim::Picos complete = sim::Picos::never();  // last chunk written to the layer's tier
};

struct UpdateRecord {
  std::uint32_t layer = 0, step = 0;
  sim::Picos start, end;
};

class MemoryX : public sc_core::sc_module {
 public:
  MemoryX(const sc_core::sc_module_name& name, const MemoryXConfig& config, const StreamPortConfig& ports,
          std::vector<LayerSpec> layers, const OptimizerConfig& optimizer, const MemoryXOptions& options,
          sim::stats::Group& stats);

  sim::stream::ChunkOutPort& stream_out(std::uint32_t plane) { return *planes_out_.at(plane).port; }
  sim::stream::ChunkInPort& gradient_in(std::uint32_t plane) { return *planes_in_.at(plane).port; }
  // Untimed host access to the FP32 master weights (functional runs): b_transport and
  // transport_dbg over one address space, layer after layer, 4 B per parameter. Optional.
  tlm_utils::simple_target_socket_optional<MemoryX> host;

  // Schedules `steps` training steps: forward streams of layers 0..L-1, then backward
  // streams of L-1..0, per step. Call before the simulation starts.
  void schedule_steps(std::uint32_t steps);

  [[nodiscard]] const Placement& placement() const { return placement_; }
  [[nodiscard]] const std::vector<LayerSpec>& layers() const { return layers_; }
  [[nodiscard]] const MemoryXConfig& config() const { return config_; }
  [[nodiscard]] const StreamPortConfig& ports() const { return ports_; }
  [[nodiscard]] const OptimizerConfig& optimizer() const { return optimizer_; }
  [[nodiscard]] std::uint32_t steps() const { return steps_; }
  // Bytes of one weight (or gradient) stream of a layer: params x 4, or a sparse layer's kept
  // parameters x (value + index) bytes.
  [[nodiscard]] std::uint64_t weight_bytes(std::uint32_t layer) const { return layers_.at(layer).stream_bytes(); }
  [[nodiscard]] std::uint32_t chunks_of(std::uint32_t layer) const;

  // Functional runs: FP32 master weights and moments of a layer (moments empty if unused).
  [[nodiscard]] const std::vector<float>& weights(std::uint32_t layer) const { return state_.at(layer).w; }
  void set_weights(std::uint32_t layer, std::vector<float> w);
  [[nodiscard]] const std::vector<float>& moment1(std::uint32_t layer) const { return state_.at(layer).m; }
  [[nodiscard]] const std::vector<float>& moment2(std::uint32_t layer) const { return state_.at(layer).v; }
  [[nodiscard]] std::uint32_t updates_done(std::uint32_t layer) const { return state_.at(layer).updates; }
  // Functional runs resuming a training (a cluster rebuilt after a system failed): the layer's
  // weights and moments as another MemoryX left them after `updates_before` updates; this
  // MemoryX's updates continue the optimizer's count (bias correction, schedule) from there.
  // Moments must be empty exactly when this optimizer keeps none. Call before the simulation.
  void resume(std::uint32_t layer, std::vector<float> w, std::vector<float> m, std::vector<float> v,
              std::uint32_t updates_before);
  [[nodiscard]] std::uint32_t updates_before(std::uint32_t layer) const { return state_.at(layer).updates_before; }

  [[nodiscard]] const std::vector<StreamRecord>& streams() const { return streams_; }
  [[nodiscard]] const std::vector<GradientRecord>& gradients() const { return gradient_records_; }
  [[nodiscard]] const std::vector<UpdateRecord>& updates() const { return update_records_; }
  // Every scheduled stream sent and every scheduled update done.
  [[nodiscard]] bool finished() const;
  // What MemoryX is waiting for (for reports when a run stops short).
  [[nodiscard]] std::string describe_state() const;

  // Counters (also in the statistics tree).
  struct Counters {
    std::uint64_t dram_read = 0, dram_written = 0, flash_read = 0, flash_written = 0;
    std::uint64_t chunks_out = 0, bytes_out = 0, chunks_in = 0, bytes_in = 0, streams_done = 0;
    std::uint64_t prefetches = 0, prefetch_bytes = 0, prefetch_busy_ps = 0;
    std::uint64_t prefetch_hits = 0, prefetch_misses = 0, prefetch_stall_ps = 0;
    std::uint64_t updates = 0, params_updated = 0, optimizer_busy_ps = 0;
  };
  [[nodiscard]] const Counters& counters() const { return n_; }

 private:
  struct LayerState {
    std::vector<float> w, m, v, g;
    std::vector<std::uint32_t> kept;  // sparse, functional: positions of the kept parameters, increasing
    std::uint32_t updates = 0;
    std::uint32_t updates_before = 0;  // updates of a resumed training before this MemoryX's
    std::uint32_t grad_chunks = 0;     // chunks of the current step's gradient written
  };
  struct Issued {
    sim::stream::Chunk chunk;
    sim::Picos ready;
    std::uint32_t stream = 0;
  };
  struct PlaneOut {
    std::unique_ptr<sim::stream::ChunkOutPort> port;
    std::uint32_t stream = 0;   // stream being read on this plane
    std::uint32_t next = 0;     // its next chunk on this plane (global index plane + next * planes)
    sim::Picos read_free{0};    // the plane's DRAM read channel accepts the next read
    std::deque<Issued> queue;   // read, waiting for the link
    std::uint32_t held = 0;     // slots held: queued + on the link
    std::uint32_t on_link = 0;  // stream of the chunk on the link
    std::uint32_t on_link_bytes = 0;
  };
  struct PlaneIn {
    std::unique_ptr<sim::stream::ChunkInPort> port;
    std::deque<sim::Picos> transferred;  // end of the transfers started for the first entries
    std::deque<sim::Picos> written;      // and when each write completes (posted: + latency)
    sim::Picos write_free{0};
  };
  struct PendingWrite {
    sim::Picos done;
    std::uint64_t seq = 0;
    std::uint32_t layer = 0, step = 0;
  };
  struct StagingSlot {
    int layer = -1;
    std::uint32_t version = 0;  // updates the staged weights include
    sim::Picos ready{0};
    std::uint32_t users = 0;  // streams assigned and not yet sent
  };

  void run();
  bool deliver(sim::Picos now);
  bool receive_gradients(sim::Picos now);
  bool optimize(sim::Picos now);
  bool prefetch(sim::Picos now);
  bool issue_reads(sim::Picos now);
  bool send_chunks(sim::Picos now);
  sim::Picos next_event(sim::Picos now) const;
  void stream_sent(std::uint32_t s, sim::Picos now);
  [[nodiscard]] const TierConfig& tier(std::uint32_t layer) const;
  [[nodiscard]] sim::Picos optimizer_time(std::uint32_t layer) const;
  [[nodiscard]] sim::Picos staging_time(std::uint32_t layer) const;
  void add_stats(sim::stats::Group& g);
  void apply_mask(std::uint32_t layer);  // pruned weights and moments to exactly zero
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  unsigned int transport_dbg(tlm::tlm_generic_payload& trans);

  MemoryXConfig config_;
  StreamPortConfig ports_;
  std::vector<LayerSpec> layers_;
  OptimizerConfig optimizer_;
  MemoryXOptions options_;
  Placement placement_;
  std::uint32_t steps_ = 0;

  std::vector<LayerState> state_;
  std::vector<StreamRecord> streams_;
  std::vector<int> stream_slot_;  // staging slot of each stream (-1: none yet / DRAM-resident)
  std::vector<PlaneOut> planes_out_;
  std::vector<PlaneIn> planes_in_;
  std::vector<StagingSlot> slots_;
  std::uint32_t prefetch_next_ = 0;  // next stream the prefetcher considers
  std::uint32_t head_ = 0;           // first stream not completely sent
  sim::Picos prefetch_free_{0};

  struct PendingUpdate {
    std::uint32_t layer, step;
  };
  std::deque<PendingUpdate> update_queue_;
  bool updating_ = false;
  UpdateRecord current_update_;
  std::vector<GradientRecord> gradient_records_;
  std::vector<UpdateRecord> update_records_;
  std::vector<int> gradient_record_of_;  // per layer: index into gradient_records_ for its open step
  std::vector<PendingWrite> writes_;     // gradient writes in flight, by (done, seq)
  std::uint64_t write_seq_ = 0;

  Counters n_;
  sc_core::sc_event wake_;
};

}  // namespace wafersim::memoryx
