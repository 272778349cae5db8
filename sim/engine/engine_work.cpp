#include "sim/engine/engine_work.h"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace wafersim::sim {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

std::vector<std::function<EngineWork()>*>& readers() {
  static std::vector<std::function<EngineWork()>*> r;
  return r;
}

EngineWork& gone() {
  static EngineWork work;
  return work;
}

}  // namespace

EngineWork& EngineWork::operator+=(const EngineWork& o) {
  cycles_ticked += o.cycles_ticked;
  cycles_skipped += o.cycles_skipped;
  core_ticks += o.core_ticks;
  router_visits += o.router_visits;
  return *this;
}

WorkRegistration::WorkRegistration(std::function<EngineWork()> read) : read_(std::move(read)) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  readers().push_back(&read_);
}

WorkRegistration::~WorkRegistration() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  gone() += read_();
  auto& r = readers();
  r.erase(std::remove(r.begin(), r.end(), &read_), r.end());
}

EngineWork engine_work() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  EngineWork work = gone();
  for (const auto* read : readers()) work += (*read)();
  return work;
}

void add_engine_work(const EngineWork& work) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  gone() += work;
}

}  // namespace wafersim::sim
