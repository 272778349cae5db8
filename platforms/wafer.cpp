#include "platforms/wafer.h"

#include "platforms/memory_estimate.h"
#include "sim/parallel/thread_policy.h"

namespace wafersim::platforms {

namespace {

// `spec`, once its estimated host memory is known to fit.
const PlatformSpec& fitting(const PlatformSpec& spec, const BuildOptions& options) {
  check_memory(estimate_memory(spec, Workload{options.synthetic_traffic, 1}), options.max_memory);
  return spec;
}

}  // namespace

Wafer::Wafer(const sc_core::sc_module_name& name, const PlatformSpec& spec, const BuildOptions& options,
             sim::stats::Group& stats, std::uint32_t index)
    : sc_core::sc_module(name),
      spec_(fitting(spec, options)),
      remap_(spec.defects.any() ? std::optional<fabric::defects::WaferRemap>(fabric::defects::remap_wafer(
                                      spec.physical_array(), spec.redundancy, spec.defects, index))
                                : std::nullopt),
      engine_("engine", sim::EngineOptions{spec.wafer.clock, options.idle_skip, options.max_cycles, options.driven}),
      cores_(std::string(basename()) + ".cores", spec.wafer,
             hw::CoreArrayOptions{spec.fabric.colors, options.idle_skip, options.timing_only}),
      host_("host", cores_, engine_) {
  auto& g = stats.group(basename());
  stats_ = &g;
  const unsigned threads = sim::parallel::resolve_threads(
      options.threads, std::uint64_t{spec.wafer.width} * spec.wafer.height, sim::parallel::Team::hardware_threads());
  if (threads > 1) team_ = std::make_unique<sim::parallel::Team>(threads, true);
  bands_ = std::make_unique<sim::parallel::RowBands>(team_.get(), spec.wafer.height, fabric::Mesh::kBandRows, threads);
  bands_->set_measure(sim::parallel::BandMeasure::wall_time);
  if (team_) registration_ = std::make_unique<sim::parallel::TeamRegistration>(*team_, bands_.get());
  fabric::MeshOptions mesh_options;
  mesh_options.bands = bands_.get();
  mesh_options.routing = options.routing;
  mesh_options.routes = options.routes;
  mesh_options.trace_counters = options.trace_counters;
  mesh_options.traffic = options.traffic;
  if (remap_) mesh_options.link_delays = remap_->delays.get();
  mesh_ = std::make_unique<fabric::Mesh>(
      spec.fabric, fabric::MeshGeometry(spec.wafer.width, spec.wafer.height, spec.fabric.edge_io_channels),
      mesh_options, &engine_);
  if (!options.failures.empty()) {
    std::vector<fabric::Outage> outages;
    for (const FailureSpec& f : options.failures) outages.push_back(to_outage(f, mesh_->geometry()));
    mesh_->set_outages(std::move(outages), spec.redundancy.reroute);
  }
  // Each core sits on its router's ramp; arrivals and returned credits wake sleeping cores.
  cores_.set_engine(&engine_);
  cores_.set_bands(bands_.get());
  engine_.add(&cores_);
  cores_.connect([this](hw::PeCoord pe) { return &mesh_->ramp(pe); });
  mesh_->set_arrival_listener(&cores_);
  g.formula(
      "pe_count", [this] { return static_cast<double>(spec_.wafer.pe_count()); }, "PEs",
      "processing elements on this wafer", true);
  g.formula(
      "cycles",
      [this] { return static_cast<double>(engine_.first_cycle_at_or_after(sc_core::sc_time_stamp()).count()); },
      "cycles", "cycles simulated on this wafer's clock", true);
  mesh_->add_stats(g.group("fabric"));
  if (remap_) fabric::defects::add_stats(g.group("defects"), *remap_);
  cores_.add_stats(g);
  work_ = std::make_unique<sim::WorkRegistration>([this] {
    sim::EngineWork w;
    w.cycles_ticked = engine_.engine_ticks();
    w.cycles_skipped = engine_.cycles_skipped();
    w.core_ticks = cores_.core_ticks();
    w.router_visits = mesh_->router_evaluations();
    return w;
  });
}

}  // namespace wafersim::platforms
