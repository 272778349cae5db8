#include "models/resident/resident_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "hw/numerics/softfloat.h"
#include "models/compiler/compiled_model.h"
#include "models/compiler/elementwise.h"
#include "models/resident/pipeline_frame.h"
#include "models/resident/pipeline_lowering.h"
#include "models/resident/pipeline_plan.h"
#include "models/resident/pipeline_routes.h"
#include "sim/errors.h"

namespace wafersim::models::resident {
using hw::DType;
namespace nm = hw::numerics;

namespace {

// Token m is position m % S of sequence m / S: the prompt's positions in the prefill phase,
// each later one in a decode phase of its own.
void plan_phases(PipelineProgram& p, std::uint64_t decode) {
  const ModelSpec& model = p.model;
  if (decode >= model.sequence)
    throw sim::InputError(
        fmt::format("{} decode steps leave no prompt in the model's sequence of {} (the KV cache's length)", decode,
                    model.sequence));
  p.prompt = model.sequence - decode;
  p.phases.resize(1 + decode);
  for (std::uint64_t m = 0; m < p.tokens; ++m) {
    const std::uint64_t pos = m % p.positions;
    p.phases[pos < p.prompt ? 0 : 1 + pos - p.prompt].tokens.push_back(m);
  }
}

PipeBits draw(std::mt19937_64& rng, std::uint64_t n, double scale, DType dt) {
  std::uniform_real_distribution<double> u(-scale, scale);
  PipeBits v(n);
  for (auto& x : v) x = nm::from_double(dt, u(rng));
  return v;
}

// Inputs and parameters drawn from the seed (uniform, scaled by 1/sqrt(fan-in)), in stage
// order: token ids below the vocabulary for an embedding.
void draw_values(PipelineProgram& p, std::uint64_t seed) {
  const DType dt = compiler::hw_dtype(p.model.dtype);
  std::mt19937_64 rng(seed);
  if (p.stages.front().kind == StageKind::Embedding) {
    std::uniform_int_distribution<std::uint64_t> id(0, p.stages.front().vocabulary - 1);
    p.input.resize(p.tokens);
    for (auto& t : p.input) t = static_cast<std::uint32_t>(id(rng));
  } else {
    p.input = draw(rng, p.tokens * p.stages.front().f_in, 1.0, dt);
  }
  for (auto& s : p.stages) {
    switch (s.kind) {
      case StageKind::RmsNorm:
      case StageKind::LayerNorm:
        s.weight = draw(rng, s.f_in, 1.0, dt);                                       // gamma
        if (s.kind == StageKind::LayerNorm) s.weight2 = draw(rng, s.f_in, 1.0, dt);  // beta
        break;
      case StageKind::Add:
      case StageKind::Attention:
        break;
      case StageKind::Embedding:
        s.weight = draw(rng, s.vocabulary * s.f_out, 1.0, dt);                  // the table
        if (s.positions) s.weight2 = draw(rng, s.capacity * s.f_out, 1.0, dt);  // the positions
        break;
      case StageKind::Linear:
      case StageKind::Gated:
      case StageKind::Qkv: {
        const double scale = 1.0 / std::sqrt(static_cast<double>(s.f_in));
        s.weight = draw(rng, s.f_in * s.f_out, scale, dt);
        if (s.bias) s.bias_values = draw(rng, s.f_out, scale, dt);
        if (s.kind == StageKind::Gated) {
          s.weight2 = draw(rng, s.f_in * s.f_out, scale, dt);
          if (s.bias2) s.bias_values2 = draw(rng, s.f_out, scale, dt);
        }
        break;
      }
    }
  }
}

// Stage i's frame for at most `tokens` tokens of a band in a phase; throws sim::InputError
// when it does not fit a PE's SRAM.
Frame fit_frame(PipelineProgram& p, std::size_t i, std::uint64_t tokens, const compiler::EwProgram& ew) {
  PipelineStage& s = p.stages[i];
  const compiler::Target& target = p.target;
  const DType dt = compiler::hw_dtype(p.model.dtype);
  const std::uint32_t esz = hw::size_of(dt);
  if (ew.consts.size() > 8) throw std::logic_error("pipeline: an elementwise program with more than 8 constants");
  const Frame fr =
      frame(p.cut, s, i == 0, i + 1 == p.stages.size(), tokens, s.fused.empty() ? 0 : ew.temporaries(), dt);
  if (s.kind == StageKind::Attention) {
    s.cache_bytes = fr.sc - fr.kc;
    if (fr.end > target.sram_bytes())
      throw sim::InputError(fmt::format(
          "layer '{}' does not fit the SRAM: PE ({}, 0) of the pipelined run needs {} B ({} B of them the KV "
          "cache: {} sequences x {} positions x {} kv heads x {} dimensions, keys {} B and values 4 B an element), "
          "but has {} B: short by {} B. Use a shorter sequence, a smaller batch or a platform with more SRAM per PE",
          s.name, s.x, fr.end, s.cache_bytes, s.cache_sequences, s.capacity, fr.groups, s.head_dim, esz,
          target.sram_bytes(), fr.end - target.sram_bytes()));
  }
  if (fr.end > target.sram_bytes())
    throw sim::InputError(fmt::format(
        "layer '{}': the pipelined run keeps {} weights per PE on {} rows and needs {} B of SRAM per PE, the PE "
        "has {} B",
        s.name, (fr.bias - fr.w) / esz, s.rows, fr.end, target.sram_bytes()));
  return fr;
}

}  // namespace

std::uint64_t PipelineProgram::interval_cycles() const {
  std::uint64_t most = 0;
  for (const auto& s : stages) most = std::max(most, s.interval_bound);
  return most;
}

std::vector<std::uint64_t> PipelineProgram::band_tokens(std::size_t phase, std::uint32_t band) const {
  std::vector<std::uint64_t> list;
  const auto& t = phases.at(phase).tokens;
  for (std::size_t j = 0; j < t.size(); ++j)
    if ((by_sequence ? t[j] / positions : j) % replicas == band) list.push_back(t[j]);
  return list;
}

std::uint64_t PipelineProgram::bound_cycles() const {
  std::uint64_t sum = 0, bound = 0;
  for (const auto& s : stages) sum += s.latency_bound;
  for (std::size_t ph = 0; ph < phases.size(); ++ph) {
    std::uint64_t t = 0;
    for (std::uint32_t band = 0; band < replicas; ++band) t = std::max<std::uint64_t>(t, band_tokens(ph, band).size());
    bound += sum + (t ? t - 1 : 0) * interval_cycles();
  }
  return bound;
}

PipelineProgram compile_pipeline(const ModelSpec& model, const compiler::Target& target, std::uint64_t seed,
                                 PipelineCut cut, std::uint32_t replicas, std::uint64_t decode) {
  PipelineProgram p;
  p.cut = cut;
  p.model = model;
  p.target = target;
  p.tokens = model.batch * model.sequence;
  p.positions = model.sequence;
  plan_phases(p, decode);
  p.stages = plan_stages(model, target, cut);
  if (target.fabric.colors < kPipelineColors)
    throw sim::InputError(
        fmt::format("the pipelined run needs {} colors, the platform has {}", kPipelineColors, target.fabric.colors));
  plan_bands(p, replicas);
  draw_values(p, seed);

  std::uint64_t most = 0;  // the most tokens of a band in a phase
  for (std::size_t ph = 0; ph < p.phases.size(); ++ph)
    for (std::uint32_t band = 0; band < p.replicas; ++band)
      most = std::max<std::uint64_t>(most, p.band_tokens(ph, band).size());
  const DType dt = compiler::hw_dtype(model.dtype);
  const std::uint32_t lanes = std::max(target.lanes(dt), target.lanes(DType::F32));
  std::vector<Frame> frames;
  std::vector<compiler::EwProgram> fused;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const PipelineStage& s = p.stages[i];
    fused.push_back(s.fused.empty() ? compiler::EwProgram{} : compiler::elementwise_forward(s.fused_kind));
    frames.push_back(fit_frame(p, i, most, fused.back()));
    p.sram_max = std::max<std::uint64_t>(p.sram_max, frames.back().end);
    bound_stage(p, i, lanes);
  }
  p.out_addr = frames.back().out;
  plan_routes(p);
  for (std::size_t i = 0; i < p.stages.size(); ++i) lower_stage(p, i, frames[i], fused[i]);
  return p;
}

}  // namespace wafersim::models::resident
