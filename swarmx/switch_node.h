#pragma once
// One SwarmX switch of one plane: broadcasts weight chunks from its parent to every child and
// sums its children's gradient chunks (FP32, child order) on the way up. One SC_METHOD
// re-arms itself at the next time anything can happen (docs/swarmx.md).

#include <systemc>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/picos.h"
#include "sim/stats/stats.h"
#include "sim/stream/chunk_link.h"
#include "sim/units/quantity.h"

namespace wafersim::swarmx {

struct SwitchPorts {
  std::vector<units::Bandwidth> down_bandwidth;  // one per child: the link towards it
  units::Bandwidth up_bandwidth;                 // towards the parent: min(port, reduce throughput)
  std::uint32_t buffer_chunks = 4;               // slots of every input port
  sim::Picos latency{0};                         // from a chunk's arrival to when it may leave
};

class SwitchNode : public sc_core::sc_module {
 public:
  SwitchNode(const sc_core::sc_module_name& name, const SwitchPorts& ports, bool functional, sim::stats::Group& stats);

  [[nodiscard]] std::uint32_t children() const { return static_cast<std::uint32_t>(down_out_.size()); }
  sim::stream::ChunkInPort& down_in() { return *down_in_; }
  sim::stream::ChunkOutPort& down_out(std::uint32_t child) { return *down_out_.at(child); }
  sim::stream::ChunkInPort& up_in(std::uint32_t child) { return *up_in_.at(child); }
  sim::stream::ChunkOutPort& up_out() { return *up_out_; }

  [[nodiscard]] std::uint64_t broadcasts() const { return broadcasts_; }
  [[nodiscard]] std::uint64_t reductions() const { return reductions_; }
  [[nodiscard]] std::string describe_state() const;

 private:
  void run();
  bool broadcast(sim::Picos now);
  bool reduce(sim::Picos now);
  sim::Picos next_event(sim::Picos now) const;

  SwitchPorts ports_;
  bool functional_;
  std::unique_ptr<sim::stream::ChunkInPort> down_in_;
  std::vector<std::unique_ptr<sim::stream::ChunkOutPort>> down_out_;
  std::vector<std::unique_ptr<sim::stream::ChunkInPort>> up_in_;
  std::unique_ptr<sim::stream::ChunkOutPort> up_out_;
  std::vector<std::uint32_t> sent_;  // per child: chunks at the front of down_in it has finished sending
  bool reducing_ = false;            // up_out carries the sum of the children's front chunks
  std::uint64_t broadcasts_ = 0, reductions_ = 0;
  sc_core::sc_event wake_;
};

}  // namespace wafersim::swarmx
