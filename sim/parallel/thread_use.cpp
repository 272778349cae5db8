#include "sim/parallel/thread_use.h"

#include <algorithm>
#include <mutex>

namespace wafersim::sim::parallel {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::vector<const Team*>& registry() {
  static std::vector<const Team*> teams;
  return teams;
}

ThreadUse& gone() {
  static ThreadUse use;
  return use;
}

void add(ThreadUse& to, unsigned threads, std::uint64_t jobs, const std::vector<MemberTime>& times) {
  to.threads = std::max(to.threads, threads);
  to.jobs += jobs;
  if (to.members.size() < times.size()) to.members.resize(times.size());
  for (std::size_t m = 0; m < times.size(); ++m) {
    to.members[m].busy_ns += times[m].busy_ns;
    to.members[m].wait_ns += times[m].wait_ns;
    to.members[m].parts += times[m].parts;
  }
}

}  // namespace

TeamRegistration::TeamRegistration(const Team& team) : team_(&team) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().push_back(team_);
}

TeamRegistration::~TeamRegistration() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  add(gone(), team_->size(), team_->jobs(), team_->times());
  auto& teams = registry();
  teams.erase(std::remove(teams.begin(), teams.end(), team_), teams.end());
}

ThreadUse thread_use() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  ThreadUse use = gone();
  for (const Team* team : registry()) add(use, team->size(), team->jobs(), team->times());
  return use;
}

void add_thread_use(const ThreadUse& use) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  add(gone(), use.threads, use.jobs, use.members);
}

}  // namespace wafersim::sim::parallel
