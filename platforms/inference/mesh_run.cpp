#include "platforms/inference/mesh_run.h"

#include <fmt/format.h>

#include <systemc>

#include <algorithm>
#include <cstring>

#include "sim/errors.h"
#include "sim/run_loop.h"

namespace wafersim::platforms::inference {
using models::mesh::MeshStep;
using models::mesh::Region;

namespace {

hw::PeCoord at(const Region& g, std::uint32_t r, std::uint32_t c) {
  return hw::PeCoord{static_cast<std::uint16_t>(g.x0 + c), static_cast<std::uint16_t>(g.y0 + r)};
}

}  // namespace

std::vector<std::uint64_t> read_pe(Wafer& wafer, const Region& region, std::uint32_t r, std::uint32_t c,
                                   std::uint32_t addr, std::uint32_t n, std::uint32_t bytes) {
  std::vector<std::uint8_t> raw(std::size_t{n} * bytes);
  if (!raw.empty())
    wafer.cores().core(at(region, r, c)).sram().read(addr, raw.data(), static_cast<std::uint32_t>(raw.size()));
  std::vector<std::uint64_t> v(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t u = 0;
    std::memcpy(&u, raw.data() + std::size_t{i} * bytes, bytes);
    v[i] = u;
  }
  return v;
}

MeshRunResult run_mesh_decode(const models::mesh::MeshDecode& d, Wafer& wafer, const PeImage& image,
                              const StepDone& done, const sim::RunLimits& limits) {
  return run_mesh_steps(
      d.layout().region(), d.target(), d.steps().size(), [&](std::size_t i) { return d.step(i); }, wafer, image, done,
      limits);
}

MeshRunResult run_mesh_steps(const Region& g, const models::compiler::Target& target, std::size_t count,
                             const StepOf& step_of, Wafer& wafer, const PeImage& image, const StepDone& done,
                             const sim::RunLimits& limits) {
  auto& engine = wafer.engine();
  auto& cores = wafer.cores();
  if (g.x0 + g.columns > target.width() || g.y0 + g.rows > target.height())
    throw sim::InputError("mesh run: the region reaches beyond the wafer");
  if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
  if (image)
    for (std::uint32_t r = 0; r < g.rows; ++r)
      for (std::uint32_t c = 0; c < g.columns; ++c) {
        const std::vector<std::uint8_t> bytes = image(r, c);
        if (!bytes.empty())
          cores.core(at(g, r, c)).sram().write(0, bytes.data(), static_cast<std::uint32_t>(bytes.size()));
      }
  MeshRunResult result;
  result.start = std::max(engine.now(), engine.first_cycle_at_or_after(sc_core::sc_time_stamp())).count();
  result.end = result.start;
  for (std::size_t i = 0; i < count; ++i) {
    const MeshStep step = step_of(i);
    MeshStepResult s;
    s.name = step.name;
    s.kernel = step.kernel;
    s.layer = step.layer;
    s.bound = step.bound;
    s.flops = step.work.flops;
    s.start = result.end;
    const std::uint64_t busy0 = cores.total(&hw::CoreCounters::busy_cycles);
    for (std::uint32_t r = 0; r < g.rows; ++r)
      for (std::uint32_t c = 0; c < g.columns; ++c) cores.replace(at(g, r, c), step.program(r, c));
    try {
      sim::run_until_quiet(&engine, limits, fmt::format("step '{}'", step.name));
      if (engine.failed()) engine.rethrow_failure();
      cores.check();
      if (cores.busy_count() > 0) cores.check_finished();
    } catch (const sim::SimulationError& e) {
      throw sim::SimulationError(fmt::format("step '{}': {}", step.name, e.what()));
    }
    s.end = std::max(s.start, cores.finish_cycle());
    s.busy_pe_cycles = cores.total(&hw::CoreCounters::busy_cycles) - busy0;
    result.end = s.end;
    if (done) done(s);
    result.steps.push_back(std::move(s));
  }
  return result;
}

MeshSimulation::MeshSimulation(const PlatformSpec& spec, BuildOptions build, sim::stats::Group& root,
                               const models::mesh::MeshDecode& d, sim::RunLimits limits)
    : spec_(spec), d_(d), limits_(limits) {
  build.routes = d.routes();
  cluster_ = std::make_unique<Cluster>("cluster", spec, build, root);
}

MeshRunResult MeshSimulation::run_steps(std::size_t count, const StepOf& step, const PeImage& image,
                                        const StepDone& done) {
  return run_mesh_steps(d_.layout().region(), d_.target(), count, step, wafer(), image, done, limits_);
}

MeshRunResult MeshSimulation::run(const PeImage& image, const StepDone& done) {
  MeshRunResult r = run_mesh_decode(d_, wafer(), image, done, limits_);
  auto& g = wafer().stats().group("mesh");
  std::uint64_t bound = 0;
  for (const auto& s : r.steps) bound += s.bound.with_latency();
  g.formula(
      "steps", [v = static_cast<double>(r.steps.size())] { return v; }, "steps", "steps of the decode token");
  g.formula(
      "cycles", [v = static_cast<double>(r.cycles())] { return v; }, "cycles", "simulated cycles of the steps");
  g.formula(
      "bound_cycles", [v = static_cast<double>(bound)] { return v; }, "cycles",
      "the steps' bounds (roofline or the collectives' latency), summed");
  (void)spec_;
  return r;
}

}  // namespace wafersim::platforms::inference
