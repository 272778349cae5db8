#pragma once
// Runs a compiled model on one simulated wafer, step by step: the host loads the inputs
// through the wafer's TLM socket, each layer program is loaded onto the PEs, the edge
// driver streams its weights in and its gradients out, and, in functional mode, every
// result is read back (untimed) and compared with the host's expectation.

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/core/stall.h"
#include "models/compiler/compiled_model.h"
#include "platforms/runtime/edge_driver.h"
#include "platforms/runtime/host_data.h"
#include "platforms/runtime/host_link.h"
#include "platforms/runtime/step_activity.h"
#include "platforms/wafer.h"
#include "sim/stats/stats.h"

namespace wafersim::platforms::runtime {

// Advances SystemC time over an input load of `load` (Executor::load_inputs), or up to the
// engine's cycle limit `limit` (Cycle::never(): none), throwing sim::LimitReached, when the
// load would pass it; `where` (optional) names the run in the message.
void advance_load(const sim::Engine& engine, const sc_core::sc_time& load, sim::Cycle limit,
                  const std::string& where = {});

// One comparison of a result with the host's expectation.
struct Check {
  std::string what;       // the tensor or gradient compared
  std::string reference;  // "pe-order" (bit-exact) or a reference library with a tolerance
  bool exact = true;      // bit-for-bit; else within `tolerance`
  std::uint64_t compared = 0, mismatches = 0;
  double max_abs_error = 0, tolerance = 0;
  std::string first_mismatch;
  std::optional<double> value;  // a scalar the check reports (the loss)
  [[nodiscard]] bool passed() const { return mismatches == 0; }
};

struct StepResult {
  std::string layer;
  models::compiler::Phase phase = models::compiler::Phase::Forward;
  models::LayerKind kind = models::LayerKind::Linear;
  std::uint64_t start = 0, end = 0;  // cycles [start, end)
  std::uint64_t flops = 0;           // the layer's useful FLOPs (the model's count)
  std::uint64_t executed_flops = 0;  // FLOPs the PEs executed (partial-sum adds included)
  models::compiler::Bound bound;
  std::array<std::uint64_t, hw::kStallCauses> stalls{};
  std::uint64_t wavelets_in = 0, wavelets_out = 0;  // through the edge
  Activity activity;                                // the wafer counters' change (step_activity.h)
  std::vector<Check> checks;
  bool simulated = true;  // false: planned without code (CompileOptions::plan_missing_code), not run
  [[nodiscard]] std::uint64_t cycles() const { return end - start; }
  [[nodiscard]] std::string name() const { return layer + " " + models::compiler::to_string(phase); }
};

struct ExecOptions {
  bool check = true;  // functional mode: compare every result
  // In-streams name the host tensor element of each wavelet (edge::WaveletRef) instead of
  // carrying its value: for an edge that receives the weights while the program runs.
  bool stream_refs = false;
};

// Contract: construct during elaboration (it binds its TLM initiator to the wafer's host
// socket and registers the edge driver with the wafer's engine). Then: load_inputs(); for
// each step i: start(i), run the simulation until nothing is pending, finish(i). finish()
// throws sim::SimulationError when a PE is still busy or a stream is incomplete (a
// deadlock), naming them.
class Executor {
 public:
  // `edge` serves the programs' edge streams (not owned; null: a host edge driver of its own).
  Executor(const models::compiler::CompiledModel& cm, platforms::Wafer& wafer, HostData data, ExecOptions options = {},
           edge::EdgeStreams* edge = nullptr);

  // Writes the model inputs (and gradient seeds) into the PEs' SRAM through the TLM socket;
  // returns the host's access time of these writes, which the run spends before the next step.
  sc_core::sc_time load_inputs();
  // Continues on the same wafer (the same routes) with another compiled model whose programs
  // use what the previous one left in SRAM (a prefill's keys and values, resident weights):
  // its steps are numbered from 0 again and their results follow the previous ones in
  // results(); load_inputs() then writes `data`'s preload.
  void continue_with(const models::compiler::CompiledModel& cm, HostData data);
  [[nodiscard]] std::size_t steps() const { return cm_->programs.size(); }
  // False for a step compiled without code (CompileOptions::plan_missing_code): start() and
  // finish() record it with no cycles and the run has nothing to simulate.
  [[nodiscard]] bool has_code(std::size_t step) const { return !cm_->programs.at(step).code.empty(); }
  void start(std::size_t step);
  const StepResult& finish(std::size_t step);
  [[nodiscard]] const std::deque<StepResult>& results() const { return results_; }
  [[nodiscard]] const HostData& data() const { return data_; }
  // The host data to change between steps (the next batch, the gradients' reset); the weights'
  // host tensors are where a streaming edge writes what it receives.
  [[nodiscard]] HostData& data() { return data_; }
  // A tensor as it is now in the PEs' SRAM, in token-major order (read untimed).
  Bits read(std::uint32_t tensor) { return gather(tensor); }
  // Per-step statistics under `g` (one group per step of the current model, in order).
  void add_stats(sim::stats::Group& g);

 private:
  Bits gather(std::uint32_t tensor);
  std::vector<Check> check_step(std::size_t step);
  std::vector<Check> check_norm(std::size_t step, const models::LayerSpec& layer);
  std::vector<Check> check_cross_entropy(std::size_t step, const models::LayerSpec& layer);

  const models::compiler::CompiledModel* cm_;  // the model whose steps run now (continue_with)
  platforms::Wafer& wafer_;
  HostData data_;
  ExecOptions options_;
  HostLink link_;
  std::unique_ptr<EdgeDriver> own_driver_;
  edge::EdgeStreams& driver_;
  std::deque<StepResult> results_;
  std::size_t first_result_ = 0;          // index in results_ of the current model's step 0
  std::map<std::uint32_t, Bits> before_;  // tensors the current step reads, as it starts
  std::vector<Bits> step_streams_;        // what the current step's out-streams delivered, per host tensor
  std::uint64_t flops_at_start_ = 0;
  std::array<std::uint64_t, hw::kStallCauses> stalls_at_start_{};
  std::uint64_t sent_at_start_ = 0, received_at_start_ = 0;
  Activity activity_at_start_;
};

}  // namespace wafersim::platforms::runtime
