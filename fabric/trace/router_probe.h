#pragma once
// Waveforms of selected routers for VCD viewers: per port, the wavelets in its input queues,
// whether its output sent a wavelet and how many of its colors were credit-stalled, in each
// cycle. Sampled after every tick of the wafer's engine; only the selected routers cost.

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/mesh.h"
#include "sim/engine/clocked.h"
#include "sim/engine/engine.h"
#include "sim/trace/vcd_file.h"

namespace wafersim::fabric::trace {

// Variables <scope>.r<x>_<y>.<port>_queued (16 bits), <port>_sent (1 bit) and <port>_stalled
// (8 bits) for the ports north, east, south, west and ramp. The value at the time of cycle t
// describes cycle t: sent and stalled during it, queued at its end.
//
// Contract: a tick observer of the mesh's engine, and a component of it with nothing to do
// but to be ticked in the cycle after one in which an output sent (so `sent` falls back to
// 0 even when the mesh sleeps); it never changes the mesh.
class RouterProbe final : public sim::Clocked, public sim::TickObserver {
 public:
  RouterProbe(const Mesh& mesh, sim::Engine& engine, sim::trace::VcdFile& vcd, std::vector<std::uint32_t> routers,
              const std::string& scope);

  [[nodiscard]] std::size_t routers() const { return routers_.size(); }

  // sim::TickObserver
  void after_tick(sim::Cycle now) override;
  // sim::Clocked
  void evaluate(sim::Cycle) override {}
  sim::Cycle write(sim::Cycle) override { return sim::Cycle::never(); }
  [[nodiscard]] std::string describe() const override;

 private:
  struct Port {
    std::uint32_t queued = 0, sent = 0, stalled = 0;
    std::uint64_t forwarded = 0, stalls = 0;  // cumulative, at the last sample
  };
  const Mesh& mesh_;
  sim::Engine& engine_;
  std::vector<std::uint32_t> routers_;
  std::vector<Port> ports_;  // [router][port]; addresses stay fixed (sc_trace keeps them)
};

}  // namespace wafersim::fabric::trace
