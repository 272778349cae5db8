#pragma once
// The output folder of a sweep and the state of its points, as any launcher sees it:
//   DIR/sweep.json          the plan: parameters, metrics, every point and its command line
//   DIR/points/NNNNN/       one folder per point (see point_runner.h)
//   DIR/results.csv, DIR/results.jsonl   the merged table (wafersim collect)
// A point is finished exactly when its folder holds the `done` marker, written last.

#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <string>

#include "sim/app/sweep/plan.h"

namespace wafersim::app::sweep {

// The status words of a point: ok, failed (non-zero exit), crashed (a signal), timeout.
inline constexpr const char* kStatusOk = "ok";

class SweepDir {
 public:
  explicit SweepDir(std::filesystem::path root) : root_(std::move(root)) {}
  [[nodiscard]] const std::filesystem::path& root() const { return root_; }
  [[nodiscard]] std::filesystem::path point(std::size_t index) const;
  [[nodiscard]] std::filesystem::path plan_file() const { return root_ / "sweep.json"; }

  // Creates the folder and writes sweep.json, or, when the folder already holds a sweep,
  // checks that it has the same points (throws sim::InputError otherwise: finished points
  // would be mixed with another sweep's). Metrics and timeout are refreshed.
  void prepare(const Plan& plan) const;
  // sweep.json; throws sim::InputError when missing or unreadable.
  [[nodiscard]] nlohmann::json read_plan() const;

  enum class State { Pending, Running, Done };
  struct PointState {
    State state = State::Pending;
    std::string status;  // for Done: ok, failed, crashed, timeout
  };
  // Pending also covers a point whose run was killed before finishing.
  [[nodiscard]] PointState state(std::size_t index) const;

 private:
  std::filesystem::path root_;
};

// True while some process holds the run lock of a point folder.
bool lock_held(const std::filesystem::path& point_dir);

}  // namespace wafersim::app::sweep
