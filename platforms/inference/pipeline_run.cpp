#include "platforms/inference/pipeline_run.h"

#include <fmt/format.h>

#include <systemc>

#include <algorithm>
#include <cstring>

#include "hw/numerics/dtype.h"
#include "models/compiler/compiled_model.h"
#include "models/resident/pipeline_expect.h"

namespace wafersim::platforms::inference {
namespace compiler = models::compiler;
using hw::DType;
using models::resident::PipelineStage;

PipelineResult run_pipeline(const PipelineProgram& p, Wafer& wafer, bool check, const sim::RunLimits& limits) {
  auto& engine = wafer.engine();
  auto& cores = wafer.cores();
  PipelineResult r;
  if (sc_core::sc_get_status() == sc_core::SC_ELABORATION) sc_core::sc_start(sc_core::SC_ZERO_TIME);
  r.start = std::max(engine.now(), engine.first_cycle_at_or_after(sc_core::sc_time_stamp())).count();
  const std::uint64_t flops0 = cores.total(&hw::CoreCounters::flops);
  const PipelineStage& s = p.stages.back();
  const DType dt = compiler::hw_dtype(p.model.dtype);
  const std::uint32_t esz = hw::size_of(dt);
  r.output.assign(p.tokens * s.f_out, 0);
  r.end = r.start;
  for (std::size_t phase = 0; phase < p.phases.size(); ++phase) {
    const auto& ph = p.phases[phase];
    // Each phase's programs once the one before has finished (the host feeds the next tokens).
    const std::uint64_t at = r.end;
    for (const auto& pl : ph.code) cores.replace(hw::PeCoord{pl.x0, pl.y0}, pl.program);
    sim::run_until_quiet(&engine, limits, fmt::format("phase {} of {}", phase + 1, p.phases.size()));
    if (engine.failed()) engine.rethrow_failure();
    cores.check();
    if (cores.busy_count() > 0) cores.check_finished();
    r.end = std::max(at, cores.finish_cycle());
    r.phase_cycles.push_back(r.end - at);
    // The last stage's outputs of the phase's tokens.
    for (std::uint32_t band = 0; band < p.replicas; ++band) {
      const std::vector<std::uint64_t> list = p.band_tokens(phase, band);
      for (std::uint32_t y = 0; y < s.rows; ++y) {
        if (!models::resident::row_rounds(p.cut, s, y)) continue;
        const compiler::Span o = models::resident::row_outputs(p.cut, s, y);
        const hw::PeCoord pe{static_cast<std::uint16_t>(s.x), static_cast<std::uint16_t>(band * s.rows + y)};
        std::vector<std::uint8_t> bytes(list.size() * o.size() * esz);
        cores.core(pe).sram().read(p.out_addr, bytes.data(), static_cast<std::uint32_t>(bytes.size()));
        for (std::size_t j = 0; j < list.size(); ++j)
          for (std::uint64_t k = 0; k < o.size(); ++k) {
            std::uint32_t v = 0;
            std::memcpy(&v, bytes.data() + (j * o.size() + k) * esz, esz);
            r.output[list[j] * s.f_out + o.lo + k] = v;
          }
      }
    }
  }
  r.flops = cores.total(&hw::CoreCounters::flops) - flops0;
  if (check) {
    const PipeBits want = models::resident::expect_pipeline(p);
    for (std::size_t i = 0; i < want.size(); ++i) {
      ++r.compared;
      if (want[i] == r.output[i]) continue;
      if (!r.mismatches)
        r.first_mismatch = fmt::format("token {} output {}: got 0x{:08x}, expected 0x{:08x}", i / s.f_out, i % s.f_out,
                                       r.output[i], want[i]);
      ++r.mismatches;
    }
  }
  return r;
}

PipelineSimulation::PipelineSimulation(const PlatformSpec& spec, BuildOptions build, sim::stats::Group& root,
                                       const PipelineProgram& p)
    : spec_(spec), p_(p) {
  build.routes = p.routes;
  cluster_ = std::make_unique<Cluster>("cluster", spec, build, root);
}

PipelineResult PipelineSimulation::run(bool check, const sim::RunLimits& limits) {
  PipelineResult r = run_pipeline(p_, wafer(), check, limits);
  const double tps =
      r.cycles() ? static_cast<double>(p_.tokens) * spec_.wafer.clock.hz / static_cast<double>(r.cycles()) : 0;
  auto& g = wafer().stats().group("pipeline");
  g.formula(
      "tokens", [v = static_cast<double>(p_.tokens)] { return v; }, "tokens", "tokens through the pipeline");
  g.formula(
      "cycles", [v = static_cast<double>(r.cycles())] { return v; }, "cycles", "simulated cycles of the pipelined run");
  g.formula(
      "bound_cycles", [v = static_cast<double>(p_.bound_cycles())] { return v; }, "cycles",
      "lower bound of the simulated mapping");
  g.formula(
      "tokens_per_s", [v = tps] { return v; }, "tokens/s", "tokens per second at the platform clock");
  return r;
}

}  // namespace wafersim::platforms::inference
