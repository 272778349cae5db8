#include "platforms/training/program_trajectory.h"

#include <fmt/format.h>

#include "hw/numerics/softfloat.h"
#include "memoryx/reference_optimizer.h"
#include "models/reference/training.h"
#include "platforms/runtime/host_data.h"
#include "platforms/training/wafer_times.h"
#include "sim/child_process.h"
#include "sim/errors.h"

namespace wafersim::platforms::training {
namespace {

const std::string kGrad = ".grad";

bool is_model_input(const models::ModelSpec& m, const std::string& name) {
  for (const auto& in : m.inputs)
    if (in.name == name) return true;
  return false;
}

// make_host_data's structure with the given weights and inputs.
runtime::HostData step_data(const models::compiler::CompiledModel& cm, const models::reference::TensorMap& parameters,
                            const models::reference::Inputs& shard, std::uint64_t seed) {
  runtime::HostData d = runtime::make_host_data(cm, seed);
  const hw::DType dt = cm.dtype();
  for (std::size_t i = 0; i < cm.host_tensors.size(); ++i) {
    const auto& h = cm.host_tensors[i];
    if (h.gradient) continue;
    const auto it = parameters.find(h.name);
    if (it == parameters.end())
      throw sim::InputError(
          fmt::format("model '{}': no weights for the programs' host tensor '{}'", cm.model.name, h.name));
    const models::reference::Tensor& t = it->second;
    if (t.format() != models::reference::Format::FP32 || t.size() != h.elements())
      throw sim::InputError(fmt::format("model '{}': parameter '{}' has {} elements, the programs' tensor {}",
                                        cm.model.name, h.name, t.size(), h.elements()));
    auto& v = d.host[i];
    for (std::size_t k = 0; k < v.size(); ++k) {
      const auto bits = static_cast<std::uint32_t>(t.bits(k));
      v[k] = dt == hw::DType::F32 ? bits : hw::numerics::convert(dt, hw::DType::F32, bits);
    }
  }
  load_shard(cm, shard, d);
  return d;
}

}  // namespace

void load_shard(const models::compiler::CompiledModel& cm, const models::reference::Inputs& shard,
                runtime::HostData& d) {
  for (auto& [id, bits] : d.preload) {
    const std::string& name = cm.tensors[id].name;
    if (!is_model_input(cm.model, name))
      throw sim::InputError(fmt::format(
          "model '{}': the programs' arithmetic needs every output to end in a loss layer ('{}' has no gradient)",
          cm.model.name, name));
    if (const auto a = shard.activations.find(name); a != shard.activations.end()) {
      if (a->second.size() != bits.size())
        throw sim::InputError(fmt::format("model '{}': input '{}' has {} elements, the programs read {}", cm.model.name,
                                          name, a->second.size(), bits.size()));
      for (std::size_t k = 0; k < bits.size(); ++k) bits[k] = static_cast<std::uint32_t>(a->second.bits(k));
    } else if (const auto ids = shard.ids.find(name); ids != shard.ids.end()) {
      if (ids->second.ids.size() != bits.size())
        throw sim::InputError(fmt::format("model '{}': input '{}' has {} ids, the programs read {}", cm.model.name,
                                          name, ids->second.ids.size(), bits.size()));
      bits.assign(ids->second.ids.begin(), ids->second.ids.end());
    } else {
      throw sim::InputError(fmt::format("model '{}': the batch has no input '{}'", cm.model.name, name));
    }
  }
}

const char* to_string(WaferArithmetic a) { return a == WaferArithmetic::Host ? "host" : "programs"; }

WaferArithmetic parse_wafer_arithmetic(const std::string& text) {
  if (text == "host") return WaferArithmetic::Host;
  if (text == "programs") return WaferArithmetic::Programs;
  throw sim::InputError(fmt::format("unknown wafer arithmetic '{}': expected 'host' or 'programs'", text));
}

WaferStep program_step(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                       const models::reference::TensorMap& parameters, const models::reference::Inputs& shard,
                       std::uint64_t seed, std::uint64_t max_cycles, const sim::RunLimits& limits) {
  runtime::HostData data = step_data(cm, parameters, shard, seed);
  const nlohmann::json reply = sim::run_in_child(
      [&] {
        nlohmann::json grads = nlohmann::json::object();
        nlohmann::json programs = run_programs_here(
            spec, cm, std::move(data), seed, true, max_cycles,
            [&](const runtime::Executor& exec) {
              for (std::size_t i = 0; i < cm.host_tensors.size(); ++i)
                if (cm.host_tensors[i].gradient) grads[cm.host_tensors[i].name] = exec.data().host[i];
            },
            nullptr, 1, limits);
        return nlohmann::json{{"programs", std::move(programs)}, {"gradients", std::move(grads)}};
      },
      fmt::format("the wafer run of '{}'", cm.model.name));
  const WaferTimes t = wafer_times(spec, cm, reply["programs"]);
  if (t.mismatches)
    throw sim::SimulationError(
        fmt::format("the wafer run of '{}': {} of {} result elements differ from the host; first: {}", cm.model.name,
                    t.mismatches, t.checked, t.first_mismatch));
  WaferStep out;
  out.checked = t.checked;
  out.cycles = t.cycles();
  bool any_loss = false;
  for (const auto& p : reply["programs"])
    if (!p["value"].is_null()) {
      out.loss += p["value"].get<double>();
      any_loss = true;
    }
  if (!any_loss) throw sim::InputError(fmt::format("model '{}' has no loss layer", cm.model.name));
  for (const auto& [name, value] : reply["gradients"].items()) {
    if (name.size() <= kGrad.size() || name.compare(name.size() - kGrad.size(), kGrad.size(), kGrad) != 0)
      throw sim::SimulationError(fmt::format("the programs' gradient tensor '{}' names no parameter", name));
    const std::string param = name.substr(0, name.size() - kGrad.size());
    const models::reference::Tensor& p = parameters.at(param);
    const auto bits = value.get<std::vector<std::uint32_t>>();
    if (bits.size() != p.size())
      throw sim::SimulationError(
          fmt::format("the programs' gradient '{}' has {} elements, the parameter {}", name, bits.size(), p.size()));
    models::reference::Tensor g(models::reference::Format::FP32, p.shape());
    for (std::size_t k = 0; k < bits.size(); ++k) g.set_bits(k, bits[k]);
    out.gradients.emplace(param, std::move(g));
  }
  for (const auto& [name, p] : parameters)
    if (!out.gradients.count(name))
      throw sim::InputError(fmt::format("model '{}': the programs compute no gradient of '{}'", cm.model.name, name));
  return out;
}

ProgramTrajectory program_trajectory(const platforms::PlatformSpec& spec, const models::compiler::CompiledModel& cm,
                                     const ClusterModel& layers, const models::reference::SyntheticTask& task,
                                     const models::reference::TensorMap& initial, const TrajectoryPlan& plan) {
  for (const auto& l : layers.layers)
    if (l.kept)
      throw sim::InputError(fmt::format(
          "sparse layer '{}': the programs' arithmetic runs dense models only (use --wafer-arithmetic host)", l.name));
  const std::uint32_t L = static_cast<std::uint32_t>(layers.layers.size());
  ProgramTrajectory tr;
  std::vector<memoryx::ReferenceState> state;
  std::vector<std::vector<float>> w;
  for (std::uint32_t l = 0; l < L; ++l) {
    state.push_back(memoryx::ReferenceState::with_weights(layers.flatten(l, initial), plan.optimizer.kind));
    w.push_back(state.back().weights);
  }
  tr.weights.push_back(w);
  const std::uint64_t per = cm.model.batch;
  models::reference::TensorMap params = initial;
  for (std::uint32_t s = 0; s < plan.steps; ++s) {
    for (std::uint32_t l = 0; l < L; ++l) layers.unflatten(l, state[l].weights, params);
    const models::reference::Inputs batch = task.batch(s, per * plan.wafers);
    std::map<std::string, std::vector<models::reference::Tensor>> per_wafer;
    auto& grads = tr.gradients.emplace_back();
    auto& losses = tr.losses.emplace_back();
    for (std::uint32_t e = 0; e < plan.wafers; ++e) {
      WaferStep ws = program_step(spec, cm, params, batch.batch_slice(std::uint64_t{e} * per, per), plan.seed,
                                  plan.max_cycles, plan.limits);
      tr.checked += ws.checked;
      losses.push_back(ws.loss);
      auto& mine = grads.emplace_back();
      for (std::uint32_t l = 0; l < L; ++l) mine.push_back(layers.flatten(l, ws.gradients));
      for (auto& [name, g] : ws.gradients) per_wafer[name].push_back(std::move(g));
    }
    models::reference::TensorMap sum;
    for (const auto& [name, list] : per_wafer) sum.emplace(name, models::reference::swarmx_sum(list, plan.arity));
    for (std::uint32_t l = 0; l < L; ++l) memoryx::reference_step(plan.optimizer, state[l], layers.flatten(l, sum));
    w.clear();
    for (const auto& st : state) w.push_back(st.weights);
    tr.weights.push_back(w);
  }
  return tr;
}

}  // namespace wafersim::platforms::training
