#include "models/mesh/mesh_decode.h"

#include <stdexcept>

namespace wafersim::models::mesh {

const char* to_string(StepId::Kind k) {
  switch (k) {
    case StepId::Kind::Embed:
      return "embed";
    case StepId::Kind::Ln1:
      return "ln1";
    case StepId::Kind::Qkv:
      return "qkv";
    case StepId::Kind::Attn:
      return "attn";
    case StepId::Kind::O:
      return "o";
    case StepId::Kind::Ln2:
      return "ln2";
    case StepId::Kind::GateUp:
      return "gate_up";
    case StepId::Kind::Down:
      return "down";
    case StepId::Kind::LnF:
      return "ln_f";
    case StepId::Kind::Head:
      return "head";
  }
  return "?";
}

MeshDecode::MeshDecode(const compiler::Target& target, std::shared_ptr<const MeshLayout> layout, std::uint64_t position,
                       std::uint64_t token, std::uint32_t simulated)
    : target_(target), layout_(std::move(layout)), position_(position), token_(token), simulated_(simulated) {
  const MeshLayout& l = *layout_;
  if (position >= l.shape().capacity) throw std::logic_error("MeshDecode: a position beyond the cache's capacity");
  if (simulated > l.layers()) throw std::logic_error("MeshDecode: more layers than the layout holds");
  using K = StepId::Kind;
  if (l.embedding()) steps_.push_back({K::Embed, 0});
  for (std::uint32_t i = 0; i < simulated; ++i)
    for (K k : {K::Ln1, K::Qkv, K::Attn, K::O, K::Ln2, K::GateUp, K::Down}) steps_.push_back({k, i});
  if (l.head()) {
    steps_.push_back({K::LnF, l.layers()});
    steps_.push_back({K::Head, l.layers()});
  }
  routes_ = std::make_shared<fabric::RouteTable>(target.width(), target.height(), target.fabric.colors);
  for (const LineFamily* f : {&l.rows(), &l.columns(), &l.segments()}) add_routes(*routes_, l.region(), *f);
  const bool pairs =
      l.column_ring().positions() < l.column_ring().length() || l.row_ring().positions() < l.row_ring().length();
  if (target.fabric.colors >= MeshLayout::kColors + MeshLayout::kRingColors + (pairs ? 1u : 0u))
    for (const Ring* r : {&l.column_ring(), &l.row_ring()}) add_routes(*routes_, l.region(), *r);
}

MeshStep MeshDecode::step(std::size_t i, bool code) const {
  const StepId& s = steps_.at(i);
  const MeshLayout& l = *layout_;
  switch (s.kind) {
    case StepId::Kind::Embed:
      return embedding_step(l, target_, token_, code);
    case StepId::Kind::Ln1:
      return rmsnorm_step(l, target_, s.layer, false, code);
    case StepId::Kind::Qkv:
      return gemv_step(l, target_, Gemv::Qkv, s.layer, code);
    case StepId::Kind::Attn:
      return attention_step(l, target_, s.layer, position_, code);
    case StepId::Kind::O:
      return gemv_step(l, target_, Gemv::O, s.layer, code);
    case StepId::Kind::Ln2:
      return rmsnorm_step(l, target_, s.layer, true, code);
    case StepId::Kind::GateUp:
      return gemv_step(l, target_, Gemv::GateUp, s.layer, code);
    case StepId::Kind::Down:
      return gemv_step(l, target_, Gemv::Down, s.layer, code);
    case StepId::Kind::LnF:
      return rmsnorm_step(l, target_, l.layers(), false, code);
    case StepId::Kind::Head:
      return gemv_step(l, target_, Gemv::Head, l.layers(), code);
  }
  throw std::logic_error("MeshDecode::step: unknown kind");
}

std::vector<MeshStep> step_bounds(const compiler::Target& t, const MeshLayout& l, std::uint64_t position,
                                  std::uint64_t token) {
  std::vector<MeshStep> v;
  if (l.embedding()) v.push_back(embedding_step(l, t, token, false));
  if (l.layers()) {
    v.push_back(rmsnorm_step(l, t, 0, false, false));
    v.push_back(gemv_step(l, t, Gemv::Qkv, 0, false));
    v.push_back(attention_step(l, t, 0, position, false));
    v.push_back(gemv_step(l, t, Gemv::O, 0, false));
    v.push_back(rmsnorm_step(l, t, 0, true, false));
    v.push_back(gemv_step(l, t, Gemv::GateUp, 0, false));
    v.push_back(gemv_step(l, t, Gemv::Down, 0, false));
  }
  if (l.head()) {
    v.push_back(rmsnorm_step(l, t, l.layers(), false, false));
    v.push_back(gemv_step(l, t, Gemv::Head, l.layers(), false));
  }
  return v;
}

}  // namespace wafersim::models::mesh
