#pragma once
// The interface a wafer presents to the cluster: per SwarmX plane, a weights-in link (TLM
// target) and a gradients-out link (TLM initiator) at the wafer's edge. The base class owns
// the ports, the SC_METHOD and the records the step timeline needs; a subclass (the model
// endpoint now, a wafer's edge I/O later) decides when chunks are consumed and produced.

#include <systemc>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "platforms/edge/edge_io_config.h"
#include "sim/picos.h"
#include "sim/stats/stats.h"
#include "sim/stream/chunk_link.h"

namespace wafersim::platforms::edge {

struct Interval {
  sim::Picos start, end;
};

// What an endpoint did, for the step timeline.
struct EndpointRecords {
  std::map<std::uint32_t, sim::Picos> stream_arrived;  // stream -> time its last chunk arrived here
  std::map<std::pair<std::uint32_t, std::uint32_t>, sim::Picos> gradient_started;  // (step, layer) -> first send
  std::vector<Interval> busy;                                                      // computing (merged, in time order)
};

// Contract for subclasses and for whoever connects an endpoint:
// - Weight chunk i of a stream arrives on plane i % planes, in chunk order on each plane;
//   streams arrive in MemoryX's schedule order (stream numbers 0, 1, 2, ...).
// - The endpoint pops a weight chunk (freeing its slot) once it has used it.
// - For every backward weight chunk it sends exactly one gradient chunk with the same layer,
//   step, index, count, offset and size (pass Gradient), on the same plane, in the same order.
// - step(now) does everything possible at `now` and returns the next time it has work
//   (Picos::never() to sleep until a chunk or a credit arrives).
class EdgeEndpoint : public sc_core::sc_module {
 public:
  // Statistics go to the group `stats_name` under `stats` (empty: the module's name).
  EdgeEndpoint(const sc_core::sc_module_name& name, const EdgeIoConfig& config, std::uint32_t index,
               sim::stats::Group& stats, const std::string& stats_name = "");

  [[nodiscard]] const EdgeIoConfig& io() const { return io_; }
  [[nodiscard]] std::uint32_t index() const { return index_; }
  [[nodiscard]] std::uint32_t planes() const { return io_.planes; }
  sim::stream::ChunkInPort& weights_in(std::uint32_t plane) { return *weights_in_.at(plane); }
  sim::stream::ChunkOutPort& gradients_out(std::uint32_t plane) { return *gradients_out_.at(plane); }
  [[nodiscard]] const EndpointRecords& records() const { return records_; }
  [[nodiscard]] virtual std::string describe_state() const;

 protected:
  virtual sim::Picos step(sim::Picos now) = 0;
  // Starts a gradient chunk on its plane's link (requires gradients_out(plane).can_send()).
  void send_gradient(sim::stream::Chunk chunk, sim::Picos now, sim::Picos ready);
  void record_busy(sim::Picos start, sim::Picos end);
  // Runs step() at `t` (not before the present).
  void wake_at(sim::Picos t);
  [[nodiscard]] sim::stats::Group& stats_group() { return *stats_; }

 private:
  void run();
  EdgeIoConfig io_;
  std::uint32_t index_;
  std::vector<std::unique_ptr<sim::stream::ChunkInPort>> weights_in_;
  std::vector<std::unique_ptr<sim::stream::ChunkOutPort>> gradients_out_;
  std::vector<std::uint32_t> arrived_;  // per stream: chunks arrived
  EndpointRecords records_;
  sim::stats::Group* stats_;
  sc_core::sc_event wake_;
};

}  // namespace wafersim::platforms::edge
