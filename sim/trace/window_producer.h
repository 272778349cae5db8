#pragma once
// A producer of windowed counters for the Recorder: the fabric's congestion windows
// (fabric/trace) and the PE cores' busy cycles and SRAM use (hw/trace).

#include <cstdint>

#include "sim/types.h"

namespace wafersim::sim::trace {

// Contract: the recorder closes windows in order. close_window(i, start, end) is called for
// a window in which something may have happened: the producer writes the counts of cycles
// [start, end) (usually the change of cumulative counters since the last close). Windows in
// which nothing can have happened (the engine did not tick) are announced together by
// skip_windows(first, count) instead, with count >= 1. windows_merged() says the window
// length just doubled: window 2i and 2i+1 are now window i (tables are merged by the
// recorder; producers merge what they keep themselves). finish() comes once, last, with the
// final number of windows; windows_needed() lets producers that fill windows ahead of time
// (links carrying a chunk) ask for more.
class WindowProducer {
 public:
  virtual ~WindowProducer() = default;
  virtual void close_window(std::uint64_t index, Cycle start, Cycle end) = 0;
  virtual void skip_windows(std::uint64_t /*first*/, std::uint64_t /*count*/) {}
  virtual void windows_merged() {}
  [[nodiscard]] virtual std::uint64_t windows_needed() const { return 0; }
  virtual void finish(std::uint64_t /*windows*/) {}
};

}  // namespace wafersim::sim::trace
