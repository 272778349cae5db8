#include "platforms/runtime/host_data.h"

#include <cmath>

#include "hw/numerics/softfloat.h"

namespace wafersim::platforms::runtime {
using models::compiler::CompiledModel;
using models::compiler::Tensor;

HostData make_host_data(const CompiledModel& cm, std::uint64_t seed) {
  HostData d;
  Random rng(seed);
  const hw::DType dt = cm.dtype();
  for (const auto& h : cm.host_tensors) {
    Bits v(h.elements(), 0);
    if (!h.gradient) {
      const std::uint64_t fan_in = h.shape.size() >= 2 ? h.shape[0] : 1;
      const double scale = h.shape.size() >= 2 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 1.0;
      const bool ones_like = h.name.size() > 6 && h.name.substr(h.name.size() - 6) == ".gamma";
      for (auto& e : v) {
        const double u = (2 * rng.uniform() - 1) * scale;
        e = hw::numerics::from_double(dt, ones_like ? 1.0 + 0.25 * u : u);
      }
    }
    d.host.push_back(std::move(v));
  }
  const models::ModelSpec& m = cm.model;
  std::uint64_t vocab = 2;
  for (const auto& l : m.layers)
    vocab = std::max<std::uint64_t>(vocab, l.kind == models::LayerKind::Embedding ? l.vocabulary : 0);
  for (const auto& l : m.layers)
    if (l.kind == models::LayerKind::CrossEntropy)
      vocab = std::max<std::uint64_t>(vocab, m.shape_of(l.inputs[0]).features);
  const std::uint64_t tokens = cm.layout.tokens;
  for (const auto& in : m.inputs) {
    const int id = cm.tensor(in.name);
    Bits v;
    if (in.kind == models::InputSpec::Kind::Activations) {
      v.resize(tokens * in.features);
      for (auto& e : v) e = hw::numerics::from_double(dt, 2 * rng.uniform() - 1);
    } else {
      v.resize(tokens);
      for (auto& e : v) e = static_cast<std::uint32_t>(rng.below(vocab));
    }
    d.preload.emplace_back(static_cast<std::uint32_t>(id), std::move(v));
  }
  // Gradients of final outputs (models without a loss layer): drawn like activations.
  for (const auto& t : cm.tensors) {
    if (t.name.rfind("d:", 0) != 0) continue;
    bool consumed = false;
    const std::string fwd = t.name.substr(2);
    for (const auto& l : m.layers)
      for (const auto& i : l.inputs) consumed = consumed || i == fwd;
    if (consumed) continue;
    if (t.per_token()) continue;
    Bits v(tokens * t.features);
    for (auto& e : v) e = hw::numerics::from_double(dt, 2 * rng.uniform() - 1);
    d.preload.emplace_back(static_cast<std::uint32_t>(cm.tensor(t.name)), std::move(v));
  }
  return d;
}

std::uint32_t pe_size(const CompiledModel& cm, const Tensor& t, std::uint32_t s) {
  const auto& l = cm.layout;
  if (t.per_token()) return l.tokens_per_pe * t.width * hw::size_of(t.dtype);
  return static_cast<std::uint32_t>(t.map.count(s) * l.tokens_per_pe * hw::size_of(t.dtype));
}

namespace {

// Calls each(host index, byte offset in the PE's buffer) for every element PE (x, s) holds.
template <typename F>
void for_each_element(const CompiledModel& cm, const Tensor& t, std::uint32_t x, std::uint32_t s, F&& each) {
  const std::uint32_t tp = cm.layout.tokens_per_pe;
  const unsigned es = hw::size_of(t.dtype);
  if (t.per_token()) {
    for (std::uint32_t i = 0; i < tp; ++i)
      for (std::uint32_t k = 0; k < t.width; ++k)
        each((std::uint64_t{x} * tp + i) * t.width + k, (std::uint64_t{i} * t.width + k) * es);
    return;
  }
  std::uint64_t pos = 0;
  for (const models::compiler::Span& r : t.map.runs(s))
    for (std::uint64_t f = r.lo; f < r.hi; ++f, ++pos)
      for (std::uint32_t i = 0; i < tp; ++i) each((std::uint64_t{x} * tp + i) * t.features + f, (pos * tp + i) * es);
}

}  // namespace

std::vector<std::uint8_t> pe_bytes(const CompiledModel& cm, const Tensor& t, const Bits& v, std::uint32_t x,
                                   std::uint32_t s) {
  std::vector<std::uint8_t> out(pe_size(cm, t, s));
  const unsigned es = hw::size_of(t.dtype);
  for_each_element(cm, t, x, s, [&](std::uint64_t idx, std::uint64_t at) {
    for (unsigned k = 0; k < es; ++k) out[at + k] = static_cast<std::uint8_t>(v[idx] >> (8 * k));
  });
  return out;
}

void from_pe_bytes(const CompiledModel& cm, const Tensor& t, const std::vector<std::uint8_t>& b, std::uint32_t x,
                   std::uint32_t s, Bits& v) {
  const unsigned es = hw::size_of(t.dtype);
  for_each_element(cm, t, x, s, [&](std::uint64_t idx, std::uint64_t at) {
    std::uint32_t bits = 0;
    for (unsigned k = 0; k < es; ++k) bits |= std::uint32_t{b[at + k]} << (8 * k);
    v[idx] = bits;
  });
}

}  // namespace wafersim::platforms::runtime
