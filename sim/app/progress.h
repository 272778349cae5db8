#pragma once
// Progress of a long run on a terminal: cycles simulated, rate and ETA, redrawn in place
// a few times a second on stderr; silent when stderr is not a terminal.

#include <chrono>
#include <cstdint>
#include <string>

#include "sim/run_loop.h"

namespace wafersim::app {

class Progress final : public sim::ProgressSink {
 public:
  // `total` is the expected number of units (0 when unknown: no ETA); `unit` e.g. "cycles".
  Progress(std::string label, std::uint64_t total, std::string unit, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(std::uint64_t done) override;
  void set_total(std::uint64_t total) { total_ = total; }
  void finish() override;
  [[nodiscard]] double elapsed_seconds() const;
  [[nodiscard]] bool enabled() const { return enabled_; }

  // True when stderr is a terminal and WAFERSIM_NO_PROGRESS is unset.
  static bool terminal();

 private:
  std::string label_, unit_;
  std::uint64_t total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace wafersim::app
