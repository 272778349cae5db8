#include "sim/parallel/row_bands.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace wafersim::sim::parallel {
namespace {

// Jobs between two looks at the work (two jobs a cycle when both the mesh and the cores run):
// counted work is exact, so a short window follows a moving region; measured time carries the
// host's noise, and a longer window keeps it from moving the boundaries back and forth.
constexpr std::uint64_t kJobsPerLook = 128;
constexpr std::uint64_t kJobsPerTimedLook = 1024;
// Move the boundaries when the busiest band does this much more than the mean.
constexpr double kMoveAbove = 1.08;

// Restores the flag however the job ends.
class InParts {
 public:
  explicit InParts(bool& flag) : flag_(flag) { flag_ = true; }
  ~InParts() { flag_ = false; }
  InParts(const InParts&) = delete;
  InParts& operator=(const InParts&) = delete;

 private:
  bool& flag_;
};

}  // namespace

RowBands::RowBands(Team* team, std::uint32_t rows, std::uint32_t granule, std::uint32_t bands)
    : team_(team), granule_(granule ? granule : 1) {
  if (rows == 0) throw std::invalid_argument("RowBands: no rows");
  const std::uint32_t granules = (rows + granule_ - 1) / granule_;
  std::uint32_t n = std::max<std::uint32_t>(1, std::min(bands, granules));
  if (!team_ || team_->size() == 1) n = 1;
  first_.resize(n + 1);
  for (std::uint32_t b = 0; b < n; ++b)
    first_[b] = static_cast<std::uint32_t>(std::uint64_t{granules} * b / n) * granule_;
  first_[n] = rows;
  work_.resize(n);
  index_granules();
}

void RowBands::index_granules() {
  band_of_granule_.assign((rows() + granule_ - 1) / granule_, 0);
  for (std::uint32_t b = 0; b < count(); ++b)
    for (std::uint32_t g = first_[b] / granule_; g * granule_ < first_[b + 1]; ++g)
      band_of_granule_[g] = static_cast<std::uint16_t>(b);
}

void RowBands::remove_client(BandClient* client) {
  clients_.erase(std::remove(clients_.begin(), clients_.end(), client), clients_.end());
}

void RowBands::run(const std::function<void(std::size_t)>& fn) {
  {
    InParts guard(in_parts_);
    if (team_ && measure_ == BandMeasure::wall_time && count() > 1) {
      team_->run(count(), [this, &fn](std::size_t b) {
        const auto start = std::chrono::steady_clock::now();
        fn(b);
        work_[b].ns += static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
      });
    } else if (team_) {
      team_->run(count(), fn);
    } else {
      for (std::size_t b = 0; b < count(); ++b) fn(b);
    }
  }
  ++jobs_since_balance_;
  for (BandClient* c : clients_) c->joined();
}

bool RowBands::maybe_rebalance() {
  const std::uint64_t window = measure_ == BandMeasure::wall_time ? kJobsPerTimedLook : kJobsPerLook;
  if (!rebalance_ || count() < 2 || jobs_since_balance_ < window) return false;
  jobs_since_balance_ = 0;
  std::vector<std::uint64_t> work(count());
  for (std::uint32_t b = 0; b < count(); ++b) {
    work[b] = measure_ == BandMeasure::wall_time ? work_[b].ns : work_[b].units;
    work_[b] = Work{};
  }
  if (imbalance(work) < kMoveAbove) return false;
  std::vector<std::uint32_t> granules(first_.size());
  for (std::size_t b = 0; b + 1 < first_.size(); ++b) granules[b] = first_[b] / granule_;
  granules.back() = (rows() + granule_ - 1) / granule_;
  const std::vector<std::uint32_t> moved = balance_bands(granules, work);
  if (moved == granules) return false;
  std::vector<std::uint32_t> first(moved.size());
  for (std::size_t b = 0; b + 1 < moved.size(); ++b) first[b] = moved[b] * granule_;
  first.back() = rows();
  repartition(first);
  return true;
}

void RowBands::repartition(const std::vector<std::uint32_t>& first) {
  if (first.size() != first_.size() || first.front() != 0 || first.back() != rows())
    throw std::invalid_argument("RowBands::repartition: another band count or row count");
  for (std::size_t b = 0; b + 1 < first.size(); ++b)
    if (first[b] >= first[b + 1] || first[b] % granule_)
      throw std::invalid_argument("RowBands::repartition: bands must be ascending whole granules");
  if (in_parts_) throw std::logic_error("RowBands::repartition within a job");
  const std::vector<std::uint32_t> old = first_;
  first_ = first;
  index_granules();
  ++epoch_;
  ++rebalances_;
  for (BandClient* c : clients_) c->repartitioned(old);
}

}  // namespace wafersim::sim::parallel
