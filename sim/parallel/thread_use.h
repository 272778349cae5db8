#pragma once
// The threads a run uses, for its run.json: the teams of this process register here (a
// wafer's team while the wafer lives, its times kept when it goes), and a command writing its
// run files reads the sum.
// Timing only: nothing here reaches the statistics, which are the same for every thread count.

#include <cstdint>
#include <vector>

#include "sim/parallel/team.h"

namespace wafersim::sim::parallel {

class RowBands;

struct ThreadUse {
  unsigned threads = 1;             // the largest team's size (1: no team)
  std::uint64_t jobs = 0;           // jobs run, over every team
  std::vector<MemberTime> members;  // per member index, summed over the teams
  std::uint64_t rebalances = 0;     // repartitions of the teams' bands
};

// The teams registered now and those gone since the process started (an untimed team adds
// its jobs only).
[[nodiscard]] ThreadUse thread_use();
// Adds the use of teams that ran elsewhere (a child process's wafer) to thread_use().
void add_thread_use(const ThreadUse& use);

// Registers `team` for thread_use() from construction to destruction, with the bands it
// sweeps (`bands`, optional, not owned; it must outlive the registration).
class TeamRegistration {
 public:
  explicit TeamRegistration(const Team& team, const RowBands* bands = nullptr);
  ~TeamRegistration();
  TeamRegistration(const TeamRegistration&) = delete;
  TeamRegistration& operator=(const TeamRegistration&) = delete;

 private:
  const Team* team_;
  const RowBands* bands_;
};

}  // namespace wafersim::sim::parallel
