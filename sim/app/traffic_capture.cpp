#include "sim/app/traffic_capture.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/errors.h"

namespace wafersim::app {

using fabric::traffic::InjectionTrace;

void InjectionArgs::add(CLI::App& cmd) {
  cmd.add_option("--capture", capture,
                 "record every packet the run creates (cycle, source, destination, size) into FILE, the format "
                 "--replay reads (docs/replay.md)")
      ->type_name("FILE");
  cmd.add_option("--replay", replay,
                 "inject the packets recorded in FILE (by --capture, or written by hand) at their cycles instead of "
                 "random traffic; the run stops at the file's end_cycle")
      ->type_name("FILE");
}

std::shared_ptr<const InjectionTrace> InjectionArgs::load_replay(const platforms::PlatformSpec& spec) const {
  if (replay.empty()) return nullptr;
  auto t = std::make_shared<InjectionTrace>(fabric::traffic::read_injection_trace(replay));
  if (t->width != spec.wafer.width || t->height != spec.wafer.height)
    throw sim::InputError(fmt::format("--replay {}: recorded on a {} x {} mesh; platform '{}' has {} x {}", replay,
                                      t->width, t->height, spec.name, spec.wafer.width, spec.wafer.height));
  if (t->colors == 0 || t->colors > spec.fabric.colors)
    throw sim::InputError(
        fmt::format("--replay {}: {} colors; platform '{}' has {}", replay, t->colors, spec.name, spec.fabric.colors));
  return t;
}

fabric::traffic::TrafficOptions replay_options(fabric::traffic::TrafficOptions o, const InjectionTrace& trace) {
  o.rate = 0;
  o.colors = trace.colors;
  o.warmup = 0;
  o.measure = std::max<std::uint64_t>(1, trace.end_cycle);
  o.drain = 0;
  return o;
}

void schedule_replay(fabric::traffic::TrafficGenerator& gen, const InjectionTrace& trace) {
  for (const auto& r : trace.records) gen.add_packet(r.src, r.dst, r.size, sim::Cycle(r.cycle));
}

void start_capture(fabric::traffic::TrafficGenerator& gen, const fabric::MeshGeometry& geometry, std::uint32_t colors,
                   InjectionTrace& into) {
  into.width = geometry.width();
  into.height = geometry.height();
  into.colors = colors;
  into.records.clear();
  gen.set_creation_observer(
      [&into, geometry](std::uint64_t at, std::uint32_t src, std::uint32_t dst, std::uint32_t size) {
        into.records.push_back({at, geometry.coord(src), geometry.coord(dst), size});
      });
}

}  // namespace wafersim::app
