#pragma once
// A wafer's rows split into bands, the unit of work of the parallel engine: the mesh and the
// core array of one wafer sweep each band as one part of a Team job, inside their own read /
// evaluate / write phases (design.md, "Parallel, and still exact"). Bands hold whole granules
// of rows (the mesh's tiles of router state), follow the work of their parts (a moving busy
// region is rebalanced, see sim/parallel/balance.h), and never change a result: which rows a
// band holds decides only which thread sweeps them. The work is either the units the parts
// report (deterministic, for tests) or the parts' measured wall time (what a run balances:
// it sees every cost, also those the units leave out, and a slower host core).
//
// Contract for components: within RowBands::run a part may write only the state of its own
// band's rows (and what it stages for the join); everything shared is folded in by the clients'
// joined() on the caller's thread, in band order. The partition changes only at
// maybe_rebalance(), which components call at serial points; clients then move whatever they
// keep per band (repartitioned()).

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/parallel/balance.h"
#include "sim/parallel/team.h"

namespace wafersim::sim::parallel {

class BandClient {
 public:
  virtual ~BandClient() = default;
  // A job of RowBands::run ended: fold what the parts staged (on the caller's thread).
  virtual void joined() = 0;
  // The partition changed; `old_first` holds the first row of each band before the change
  // (and the row count last). Called at a serial point, never within a job.
  virtual void repartitioned(const std::vector<std::uint32_t>& old_first) = 0;
};

// What maybe_rebalance weighs the bands by.
enum class BandMeasure : std::uint8_t {
  work_units,  // the units of add_work (the cost model of balance.h)
  wall_time,   // each part's steady-clock time, summed per band
};

class RowBands {
 public:
  // `rows` rows in at most `bands` bands of whole `granule`-row granules (fewer when the rows
  // are too few), run on `team` (not owned; null: one band on the caller's thread).
  RowBands(Team* team, std::uint32_t rows, std::uint32_t granule, std::uint32_t bands);

  [[nodiscard]] std::uint32_t count() const { return static_cast<std::uint32_t>(first_.size() - 1); }
  // More than one band: components sweep by bands and stage what the parts share.
  [[nodiscard]] bool parallel() const { return count() > 1; }
  [[nodiscard]] std::uint32_t rows() const { return first_.back(); }
  [[nodiscard]] std::uint32_t granule() const { return granule_; }
  [[nodiscard]] std::uint32_t first_row(std::uint32_t band) const { return first_[band]; }
  [[nodiscard]] std::uint32_t end_row(std::uint32_t band) const { return first_[band + 1]; }
  [[nodiscard]] std::uint32_t band_of_row(std::uint32_t row) const { return band_of_granule_[row / granule_]; }
  // The first row of each band, and the row count last.
  [[nodiscard]] const std::vector<std::uint32_t>& firsts() const { return first_; }
  // Whether a job of run() is under way (a component called from a part stages its effects).
  [[nodiscard]] bool in_parts() const { return in_parts_; }
  // Changes each time the partition does.
  [[nodiscard]] std::uint64_t epoch() const { return epoch_; }

  // Runs fn(band) for every band on the team, then every client's joined(). Not reentrant.
  void run(const std::function<void(std::size_t)>& fn);
  // Clients are told of joins and repartitions in registration order. Not owned.
  void add_client(BandClient* client) { clients_.push_back(client); }
  void remove_client(BandClient* client);

  // Work a part did in its band (in units of the cost model: see balance.h); read only by
  // maybe_rebalance under BandMeasure::work_units, so it changes the partition and nothing else.
  void add_work(std::uint32_t band, std::uint64_t units) { work_[band].units += units; }
  // work_units (the default) or wall_time; takes effect from the next look at the work.
  void set_measure(BandMeasure measure) { measure_ = measure; }
  // Rebalancing on (the default) or off (the partition stays as built).
  void set_rebalance(bool on) { rebalance_ = on; }
  // At a serial point: every so many jobs, moves band boundaries towards equal work
  // (balance.h) and tells the clients. Returns whether the partition changed.
  bool maybe_rebalance();
  // Sets the partition (first row of each band, ascending granule multiples, the row count
  // last) and tells the clients: for tests and for a run that knows its busy region.
  void repartition(const std::vector<std::uint32_t>& first);
  // Repartitions done so far.
  [[nodiscard]] std::uint64_t rebalances() const { return rebalances_; }

 private:
  struct alignas(64) Work {
    std::uint64_t units = 0;
    std::uint64_t ns = 0;
  };
  void index_granules();

  Team* team_;
  std::uint32_t granule_;
  std::vector<std::uint32_t> first_;
  std::vector<std::uint16_t> band_of_granule_;
  std::vector<Work> work_;
  std::vector<BandClient*> clients_;
  bool in_parts_ = false;
  bool rebalance_ = true;
  BandMeasure measure_ = BandMeasure::work_units;
  std::uint64_t epoch_ = 0;
  std::uint64_t jobs_since_balance_ = 0;
  std::uint64_t rebalances_ = 0;
};

}  // namespace wafersim::sim::parallel
