#pragma once
// Ticks sim::Clocked components by hand, every cycle, without SystemC: for unit tests and
// benchmarks of the PE core (each cycle: every read, every evaluate, then every write).

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/engine/clocked.h"
#include "sim/types.h"

namespace wafersim::test {

class ManualEngine {
 public:
  void add(sim::Clocked* c) { components_.push_back(c); }
  // Ticks cycle `now()` and advances.
  void step() {
    for (auto* c : components_) c->read(now_);
    for (auto* c : components_) c->evaluate(now_);
    for (auto* c : components_) c->write(now_);
    now_ = now_ + sim::Cycle(1);
  }
  // Ticks until `idle()` holds after a cycle (or `limit` cycles); returns the cycles ticked.
  std::uint64_t run(const std::function<bool()>& idle, std::uint64_t limit = 10'000'000) {
    while (now_.count() < limit) {
      step();
      if (idle()) break;
    }
    return now_.count();
  }
  void run_to(sim::Cycle c) {
    while (now_ < c) step();
  }
  [[nodiscard]] sim::Cycle now() const { return now_; }

 private:
  std::vector<sim::Clocked*> components_;
  sim::Cycle now_{0};
};

}  // namespace wafersim::test
