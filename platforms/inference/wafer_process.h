#pragma once
// A wafer's simulation in a process of its own: forked, built, run and freed there, its result
// and its statistics copied back through a pipe, so one run simulates several wafers in turn
// with the memory of one (SystemC builds no module once a simulation has started, and frees
// none, in a process).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "platforms/inference/mesh_run.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms::inference {

// Bytes written by the child and read by the parent, in order.
class Wire {
 public:
  Wire() = default;
  explicit Wire(std::string bytes) : bytes_(std::move(bytes)) {}
  void u64(std::uint64_t v);
  void f64(double v);
  void str(const std::string& v);
  [[nodiscard]] std::uint64_t u64();
  [[nodiscard]] double f64();
  [[nodiscard]] std::string str();
  [[nodiscard]] const std::string& bytes() const { return bytes_; }

 private:
  void take(void* p, std::size_t n);
  std::string bytes_;
  std::size_t at_ = 0;
};

// A step's bound, and a step, through the pipe (read back in the order written).
void put(Wire& w, const models::mesh::StepBound& b);
models::mesh::StepBound get_bound(Wire& w);
void put(Wire& w, const MeshStepResult& s);
MeshStepResult get_step(Wire& w);

// The statistics under `g` (groups, scalars and vectors as their values, distributions), and
// their copies under `into`; the copied distributions' histograms are kept in `keep`.
void put(Wire& w, const sim::stats::Group& g);
void get_stats(Wire& w, sim::stats::Group& into, std::vector<std::unique_ptr<sim::stats::Histogram>>& keep);

// Runs `work` in a forked child (sim::run_in_child_text: its errors, signals and interrupts
// as there) and returns the bytes it wrote.
// Contract: no SystemC simulation has started in this process.
Wire in_child(const std::function<void(Wire&)>& work);

}  // namespace wafersim::platforms::inference
