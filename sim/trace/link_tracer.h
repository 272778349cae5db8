#pragma once
// Traces chunk links (MemoryX, SwarmX, wafer edges): bytes moved and busy time per link and
// window (table "links"), and each chunk as a slice on its link's timeline track.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/stream/chunk_link.h"
#include "sim/stream/chunk_observer.h"
#include "sim/trace/recorder.h"

namespace wafersim::sim::trace {

// A chunk moves its bytes at a constant rate from its first byte leaving to its last
// arriving; each window gets the bytes (and busy time) of the part of that span inside it,
// in whole bytes, so a link's windows add up exactly to its `bytes` statistic.
class LinkTracer final : public stream::ChunkObserver, public WindowProducer {
 public:
  explicit LinkTracer(Recorder& recorder);

  // Observes `port`. `group` names the kind of link ("memoryx", "swarmx", "edge") and
  // `label` the link within the run (shown in the report and as the timeline track).
  void attach(stream::ChunkOutPort& port, const std::string& group, const std::string& label);
  [[nodiscard]] std::size_t links() const { return links_.size(); }

  // stream::ChunkObserver
  void on_send(const stream::ChunkOutPort& port, const stream::ChunkInfo& chunk, Picos start, Picos end) override;
  // WindowProducer: links are filled as chunks start, so windows close by themselves.
  void close_window(std::uint64_t, Cycle, Cycle) override {}
  void windows_merged() override;
  [[nodiscard]] std::uint64_t windows_needed() const override;
  void finish(std::uint64_t windows) override;

 private:
  struct Link {
    std::string name, group, label;
    double bandwidth = 0;
    std::vector<std::uint64_t> bytes, busy_ps;  // per window
    std::uint64_t total = 0;
    TrackId track;
  };
  Recorder& recorder_;
  WindowTable* table_;
  std::vector<Link> links_;
  std::unordered_map<const stream::ChunkOutPort*, std::size_t> index_;  // lookup only, never iterated
};

}  // namespace wafersim::sim::trace
