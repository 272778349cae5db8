#include "sim/parallel/thread_use.h"

#include <algorithm>
#include <mutex>

#include "sim/parallel/row_bands.h"

namespace wafersim::sim::parallel {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

struct Registered {
  const Team* team;
  const RowBands* bands;
};

std::vector<Registered>& registry() {
  static std::vector<Registered> teams;
  return teams;
}

ThreadUse& gone() {
  static ThreadUse use;
  return use;
}

void add(ThreadUse& to, unsigned threads, std::uint64_t jobs, const std::vector<MemberTime>& times,
         std::uint64_t rebalances) {
  to.threads = std::max(to.threads, threads);
  to.jobs += jobs;
  to.rebalances += rebalances;
  if (to.members.size() < times.size()) to.members.resize(times.size());
  for (std::size_t m = 0; m < times.size(); ++m) {
    to.members[m].busy_ns += times[m].busy_ns;
    to.members[m].wait_ns += times[m].wait_ns;
    to.members[m].parts += times[m].parts;
  }
}

void add(ThreadUse& to, const Registered& r) {
  add(to, r.team->size(), r.team->jobs(), r.team->times(), r.bands ? r.bands->rebalances() : 0);
}

}  // namespace

TeamRegistration::TeamRegistration(const Team& team, const RowBands* bands) : team_(&team), bands_(bands) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().push_back({team_, bands_});
}

TeamRegistration::~TeamRegistration() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  add(gone(), Registered{team_, bands_});
  auto& teams = registry();
  teams.erase(std::remove_if(teams.begin(), teams.end(), [this](const Registered& r) { return r.team == team_; }),
              teams.end());
}

ThreadUse thread_use() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  ThreadUse use = gone();
  for (const Registered& r : registry()) add(use, r);
  return use;
}

void add_thread_use(const ThreadUse& use) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  add(gone(), use.threads, use.jobs, use.members, use.rebalances);
}

}  // namespace wafersim::sim::parallel
