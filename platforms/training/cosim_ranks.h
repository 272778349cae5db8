#pragma once
// The end of a co-simulated training run over ranks (platforms/cluster.h): every other rank
// sends rank 0 what its wafers' drivers computed and its statistics tree (its wafers' groups),
// which rank 0 adds to its own tree so that stats.json is the one-process run's.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "platforms/cluster.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms::training {

// What one wafer's driver computed.
struct WaferOutcome {
  bool finished = false;
  std::vector<double> losses;  // functional: per step
  std::uint64_t checked = 0;
};

// A rank other than 0: sends its wafers' outcomes (cluster.local_wafers(), in order), `stats`
// and its time to rank 0.
void send_outcomes(platforms::Cluster& cluster, const std::vector<WaferOutcome>& local, const sim::stats::Group& stats);

// Rank 0: receives every other rank's outcomes into `all` (per wafer of the cluster) and adds
// their statistics to `stats`. Returns run.json's "ranks": per rank its wafers, threads, busy
// and wait time and windows.
nlohmann::ordered_json gather_outcomes(platforms::Cluster& cluster, std::vector<WaferOutcome>& all,
                                       sim::stats::Group& stats);

}  // namespace wafersim::platforms::training
