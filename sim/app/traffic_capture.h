#pragma once
// `wafersim traffic --capture FILE` and `--replay FILE`: the packets a run created, recorded in
// the injection-trace format (fabric/traffic/injection_trace.h), and injected again at the
// same cycles into a run of the same mesh (docs/replay.md).

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "fabric/geometry.h"
#include "fabric/traffic/generator.h"
#include "fabric/traffic/injection_trace.h"
#include "platforms/platform_spec.h"

namespace wafersim::app {

struct InjectionArgs {
  std::string capture, replay;
  void add(CLI::App& cmd);
  // The replayed trace, checked against the platform's mesh (null without --replay).
  // Throws sim::InputError naming the file for a bad file or another mesh.
  [[nodiscard]] std::shared_ptr<const fabric::traffic::InjectionTrace> load_replay(
      const platforms::PlatformSpec& spec) const;
};

// The traffic options of a replay: no random traffic, the trace's colors, and one measurement
// window from cycle 0 to the trace's end cycle with no drain after it, so the generator stops
// at the top of that cycle as the recorded run's did (every replayed packet is measured).
fabric::traffic::TrafficOptions replay_options(fabric::traffic::TrafficOptions o,
                                               const fabric::traffic::InjectionTrace& trace);

// Schedules every record of `trace` on `gen` (before the run starts).
void schedule_replay(fabric::traffic::TrafficGenerator& gen, const fabric::traffic::InjectionTrace& trace);

// Records into `into` every packet `gen` creates (its mesh and colors filled in now; the end
// cycle is the caller's after the run).
void start_capture(fabric::traffic::TrafficGenerator& gen, const fabric::MeshGeometry& geometry, std::uint32_t colors,
                   fabric::traffic::InjectionTrace& into);

}  // namespace wafersim::app
