#pragma once
// An observer of the chunks a link sends (tracing): attached to a ChunkOutPort only when
// tracing is asked for.

#include "sim/picos.h"
#include "sim/stream/chunk.h"

namespace wafersim::sim::stream {

class ChunkOutPort;

// Contract: on_send runs inside the sender's process each time `port` starts a chunk, with
// the time its first byte leaves (`start`) and its last byte arrives (`end`). It must not
// change the link or the chunk.
class ChunkObserver {
 public:
  virtual ~ChunkObserver() = default;
  virtual void on_send(const ChunkOutPort& port, const ChunkInfo& chunk, Picos start, Picos end) = 0;
};

}  // namespace wafersim::sim::stream
