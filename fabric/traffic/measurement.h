#pragma once
// Measurement of a synthetic-traffic run: offered and accepted load over the measurement
// window and the latency of the packets created in it (creation to ejection of the tail).

#include <cstdint>

#include "sim/stats/stats.h"

namespace wafersim::fabric::traffic {

// The outcome of one run at one offered load.
struct TrafficResult {
  double rate = 0;         // requested offered load (wavelets/source/cycle)
  double offered = 0;      // wavelets created in the window / (sources x window)
  double accepted = 0;     // wavelets ejected in the window / (routers x window)
  double latency_avg = 0;  // cycles, over measured packets delivered
  std::uint64_t latency_min = 0, latency_p50 = 0, latency_p99 = 0, latency_max = 0;
  std::uint64_t packets = 0;      // measured packets delivered
  std::uint64_t cycles = 0;       // cycles simulated
  bool drained = false;           // every measured packet was delivered within the drain limit
  std::uint64_t undelivered = 0;  // measured packets (static routes: wavelets) not delivered
};

// Counts for the window [start, end) and the latency histogram.
class Measurement {
 public:
  Measurement(std::uint64_t start, std::uint64_t end, std::uint32_t sources, std::uint32_t routers)
      : start_(start), end_(end), sources_(sources), routers_(routers), latency_(1, 1 << 16) {}

  [[nodiscard]] bool in_window(std::uint64_t cycle) const { return cycle >= start_ && cycle < end_; }
  [[nodiscard]] std::uint64_t window_end() const { return end_; }
  void created(std::uint64_t cycle, std::uint64_t wavelets) {
    if (in_window(cycle)) created_ += wavelets;
  }
  void ejected(std::uint64_t cycle) {
    if (in_window(cycle)) ++ejected_;
  }
  void latency(std::uint64_t cycles) { latency_.add(cycles); }

  [[nodiscard]] double offered() const;
  [[nodiscard]] double accepted() const;
  [[nodiscard]] const sim::stats::Histogram& latencies() const { return latency_; }
  // Fills the load and latency fields of `r`.
  void fill(TrafficResult& r) const;

 private:
  std::uint64_t start_, end_;
  std::uint32_t sources_, routers_;
  std::uint64_t created_ = 0, ejected_ = 0;
  sim::stats::Histogram latency_;
};

}  // namespace wafersim::fabric::traffic
