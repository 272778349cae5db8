#pragma once
// A fixed team of host threads that runs the parts of one job at a time (fork-join), for the
// parallel engine: the bands of a wafer within a cycle's phase, the wafers of a cluster within
// a window. The caller's thread takes part, so a team of N runs N parts at once with N - 1
// threads of its own. Part p always runs on member p % N (a band stays on its thread and in
// its caches). Waiting threads spin briefly, then yield, then sleep, so a team larger than the
// machine's cores is slow but correct.
//
// Contract for users: the parts of one job must touch disjoint state (or only read shared
// state); everything a part writes is visible to the caller when run() returns, and
// everything the caller wrote before run() is visible to every part.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace wafersim::sim::parallel {

// Time a member of the team spent, in nanoseconds (when timing is on).
struct MemberTime {
  std::uint64_t busy_ns = 0;  // running parts
  std::uint64_t wait_ns = 0;  // from the end of its parts to the end of the job (the barrier)
  std::uint64_t parts = 0;    // parts run
};

class Team {
 public:
  // `threads` >= 1 (1: run() is a plain loop on the caller's thread). `timed`: keep
  // MemberTime per member (a few clock reads per job and member).
  explicit Team(unsigned threads, bool timed = false);
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  [[nodiscard]] unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Runs fn(part) once for every part in [0, parts), part p on member p % size(), and returns
  // when all have finished. When parts throw, the others still run and the exception of the
  // lowest-numbered failing part is rethrown here. Not reentrant: fn must not call run() on
  // this team.
  void run(std::size_t parts, const std::function<void(std::size_t)>& fn);

  // Per member (0: the caller's thread), summed over every job since construction.
  [[nodiscard]] const std::vector<MemberTime>& times() const { return times_; }
  // Jobs run.
  [[nodiscard]] std::uint64_t jobs() const { return jobs_; }

  // The host's hardware threads (at least 1).
  static unsigned hardware_threads();

 private:
  struct alignas(64) Slot {  // one member's end of its parts in the current job
    std::uint64_t end_ns = 0;
  };
  void worker(unsigned member);
  void run_parts(unsigned member, std::size_t parts, const std::function<void(std::size_t)>& fn);
  void record_failure(std::size_t part);

  std::vector<std::thread> workers_;
  std::vector<MemberTime> times_;
  std::vector<Slot> slots_;
  bool timed_;
  unsigned spins_;  // before yielding: none when the team has more members than the host has threads
  std::uint64_t jobs_ = 0;

  // The job: written by the caller before generation_ moves on (release), read by each worker
  // after it sees the new generation (acquire); not written again before every worker has
  // checked in (checked_in_, release / acquire).
  const std::function<void(std::size_t)>* fn_ = nullptr;
  std::size_t parts_ = 0;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<unsigned> checked_in_{0};
  std::atomic<bool> stop_{false};
  std::atomic<unsigned> sleepers_{0};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;

  std::mutex failure_mutex_;
  std::exception_ptr failure_;
  std::size_t failure_part_ = 0;
};

}  // namespace wafersim::sim::parallel
