#include "sim/app/pipeline_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "sim/units/quantity.h"

namespace wafersim::app {

nlohmann::ordered_json pipeline_json(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                                     const models::resident::PipelineProgram& p,
                                     const platforms::inference::PipelineResult& r,
                                     const models::resident::ResidentPlan* plan) {
  const double hz = spec.wafer.clock.hz;
  const double tps = r.cycles() ? static_cast<double>(p.tokens) * hz / static_cast<double>(r.cycles()) : 0;
  nlohmann::ordered_json j;
  j["platform"] = spec.name;
  j["model"] = model.name;
  j["tokens"] = p.tokens;
  j["replicas"] = p.replicas;
  j["cut"] = models::resident::to_string(p.cut);
  j["cycles"] = r.cycles();
  j["prompt"] = p.prompt;
  j["decode_tokens"] = p.phases.size() - 1;
  j["prefill_cycles"] = r.phase_cycles.front();
  j["decode_step_cycles"] = std::vector<std::uint64_t>(r.phase_cycles.begin() + 1, r.phase_cycles.end());
  j["bound_cycles"] = p.bound_cycles();
  j["interval_bound_cycles"] = p.interval_cycles();
  if (plan) j["plan_bound_cycles"] = plan->prefill_cycles(model.batch);
  j["tokens_per_s"] = tps;
  j["checked"] = r.compared;
  j["mismatches"] = r.mismatches;
  nlohmann::ordered_json stages = nlohmann::json::array();
  for (const auto& s : p.stages)
    stages.push_back({{"layer", s.name},
                      {"up", s.up},
                      {"fused", s.fused},
                      {"column", s.x},
                      {"rows", s.rows},
                      {"v", s.v},
                      {"form", models::resident::form_name(s)},
                      {"kv_cache_bytes", s.cache_bytes},
                      {"latency_bound", s.latency_bound},
                      {"interval_bound", s.interval_bound}});
  j["stages"] = stages;
  return j;
}

void print_pipeline(const platforms::PlatformSpec& spec, const models::ModelSpec& model,
                    const models::resident::PipelineProgram& p, const platforms::inference::PipelineResult& r,
                    const models::resident::ResidentPlan* plan, bool check, const std::string& out_dir) {
  const double hz = spec.wafer.clock.hz;
  const double tps = r.cycles() ? static_cast<double>(p.tokens) * hz / static_cast<double>(r.cycles()) : 0;
  std::cout << fmt::format(
      "wafersim infer: {} on {} ({} x {} PEs at {}), weights resident in SRAM, pipelined: "
      "every layer on its own column, all at once\n",
      model.name, spec.name, spec.wafer.width, spec.wafer.height, units::format(spec.wafer.clock));
  for (const auto& s : p.stages)
    std::cout << fmt::format(
        "  stage         {}: column {}, {} rows, {} -> {} ({}); bound per token {} (latency), {} (interval)\n",
        models::resident::stage_layers(s), s.x, s.rows, s.f_in, s.f_out, models::resident::describe(s), s.latency_bound,
        s.interval_bound);
  std::cout << fmt::format(
      "  tokens        {} (batch x sequence), in flight together{} on {} pipeline{} (bands of {} rows; {})\n", p.tokens,
      p.phases.size() > 1 ? " within each phase" : "", p.replicas, p.replicas == 1 ? "" : "s", p.stages.front().rows,
      models::resident::to_string(p.cut));
  if (p.phases.size() > 1) {
    std::vector<std::uint64_t> decode_steps(r.phase_cycles.begin() + 1, r.phase_cycles.end());
    std::cout << fmt::format(
        "  phases        prefill of positions [0, {}) of each sequence ({} tokens): {} cycles; then {} decode "
        "step{} of one token per sequence, each loaded when the one before has finished, reading the KV caches: "
        "{} cycles\n",
        p.prompt, p.phases.front().tokens.size(), r.phase_cycles.front(), decode_steps.size(),
        decode_steps.size() == 1 ? "" : "s", fmt::join(decode_steps, ", "));
  }
  std::cout << fmt::format(
      "  cycles        {} simulated ({}), {:.0f} tokens/s; bound {} ({:.0f}% of the "
      "simulated cycles){}\n",
      r.cycles(), units::pretty(static_cast<double>(r.cycles()) / hz, "s"), tps, p.bound_cycles(),
      r.cycles() ? 100.0 * static_cast<double>(p.bound_cycles()) / static_cast<double>(r.cycles()) : 0.0,
      plan && p.phases.size() == 1 ? fmt::format(", the plan's {}", plan->prefill_cycles(model.batch)) : "");
  std::cout << fmt::format(
      "  checks        {}\n",
      !check ? std::string("off (--no-check)")
      : r.mismatches
          ? fmt::format("{} of {} outputs differ", r.mismatches, r.compared)
          : fmt::format("all {} outputs as expected (linear: models/reference's order; gelu, silu, relu: "
                        "the elementwise programs' order; swiglu, add: their programs'; rmsnorm, layernorm, attention, "
                        "embedding: models/reference rmsnorm_forward, layernorm_forward, attention_forward, "
                        "embedding_forward)",
                        r.compared));
  std::cout << fmt::format("  output        {}/ (config.yaml, stats.json, stats.txt, run.json, pipeline.json)\n",
                           out_dir);
}

}  // namespace wafersim::app
