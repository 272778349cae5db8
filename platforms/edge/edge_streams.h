#pragma once
// A layer program's streams through a wafer's edge I/O channels, and the interface of whatever
// serves them: the host's edge driver on a single wafer (platforms/runtime/edge_driver.h) or
// the wafer's edge endpoint in a cluster (platforms/edge/wafer_edge.h).

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/edge_listener.h"
#include "hw/types.h"

namespace wafersim::platforms::edge {

// Where an in-stream's wavelet takes its value from: element `element` of host tensor
// `tensor` (the compiled model's host tensors), resolved by the server when it sends.
struct WaveletRef {
  std::uint32_t tensor = 0;
  std::uint64_t element = 0;
};

struct InStream {
  fabric::EdgeSide side = fabric::EdgeSide::West;
  std::uint32_t channel = 0;
  hw::Color color;
  std::vector<std::uint32_t> payloads;  // the values, known when the stream begins
  std::vector<WaveletRef> refs;         // or, when payloads is empty, where each comes from
  [[nodiscard]] std::size_t size() const { return payloads.empty() ? refs.size() : payloads.size(); }
};

struct OutStream {
  fabric::EdgeSide side = fabric::EdgeSide::East;
  std::uint32_t channel = 0;
  hw::Color color;
  std::uint64_t expected = 0;
  std::vector<std::uint32_t> received;
};

// Contract: begin() hands over one program's streams (replacing the previous ones, which must
// be done); per cycle and channel at most one wavelet goes in and one comes out. done(): every
// in-stream sent and every out-stream full. Counters run over every program.
class EdgeStreams {
 public:
  virtual ~EdgeStreams() = default;
  virtual void begin(std::vector<InStream> in, std::vector<OutStream> out) = 0;
  [[nodiscard]] virtual bool done() const = 0;
  [[nodiscard]] virtual const std::vector<OutStream>& outputs() const = 0;
  // One past the last cycle in which a wavelet of a program was sent or received.
  [[nodiscard]] virtual std::uint64_t last_activity() const = 0;
  [[nodiscard]] virtual std::uint64_t wavelets_sent() const = 0;
  [[nodiscard]] virtual std::uint64_t wavelets_received() const = 0;
  // The streams not done, one line each.
  [[nodiscard]] virtual std::string pending() const = 0;
};

}  // namespace wafersim::platforms::edge
