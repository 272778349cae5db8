#pragma once
// What the simulation benchmarks share: clocks, peak memory, and the guard that keeps each
// benchmark in a process of its own (SystemC elaborates once per process).

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <ctime>

namespace wafersim::bench {

// Seconds on `clock` (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC).
inline double clock_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// CPU seconds of this process: on a shared machine wall time also counts the other processes.
inline double cpu_seconds() { return clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }
inline double wall_seconds() { return clock_seconds(CLOCK_MONOTONIC); }

inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1e3;
}

// False (and the benchmark skipped with the reason) for every benchmark after the first.
inline bool first_in_process(benchmark::State& state) {
  static bool elaborated = false;
  if (!elaborated) return elaborated = true;
  state.SkipWithError("SystemC elaborates once per process: run one benchmark per process (scripts/bench)");
  for (auto _ : state) {
  }
  return false;
}

}  // namespace wafersim::bench
