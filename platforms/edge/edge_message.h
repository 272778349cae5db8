#pragma once
// What crosses a wafer's edge links between the wafer's time domain (cycles, on its own host
// thread) and the cluster's (SystemC picoseconds): chunks and credits, each stamped with the
// time it takes effect at the far end. A link's latency is the lookahead: a message is always
// stamped at least that far after the sender's present, so the cluster and its wafers can
// run a window of that length apart and exchange messages only at its boundaries (or, with
// a wafer in another process, serialise them).

#include <cstdint>
#include <vector>

#include "sim/picos.h"
#include "sim/stream/chunk.h"

namespace wafersim::platforms::edge {

struct EdgeMessage {
  enum class Kind : std::uint8_t { Chunk, Credit };
  sim::Picos at;  // takes effect at the receiving end then
  Kind kind = Kind::Chunk;
  std::uint32_t plane = 0;
  sim::stream::Chunk chunk;  // Kind::Chunk only
};

// Towards the wafer: weight chunks (at = arrival of their last byte at the wafer's edge) and
// gradient credits (at = usable by the wafer). Towards the cluster: weight credits (at = the
// slot frees in the cluster's buffer) and gradient chunks (at = the chunk starts on the
// cluster's side of the link). Each list is in the sender's order.
using EdgeMessages = std::vector<EdgeMessage>;

}  // namespace wafersim::platforms::edge
