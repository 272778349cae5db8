#include "platforms/training/cosim_wafer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "hw/numerics/softfloat.h"
#include "platforms/runtime/host_data.h"
#include "platforms/training/program_trajectory.h"
#include "sim/errors.h"

namespace wafersim::platforms::training {
using models::compiler::Phase;
using sim::Cycle;
using sim::Picos;

namespace {

const std::string kGradientSuffix = ".grad";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The reference's name of a compiled host tensor's parameter: the same, but a norm's gain and
// shift are the compiler's "<norm>.weight" and "<norm>.bias" and the reference's "<norm>.gamma"
// and "<norm>.beta".
bool same_parameter(const std::string& host, const std::string& param) {
  if (host == param) return true;
  for (const auto& [compiled, reference] : {std::pair<std::string, std::string>{".weight", ".gamma"},
                                            std::pair<std::string, std::string>{".bias", ".beta"}})
    if (ends_with(host, compiled) && ends_with(param, reference) &&
        host.compare(0, host.size() - compiled.size(), param, 0, param.size() - reference.size()) == 0)
      return true;
  return false;
}

}  // namespace

CosimWafer::CosimWafer(const models::compiler::CompiledModel& cm, platforms::Wafer& wafer, edge::WaferEdge& edge,
                       const ClusterModel& layers, const CosimPlan& plan)
    : cm_(cm),
      wafer_(wafer),
      edge_(edge),
      layers_(layers),
      plan_(plan),
      exec_(cm, wafer, runtime::make_host_data(cm, plan.seed), runtime::ExecOptions{plan.functional, true}, &edge) {
  const auto L = static_cast<std::uint32_t>(layers_.layers.size());
  const std::size_t P = cm_.programs.size();
  stream_layer_.assign(P, -1);
  last_reader_.assign(2 * L, -1);
  last_writer_.assign(L, -1);
  for (std::size_t i = 0; i < P; ++i) {
    const auto& p = cm_.programs[i];
    if (p.code.empty())
      throw sim::InputError(
          fmt::format("program '{}' has no PE code: a co-simulated cluster runs every program "
                      "(use --cluster-model replay with --timing bound)",
                      p.name()));
    for (std::uint32_t l = 0; l < L; ++l) {
      const auto& cl = layers_.layers[l];
      if (cl.name == p.layer || std::find(cl.carries.begin(), cl.carries.end(), p.layer) != cl.carries.end())
        stream_layer_[i] = static_cast<int>(l);
    }
    if (stream_layer_[i] >= 0) {
      const auto l = static_cast<std::uint32_t>(stream_layer_[i]);
      last_reader_[p.phase == Phase::Forward ? l : L + l] = static_cast<int>(i);
    }
  }
  // Host tensors: the parameters come in through the edge, their gradients go out through it.
  std::vector<edge::TensorSource> sources(cm_.host_tensors.size());
  grad_of_.assign(cm_.host_tensors.size(), -1);
  offset_of_.assign(cm_.host_tensors.size(), 0);
  for (std::size_t t = 0; t < cm_.host_tensors.size(); ++t) {
    const auto& h = cm_.host_tensors[t];
    std::string param = h.name;
    if (h.gradient) {
      if (param.size() <= kGradientSuffix.size() ||
          param.compare(param.size() - kGradientSuffix.size(), kGradientSuffix.size(), kGradientSuffix) != 0)
        throw sim::SimulationError(fmt::format("the programs' gradient tensor '{}' names no parameter", h.name));
      param.resize(param.size() - kGradientSuffix.size());
    }
    for (std::uint32_t l = 0; l < L; ++l)
      for (const auto& slot : layers_.layers[l].parameters) {
        if (!same_parameter(param, slot.name)) continue;
        if (h.gradient) {
          grad_of_[t] = l;
          offset_of_[t] = slot.offset;
        } else {
          sources[t] = edge::TensorSource{l, slot.offset, &exec_.data().host[t]};
        }
      }
  }
  for (std::size_t i = 0; i < P; ++i)
    for (const auto& st : cm_.programs[i].streams)
      for (const auto& seg : st.segments)
        if (st.into_wafer && sources[seg.tensor].layer < 0)
          throw sim::InputError(
              fmt::format("program '{}' streams host tensor '{}', which is no parameter MemoryX "
                          "streams",
                          cm_.programs[i].name(), cm_.host_tensors[seg.tensor].name));
  for (std::size_t i = 0; i < P; ++i)
    for (const auto& st : cm_.programs[i].streams)
      if (!st.into_wafer)
        for (const auto& seg : st.segments)
          if (grad_of_.at(seg.tensor) >= 0)
            last_writer_[static_cast<std::size_t>(grad_of_[seg.tensor])] = static_cast<int>(i);
  // A layer whose gradient no program computes (a norm's gain and bias): a functional run has
  // no values for it; a timing run sends its chunks when the layer's backward pass ends (or,
  // without one, the step's last program).
  for (std::uint32_t l = 0; l < L; ++l) {
    if (last_writer_[l] >= 0) continue;
    if (plan_.functional)
      throw sim::InputError(
          fmt::format("layer '{}': no compiled program computes its weight gradient, so a "
                      "functional co-simulation has none to send (a timing run sends its chunks "
                      "when the layer's backward ends)",
                      layers_.layers[l].name));
    last_writer_[l] = last_reader_[L + l] >= 0 ? last_reader_[L + l] : static_cast<int>(P) - 1;
    untimed_gradients_.push_back(layers_.layers[l].name);
  }
  edge_.set_sources(std::move(sources));
  if (plan_.functional) edge_.set_on_staged([this](const sim::stream::Chunk& c) { on_staged(c); });
  if (plan_.functional && !plan_.task) throw std::logic_error("CosimWafer: a functional run needs its task");
}

std::uint32_t CosimWafer::stream_of(std::uint32_t layer, bool forward) const {
  const auto L = static_cast<std::uint32_t>(layers_.layers.size());
  return step_ * 2 * L + (forward ? layer : 2 * L - 1 - layer);
}

void CosimWafer::on_staged(const sim::stream::Chunk& c) {
  if (!c.data) throw sim::SimulationError(fmt::format("{}: {} carries no values", edge_.describe(), c.info.describe()));
  const hw::DType dt = cm_.dtype();
  const std::uint64_t first = c.info.offset / 4, n = c.info.bytes / 4;
  const auto& layer = layers_.layers.at(c.info.layer);
  for (std::size_t t = 0; t < cm_.host_tensors.size(); ++t) {
    if (cm_.host_tensors[t].gradient) continue;
    for (const auto& slot : layer.parameters) {
      if (!same_parameter(cm_.host_tensors[t].name, slot.name)) continue;
      auto& image = exec_.data().host[t];
      const std::uint64_t lo = std::max(first, slot.offset), hi = std::min(first + n, slot.offset + image.size());
      for (std::uint64_t k = lo; k < hi; ++k) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &(*c.data)[k - first], 4);
        image[k - slot.offset] = dt == hw::DType::F32 ? bits : hw::numerics::convert(dt, hw::DType::F32, bits);
      }
    }
  }
}

void CosimWafer::begin_step() {
  edge_.set_step(step_);
  const auto L = static_cast<std::uint32_t>(layers_.layers.size());
  if (plan_.functional) {
    auto& data = exec_.data();
    for (std::size_t t = 0; t < cm_.host_tensors.size(); ++t)
      if (cm_.host_tensors[t].gradient) std::fill(data.host[t].begin(), data.host[t].end(), 0U);
    const std::uint64_t B = cm_.model.batch;
    const models::reference::Inputs batch = plan_.task->batch(plan_.first_step + step_, B * plan_.wafers);
    load_shard(cm_, batch.batch_slice(std::uint64_t{plan_.wafer} * B, B), data);
    gradients_.emplace_back(L);
  }
  if (plan_.functional || step_ == 0) exec_.load_inputs();
  for (std::uint32_t l = 0; l < L; ++l) {
    if (last_reader_[l] < 0) edge_.release(stream_of(l, true));
    if (last_reader_[L + l] < 0) edge_.release(stream_of(l, false));
  }
  losses_.push_back(0);
  programs_.emplace_back();
  program_ = 0;
  start_program();
}

void CosimWafer::start_program() {
  exec_.start(program_);
  running_ = true;
}

bool CosimWafer::program_done() const { return wafer_.engine().quiescent_except(&edge_) && edge_.done(); }

void CosimWafer::finish_program() {
  const auto& r = exec_.finish(program_);
  for (const auto& c : r.checks) {
    checked_ += c.compared;
    if (c.mismatches)
      throw sim::SimulationError(
          fmt::format("wafer {}, step {}, {}: {}: {} of {} elements differ from the host; "
                      "first: {}",
                      plan_.wafer, step_, r.name(), c.what, c.mismatches, c.compared, c.first_mismatch));
    if (c.value) losses_.back() += *c.value;
  }
  const std::uint64_t first =
      edge_.first_sent().is_never() ? r.start : std::clamp(edge_.first_sent().count(), r.start, r.end);
  programs_.back().push_back(CosimProgram{r.start, r.end, first});
  if (r.end > first) compute_.push_back(edge::Interval{edge_.ps_of(Cycle(first)), edge_.ps_of(Cycle(r.end))});
  const auto L = static_cast<std::uint32_t>(layers_.layers.size());
  const int i = static_cast<int>(program_);
  if (const int l = stream_layer_[program_]; l >= 0) {
    const bool forward = cm_.programs[program_].phase == Phase::Forward;
    if (last_reader_[forward ? static_cast<std::uint32_t>(l) : L + static_cast<std::uint32_t>(l)] == i)
      edge_.release(stream_of(static_cast<std::uint32_t>(l), forward));
  }
  for (std::uint32_t l = 0; l < L; ++l)
    if (last_writer_[l] == i) send_gradient(l);
  running_ = false;
  if (++program_ < cm_.programs.size()) {
    start_program();
    return;
  }
  if (++step_ < plan_.steps) {
    begin_step();
    return;
  }
  finished_ = true;
}

void CosimWafer::send_gradient(std::uint32_t l) {
  const auto& layer = layers_.layers[l];
  const std::uint64_t bytes = layer.stream_bytes(), chunk = edge_.config().chunk_bytes;
  std::shared_ptr<std::vector<float>> flat;
  if (plan_.functional) {
    flat = std::make_shared<std::vector<float>>(layer.params, 0.0F);
    for (std::size_t t = 0; t < cm_.host_tensors.size(); ++t) {
      if (grad_of_[t] != static_cast<std::int64_t>(l)) continue;
      const auto& g = exec_.data().host[t];
      std::memcpy(flat->data() + offset_of_[t], g.data(), g.size() * sizeof(float));
    }
    gradients_.back()[l] = *flat;
  }
  const std::uint32_t count = sim::stream::chunk_count(bytes, chunk);
  for (std::uint32_t i = 0; i < count; ++i) {
    sim::stream::Chunk c;
    c.info.layer = l;
    c.info.pass = sim::stream::Pass::Gradient;
    c.info.step = step_;
    c.info.index = i;
    c.info.count = count;
    c.info.offset = std::uint64_t{i} * chunk;
    c.info.bytes = sim::stream::chunk_size(bytes, chunk, i);
    if (flat)
      c.data = std::make_shared<const std::vector<float>>(
          flat->begin() + static_cast<std::ptrdiff_t>(c.info.offset / 4),
          flat->begin() + static_cast<std::ptrdiff_t>((c.info.offset + c.info.bytes) / 4));
    edge_.send_gradient(std::move(c));
  }
}

void CosimWafer::advance(Cycle end) {
  auto& engine = wafer_.engine();
  if (!started_) {
    started_ = true;
    begin_step();
  }
  for (;;) {
    if (running_ && program_done()) {
      finish_program();
      continue;
    }
    if (!engine.step(end)) break;
  }
  if (engine.limit_reached())
    throw sim::LimitReached(
        fmt::format("wafer {} reached {} cycles", plan_.wafer, engine.options().max_cycles.count()));
}

std::vector<edge::Interval> CosimWafer::take_compute() {
  std::vector<edge::Interval> out;
  out.swap(compute_);
  return out;
}

}  // namespace wafersim::platforms::training
