#pragma once
// Progress of a whole sweep on stderr: on a terminal one line redrawn in place (points done
// and failed, running, ETA); otherwise one plain line per finished point.

#include <chrono>
#include <cstddef>
#include <string>

namespace wafersim::app::sweep {

class SweepProgress {
 public:
  // `total` points, of which `finished_before` were finished by earlier runs.
  SweepProgress(std::string name, std::size_t total, std::size_t finished_before, bool terminal);
  ~SweepProgress();
  SweepProgress(const SweepProgress&) = delete;
  SweepProgress& operator=(const SweepProgress&) = delete;

  void set_running(std::size_t running);
  // Records a finished point; `detail` is its parameters (and, when it failed, why).
  void finished(std::size_t index, const std::string& status, double wall_seconds, const std::string& detail);
  // Redraws the bar (at most a few times a second unless `force`).
  void redraw(bool force = false);
  void finish();

  [[nodiscard]] std::size_t ok() const { return ok_; }
  [[nodiscard]] std::size_t failed() const { return failed_; }
  [[nodiscard]] double elapsed_seconds() const;

 private:
  [[nodiscard]] std::string line() const;
  std::string name_;
  std::size_t total_, before_;
  bool terminal_;
  std::size_t ok_ = 0, failed_ = 0, running_ = 0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace wafersim::app::sweep
