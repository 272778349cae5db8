#pragma once
// Tracing spliced into a run's module tree, only when the run asks for it (--trace): the
// recorder, the fabric's window samplers and router probes of each wafer, its PE cores'
// windows and task tracks, layer phases from the runtime, and the chunk-link
// tracer of the weight-streaming cluster; after the run, MemoryX's records and the per-step
// breakdown. docs/trace.md describes the files.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "energy/energy_windows.h"
#include "fabric/trace/mesh_windows.h"
#include "fabric/trace/router_probe.h"
#include "hw/trace/core_timeline.h"
#include "hw/trace/core_windows.h"
#include "platforms/cluster.h"
#include "platforms/edge_windows.h"
#include "platforms/step_timeline.h"
#include "platforms/wafer.h"
#include "sim/trace/link_tracer.h"
#include "sim/trace/recorder.h"

namespace wafersim::platforms {

class RunTrace {
 public:
  // Traces into options.out (default run_dir/trace). `expected_cycles` (0: unknown) sets the
  // window length when options.window_cycles is 0. Throws sim::InputError for a selection
  // outside the wafer or an option out of range.
  RunTrace(const sim::trace::TraceOptions& options, const std::filesystem::path& run_dir, const PlatformSpec& spec,
           std::uint64_t expected_cycles);
  ~RunTrace();
  RunTrace(const RunTrace&) = delete;
  RunTrace& operator=(const RunTrace&) = delete;

  // What the wafers must be built with (the per-link counters the windows read).
  void configure(BuildOptions& build) const;
  // Samples wafer `index`'s fabric (windows, timeline counters, router waveforms), its PE
  // cores (busy cycles by cause and SRAM per window; tasks and vector operations of the
  // --trace-pes on the timeline), whatever programs they run (hand-written or compiled), and
  // its energy (per region and window; its power on the timeline).
  void attach(Wafer& wafer, std::uint32_t index);
  // A layer phase of wafer `wafer` (e.g. "L3 forward") over cycles [start, end), called by
  // the runtime that drives compiled layers: a slice on the timeline's "wafer<N> layers"
  // process (overlapping phases spread over numbered tracks) and a row of phases.json.
  void phase(std::uint32_t wafer, std::string name, sim::Cycle start, sim::Cycle end, sim::trace::Args args = {});
  // Traces every chunk link of the cluster (MemoryX, SwarmX, wafer edges) and, co-simulated,
  // every wafer's edge endpoint (table edge-w<N>); its wafers are attached first.
  void attach(Cluster& cluster);
  // After the run: MemoryX's streams, gradients and updates and the steps on the timeline;
  // the per-step breakdown as steps.json.
  void record_steps(const Cluster& cluster, const StepTimeline& timeline);
  // Closes the windows at `end` cycles (or after the last cycle an attached wafer ticked, if
  // later: a run stopped inside a tick includes it) and writes every file; returns their names.
  std::vector<std::string> finish(sim::Cycle end);

  [[nodiscard]] sim::trace::Recorder& recorder() { return *recorder_; }
  [[nodiscard]] const std::filesystem::path& dir() const { return recorder_->dir(); }
  [[nodiscard]] bool by_color() const { return by_color_; }

 private:
  PlatformSpec spec_;
  bool by_color_;
  std::unique_ptr<sim::trace::Recorder> recorder_;
  std::vector<std::unique_ptr<fabric::trace::MeshWindowSampler>> samplers_;
  std::vector<std::unique_ptr<fabric::trace::RouterProbe>> probes_;
  std::vector<std::unique_ptr<hw::trace::CoreWindowSampler>> core_samplers_;
  std::vector<std::unique_ptr<energy::EnergyWindowSampler>> energy_samplers_;
  std::vector<std::unique_ptr<hw::trace::CoreTimeline>> core_timelines_;
  struct Phase {
    std::uint32_t wafer;
    std::string name;
    sim::Cycle start, end;
    sim::trace::Args args;
  };
  std::vector<Phase> phases_;
  std::unique_ptr<sim::trace::LinkTracer> links_;
  std::map<std::uint32_t, sim::trace::WindowSource*> sources_;  // by wafer (lookup only)
  std::vector<std::unique_ptr<EdgeWindowSampler>> edge_samplers_;
  std::vector<const sim::Engine*> engines_;
};

}  // namespace wafersim::platforms
