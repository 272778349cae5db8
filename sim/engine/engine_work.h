#pragma once
// The work the wafers' engines did in a run, for its run.json: what a run's wall time went to
// (cycles ticked, cores ticked, routers visited). A wafer registers a reader of its counters
// while it lives and its last reading is kept when it goes; a command writing its run files
// reads the sum.
// Timing only: nothing here reaches the statistics.

#include <cstdint>
#include <functional>

namespace wafersim::sim {

struct EngineWork {
  std::uint64_t cycles_ticked = 0;   // cycles in which an engine ran its components
  std::uint64_t cycles_skipped = 0;  // cycles an engine jumped over, nothing due in them
  std::uint64_t core_ticks = 0;      // PE cores ticked (Core::tick calls)
  std::uint64_t router_visits = 0;   // routers visited by the fabric's sweeps

  EngineWork& operator+=(const EngineWork& o);
};

// The readers registered now and the readings of those gone since the process started.
[[nodiscard]] EngineWork engine_work();
// Adds work done elsewhere (a child process's wafer) to engine_work().
void add_engine_work(const EngineWork& work);

// Registers `read` for engine_work() from construction to destruction; `read` must stay
// callable until then (it is called one last time by the destructor).
class WorkRegistration {
 public:
  explicit WorkRegistration(std::function<EngineWork()> read);
  ~WorkRegistration();
  WorkRegistration(const WorkRegistration&) = delete;
  WorkRegistration& operator=(const WorkRegistration&) = delete;

 private:
  std::function<EngineWork()> read_;
};

}  // namespace wafersim::sim
