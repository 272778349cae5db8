#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace wafersim::sim::parallel {

// `--threads auto`, the default: every hardware thread when a wafer is large enough for its
// bands to gain, else one. A cycle's work on a small mesh is a few microseconds, less than
// the two barriers per cycle cost once a thread leaves its core (docs/parallel.md, "When
// threads pay"); a 128 x 128 mesh sweeps faster on 2 threads, a 32 x 32 one slower.
inline constexpr unsigned kAutoThreads = 0;
inline constexpr std::uint64_t kAutoThreadsMinPes = 128 * 128;

// The threads for a wafer of `pes` PEs: `requested` when it is not kAutoThreads; otherwise
// `hardware` threads from kAutoThreadsMinPes PEs up, one below.
[[nodiscard]] constexpr unsigned resolve_threads(unsigned requested, std::uint64_t pes, unsigned hardware) {
  if (requested != kAutoThreads) return requested;
  return pes >= kAutoThreadsMinPes && hardware > 1 ? hardware : 1;
}

// The threads for a co-simulated cluster whose process runs `wafers` wafers: `requested` when
// it is not kAutoThreads; otherwise one per wafer, at most `hardware`. Each wafer runs on one
// thread from one window exchange to the next (a job per window of the edge latency, not per
// cycle), so even 8 x 8 wafers gain (docs/parallel.md, "Speed").
[[nodiscard]] constexpr unsigned resolve_wafer_threads(unsigned requested, std::size_t wafers, unsigned hardware) {
  if (requested != kAutoThreads) return requested;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(hardware, wafers)));
}

}  // namespace wafersim::sim::parallel
