#include "platforms/runtime/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "hw/numerics/elementary.h"
#include "hw/numerics/softfloat.h"
#include "models/compiler/elementwise.h"
#include "models/compiler/kernels.h"
#include "models/reference/attention.h"
#include "models/reference/cross_entropy.h"
#include "models/reference/embedding.h"
#include "models/reference/norms.h"
#include "models/reference/softmax.h"
#include "platforms/runtime/pe_order.h"
#include "sim/errors.h"

namespace wafersim::platforms::runtime {
using models::compiler::Phase;
namespace nm = hw::numerics;

namespace {

// The host link is a top-level module; named after its wafer ("cluster.wafer1" ->
// "cluster_wafer1_host_link"), so executors on different wafers of one cluster do not clash.
std::string host_link_name(const platforms::Wafer& wafer) {
  std::string name = wafer.name();
  for (char& c : name)
    if (c == '.') c = '_';
  return name + "_host_link";
}

}  // namespace

Executor::Executor(const models::compiler::CompiledModel& cm, platforms::Wafer& wafer, HostData data,
                   ExecOptions options, edge::EdgeStreams* edge)
    : cm_(&cm),
      wafer_(wafer),
      data_(std::move(data)),
      options_(options),
      link_(host_link_name(wafer).c_str(), wafer.address_map()),
      own_driver_(edge ? nullptr : std::make_unique<EdgeDriver>(wafer.mesh(), wafer.engine())),
      driver_(edge ? *edge : *own_driver_) {
  link_.socket.bind(wafer.host_socket());
}

void advance_load(const sim::Engine& engine, const sc_core::sc_time& load, sim::Cycle limit, const std::string& where) {
  if (!limit.is_never() && sc_core::sc_time_stamp() + load > engine.time_of(limit)) {
    const sc_core::sc_time cap = engine.time_of(limit);
    if (cap > sc_core::sc_time_stamp()) sc_core::sc_start(cap - sc_core::sc_time_stamp());
    throw sim::LimitReached(fmt::format("--max-cycles {} reached during the input load{}", limit.count(),
                                        where.empty() ? "" : " (" + where + ")"));
  }
  sc_core::sc_start(load);
}

sc_core::sc_time Executor::load_inputs() {
  const sc_core::sc_time before = link_.delay();
  const auto& l = cm_->layout;
  for (const auto& [id, bits] : data_.preload) {
    const models::compiler::Tensor& t = cm_->tensors[id];
    for (std::uint32_t g = 0; g < l.groups; ++g)
      for (std::uint32_t s = 0; s < l.slices(); ++s)
        for (std::uint32_t x = 0; x < l.columns; ++x)
          link_.write(hw::PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(l.group_rows[g][s])},
                      t.addr, pe_bytes(*cm_, t, bits, g * l.columns + x, s));
  }
  return link_.delay() - before;
}

void Executor::continue_with(const models::compiler::CompiledModel& cm, HostData data) {
  if (cm.routes != cm_->routes)
    throw std::logic_error("Executor::continue_with: the next model must use the routes the wafer was built with");
  cm_ = &cm;
  data_ = std::move(data);
  first_result_ = results_.size();
}

Bits Executor::gather(std::uint32_t tensor) {
  const auto& l = cm_->layout;
  const models::compiler::Tensor& t = cm_->tensors[tensor];
  Bits v(l.tokens * (t.per_token() ? t.width : t.features));
  for (std::uint32_t g = 0; g < l.groups; ++g)
    for (std::uint32_t s = 0; s < l.slices(); ++s) {
      for (std::uint32_t x = 0; x < l.columns; ++x) {
        const hw::PeCoord pe{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(l.group_rows[g][s])};
        from_pe_bytes(*cm_, t, link_.read(pe, t.addr, pe_size(*cm_, t, s)), g * l.columns + x, s, v);
      }
      if (t.per_token()) break;
    }
  return v;
}

void Executor::start(std::size_t i) {
  const models::compiler::LayerProgram& p = cm_->programs.at(i);
  auto& engine = wafer_.engine();
  auto& cores = wafer_.cores();
  StepResult r;
  r.layer = p.layer;
  r.phase = p.phase;
  r.kind = p.kind;
  r.flops = p.work.flops;
  r.bound = p.bound;
  r.start = std::max(engine.now(), engine.first_cycle_at_or_after(sc_core::sc_time_stamp())).count();
  r.end = r.start;
  before_.clear();
  if (!has_code(i)) {
    r.simulated = false;
    results_.push_back(std::move(r));
    return;
  }
  if (options_.check)
    for (auto t : p.reads) before_[t] = gather(t);
  for (const auto& pl : p.code)
    for (std::uint32_t y = pl.y0; y <= pl.y1; ++y)
      for (std::uint32_t x = pl.x0; x <= pl.x1; ++x)
        cores.replace(hw::PeCoord{static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y)}, pl.program);
  std::vector<InStream> in;
  std::vector<OutStream> out;
  for (const auto& st : p.streams) {
    if (st.into_wafer) {
      InStream s;
      s.side = st.side;
      s.channel = st.channel;
      s.color = hw::Color(st.color);
      if (options_.stream_refs) {
        s.refs.reserve(st.wavelets());
        for (const auto& seg : st.segments)
          for (std::uint64_t a = 0; a < seg.n0; ++a)
            for (std::uint64_t b = 0; b < seg.n1; ++b)
              s.refs.push_back(edge::WaveletRef{seg.tensor, seg.base + a * static_cast<std::uint64_t>(seg.s0) +
                                                                b * static_cast<std::uint64_t>(seg.s1)});
      } else {
        s.payloads.reserve(st.wavelets());
        for (const auto& seg : st.segments) {
          const Bits& h = data_.host.at(seg.tensor);
          for (std::uint64_t a = 0; a < seg.n0; ++a)
            for (std::uint64_t b = 0; b < seg.n1; ++b)
              s.payloads.push_back(
                  h.at(seg.base + a * static_cast<std::uint64_t>(seg.s0) + b * static_cast<std::uint64_t>(seg.s1)));
        }
      }
      in.push_back(std::move(s));
    } else {
      OutStream s;
      s.side = st.side;
      s.channel = st.channel;
      s.color = hw::Color(st.color);
      s.expected = st.wavelets();
      out.push_back(std::move(s));
    }
  }
  flops_at_start_ = cores.total(&hw::CoreCounters::flops);
  for (int k = 0; k < hw::kStallCauses; ++k) stalls_at_start_[k] = cores.total_stall(static_cast<hw::Stall>(k));
  sent_at_start_ = driver_.wavelets_sent();
  activity_at_start_ = read_activity(wafer_.stats());
  received_at_start_ = driver_.wavelets_received();
  driver_.begin(std::move(in), std::move(out));
  results_.push_back(std::move(r));
}

const StepResult& Executor::finish(std::size_t i) {
  const models::compiler::LayerProgram& p = cm_->programs.at(i);
  auto& cores = wafer_.cores();
  StepResult& r = results_.back();
  if (!r.simulated) return r;
  cores.check();
  if (cores.busy_count() > 0) {
    try {
      cores.check_finished();
    } catch (const sim::SimulationError& e) {
      throw sim::SimulationError(fmt::format("{}: {}{}", p.name(), e.what(),
                                             driver_.done() ? "" : "\nedge streams still open:" + driver_.pending()));
    }
  }
  if (!driver_.done())
    throw sim::SimulationError(
        fmt::format("{}: every PE is idle but edge streams are incomplete (deadlock):{}", p.name(), driver_.pending()));
  r.end = std::max({r.start, cores.finish_cycle(), driver_.last_activity()});
  r.executed_flops = cores.total(&hw::CoreCounters::flops) - flops_at_start_;
  for (int k = 0; k < hw::kStallCauses; ++k)
    r.stalls[k] = cores.total_stall(static_cast<hw::Stall>(k)) - stalls_at_start_[k];
  r.wavelets_in = driver_.wavelets_sent() - sent_at_start_;
  r.wavelets_out = driver_.wavelets_received() - received_at_start_;
  r.activity = activity_between(activity_at_start_, read_activity(wafer_.stats()));

  // Gradients out: into the host tensors (fp32, accumulated) and, for the check, this step's
  // own (with row groups, the groups' partials summed in fp32 in group order, as the host
  // accumulates them: the streams are in group order).
  step_streams_.assign(data_.host.size(), Bits());
  std::vector<std::vector<bool>> seen(data_.host.size());
  std::size_t k = 0;
  for (const auto& st : p.streams) {
    if (st.into_wafer) continue;
    const auto& got = driver_.outputs().at(k++).received;
    std::size_t n = 0;
    for (const auto& seg : st.segments) {
      Bits& h = data_.host.at(seg.tensor);
      Bits& mine = step_streams_[seg.tensor];
      std::vector<bool>& was = seen[seg.tensor];
      if (mine.empty()) {
        mine.assign(h.size(), 0);
        was.assign(h.size(), false);
      }
      for (std::uint64_t a = 0; a < seg.n0; ++a)
        for (std::uint64_t b = 0; b < seg.n1; ++b) {
          const std::uint64_t idx =
              seg.base + a * static_cast<std::uint64_t>(seg.s0) + b * static_cast<std::uint64_t>(seg.s1);
          const std::uint32_t v = got.at(n++);
          h[idx] = st.accumulate ? nm::add(hw::DType::F32, h[idx], v) : v;
          mine[idx] = st.accumulate && was[idx] ? nm::add(hw::DType::F32, mine[idx], v) : v;
          was[idx] = true;
        }
    }
  }
  if (options_.check) r.checks = check_step(i);
  return r;
}

namespace {

// Compares element bits; `exact` or within an absolute tolerance.
Check compare(const std::string& what, hw::DType t, const Bits& got, const Bits& want, bool exact, double tolerance,
              const std::vector<std::uint64_t>* only = nullptr) {
  Check c;
  c.what = what;
  c.reference = exact ? "pe-order" : "reference";
  c.exact = exact;
  c.tolerance = tolerance;
  auto one = [&](std::uint64_t i) {
    ++c.compared;
    const double g = nm::to_double(t, got[i]), w = nm::to_double(t, want[i]);
    const double err = std::isnan(g) || std::isnan(w) ? INFINITY : std::fabs(g - w);
    if (std::isfinite(err)) c.max_abs_error = std::max(c.max_abs_error, err);
    const bool bad = exact ? got[i] != want[i] : !(err <= tolerance);
    if (!bad) return;
    if (c.mismatches++ == 0)
      c.first_mismatch = fmt::format("element {}: got {} ({:#x}), expected {} ({:#x})", i, g, got[i], w, want[i]);
  };
  if (only)
    for (auto i : *only) one(i);
  else
    for (std::uint64_t i = 0; i < want.size(); ++i) one(i);
  return c;
}

// A reference tensor's values as the PE's bit patterns.
Bits bits_of(const models::reference::Tensor& t) {
  Bits b(t.size());
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<std::uint32_t>(t.bits(k));
  return b;
}

// Tokens [lo, hi) of a token-major tensor with `width` values per token.
Bits token_range(const Bits& b, std::uint64_t lo, std::uint64_t hi, std::uint64_t width) {
  return Bits(b.begin() + static_cast<std::ptrdiff_t>(lo * width), b.begin() + static_cast<std::ptrdiff_t>(hi * width));
}

// Row group g's tokens as a tensor shape: whole samples when the batch divides, else one
// sample of the group's tokens.
models::Shape group_shape(const models::compiler::CompiledModel& cm, std::uint64_t width) {
  const std::uint64_t G = cm.layout.groups;
  return cm.model.batch % G == 0 ? models::Shape{cm.model.batch / G, cm.model.sequence, width}
                                 : models::Shape{1, cm.layout.group_tokens(), width};
}

// Adds row group g's partial parameter gradient into the total as the host adds the groups'
// streams: fp32, in group order, the first one stored as it comes.
void add_group_partial(Bits& total, const Bits& part, std::uint32_t g) {
  if (g == 0) {
    total = part;
    return;
  }
  for (std::size_t k = 0; k < total.size(); ++k) total[k] = nm::add(hw::DType::F32, total[k], part[k]);
}

}  // namespace

std::vector<Check> Executor::check_step(std::size_t i) {
  const models::compiler::LayerProgram& p = cm_->programs.at(i);
  const models::LayerSpec* layer = cm_->model.find(p.layer);
  std::vector<Check> out;
  if (!layer) return out;
  const hw::DType dt = cm_->dtype();
  switch (layer->kind) {
    case models::LayerKind::Linear:
    case models::LayerKind::Gemv: {
      const bool tied = !layer->tied_to.empty();
      const int wid = cm_->host_tensor((tied ? layer->tied_to : layer->name) + ".weight");
      const std::uint64_t K = layer->in_features, N = layer->features;
      const std::int64_t sk = tied ? 1 : static_cast<std::int64_t>(N), sn = tied ? static_cast<std::int64_t>(K) : 1;
      if (p.phase == Phase::Forward) {
        const WeightView w{&data_.host[wid], 0, sk, sn};
        const Bits* bias = layer->bias ? &data_.host[cm_->host_tensor(layer->name + ".bias")] : nullptr;
        const Bits want = expect_matmul(*cm_, before_.at(p.reads[0]), cm_->tensors[p.reads[0]].map,
                                        cm_->tensors[p.writes[0]].map, w, bias, nullptr);
        out.push_back(compare(layer->name, dt, gather(p.writes[0]), want, true, 0));
      } else if (p.phase == Phase::BackwardData) {
        const WeightView w{&data_.host[wid], 0, sn, sk};
        const bool acc = p.reads.size() > 1;
        const Bits want =
            expect_matmul(*cm_, before_.at(p.reads[0]), cm_->tensors[p.reads[0]].map, cm_->tensors[p.writes[0]].map, w,
                          nullptr, acc ? &before_.at(p.reads[1]) : nullptr);
        out.push_back(compare(cm_->tensors[p.writes[0]].name, dt, gather(p.writes[0]), want, true, 0));
      } else {
        const WeightGrad g =
            expect_weight_grad(*cm_, before_.at(p.reads[0]), before_.at(p.reads[1]), K, N, layer->bias);
        const int gid = cm_->host_tensor((tied ? layer->tied_to : layer->name) + ".weight.grad");
        const Bits& got = step_streams_.at(gid);
        Bits want(got.size(), 0);
        std::vector<std::uint64_t> idx;
        for (std::uint64_t f = 0; f < K; ++f)
          for (std::uint64_t o = 0; o < N; ++o) {
            const std::uint64_t at = f * static_cast<std::uint64_t>(sk) + o * static_cast<std::uint64_t>(sn);
            want[at] = g.dw[f * N + o];
            idx.push_back(at);
          }
        out.push_back(compare(layer->name + ".weight.grad", hw::DType::F32, got, want, true, 0, &idx));
        if (layer->bias) {
          const int bid = cm_->host_tensor(layer->name + ".bias.grad");
          out.push_back(compare(layer->name + ".bias.grad", hw::DType::F32, step_streams_.at(bid), g.db, true, 0));
        }
      }
      break;
    }
    case models::LayerKind::Add:
    case models::LayerKind::Mul:
    case models::LayerKind::Gelu:
    case models::LayerKind::Silu:
    case models::LayerKind::Relu:
    case models::LayerKind::Swiglu: {
      const auto& ops = p.operands;
      const std::size_t ins = p.phase == Phase::Forward
                                  ? layer->inputs.size()
                                  : 1 + (layer->kind == models::LayerKind::Add ? 0 : layer->inputs.size());
      const models::compiler::EwProgram prog = p.phase == Phase::Forward
                                                   ? models::compiler::elementwise_forward(layer->kind)
                                                   : models::compiler::elementwise_backward(layer->kind, p.accumulate);
      std::vector<Bits> bufs(prog.buffers.size());
      for (std::size_t k = 0; k < ops.size(); ++k)
        if (ops[k] != models::compiler::kScratchTensor && before_.count(ops[k])) bufs[k] = before_.at(ops[k]);
      const std::size_t n = bufs[0].size();
      for (auto& b : bufs)
        if (b.size() != n) b.assign(n, 0);
      // Operands that are one tensor (swiglu [a, a]: both gradients) are one buffer, as on the PE.
      std::vector<Bits*> ptrs;
      for (std::size_t k = 0; k < bufs.size(); ++k) {
        std::size_t same = k;
        if (k < ops.size() && ops[k] != models::compiler::kScratchTensor)
          same = static_cast<std::size_t>(std::find(ops.begin(), ops.end(), ops[k]) - ops.begin());
        ptrs.push_back(&bufs[same]);
      }
      models::compiler::run_elementwise(prog, dt, ptrs);
      std::set<std::uint32_t> compared;
      for (std::size_t k = ins; k < ops.size(); ++k)
        if (ops[k] != models::compiler::kScratchTensor && compared.insert(ops[k]).second)
          out.push_back(compare(cm_->tensors[ops[k]].name, dt, gather(ops[k]), *ptrs[k], true, 0));
      break;
    }
    case models::LayerKind::CrossEntropy:
      out = check_cross_entropy(i, *layer);
      break;
    case models::LayerKind::Embedding: {
      // models/reference: a copy of the token's row (plus its position's row); the gradients a
      // scatter-add in row order.
      namespace ref = models::reference;
      const ref::Format f = ref::format_of(cm_->model.dtype);
      const std::uint64_t V = layer->vocabulary, d = layer->features;
      const Bits& ib = before_.at(p.operands[0]);
      ref::TokenIds ids;
      ids.shape = models::Shape{cm_->model.batch, cm_->model.sequence, 1};
      ids.ids.assign(ib.begin(), ib.end());
      ref::check_ids(ids, V, "embedding token ids");
      if (p.phase == Phase::Forward) {
        ref::Tensor table(f, models::Shape{1, V, d});
        const Bits& tb = data_.host[cm_->host_tensor(layer->name + ".weight")];
        for (std::size_t k = 0; k < tb.size(); ++k) table.set_bits(k, tb[k]);
        const std::uint64_t S = cm_->model.sequence;
        ref::Tensor positions(f, models::Shape{1, S, d});
        if (layer->learned_positions) {
          const Bits& pb = data_.host[cm_->host_tensor(layer->name + ".positions")];
          for (std::size_t k = 0; k < pb.size(); ++k) positions.set_bits(k, pb[k]);
        }
        const ref::Tensor y = ref::embedding_forward(ids, table, layer->learned_positions ? &positions : nullptr);
        Bits want = bits_of(y);
        Check c = compare(layer->name, dt, gather(p.operands[1]), want, true, 0);
        c.reference = "models/reference embedding_forward";
        out.push_back(std::move(c));
      } else {
        // Each row group's scatter-add over its own tokens (the reference's order there); the
        // host adds the groups' tables in fp32, in group order.
        const Bits& db = before_.at(p.operands[1]);
        const std::uint32_t G = cm_->layout.groups;
        const std::uint64_t Rg = cm_->layout.group_tokens();
        Bits table, positions;
        for (std::uint32_t grp = 0; grp < G; ++grp) {
          ref::TokenIds gi;
          gi.shape = group_shape(*cm_, 1);
          const Bits part = token_range(ib, grp * Rg, (grp + 1) * Rg, 1);
          gi.ids.assign(part.begin(), part.end());
          ref::Tensor dy(f, group_shape(*cm_, d));
          const Bits dyb = token_range(db, grp * Rg, (grp + 1) * Rg, d);
          for (std::size_t k = 0; k < dyb.size(); ++k) dy.set_bits(k, dyb[k]);
          const ref::EmbeddingGrads g =
              ref::embedding_backward(gi, dy, V, layer->learned_positions ? cm_->model.sequence : 0);
          add_group_partial(table, bits_of(g.table), grp);
          if (layer->learned_positions) add_group_partial(positions, bits_of(g.positions), grp);
        }
        auto check = [&](const Bits& want, const std::string& name) {
          Check c = compare(name, hw::DType::F32, step_streams_.at(cm_->host_tensor(name)), want, true, 0);
          c.reference = "models/reference embedding_backward";
          out.push_back(std::move(c));
        };
        check(table, layer->name + ".weight.grad");
        if (layer->learned_positions) check(positions, layer->name + ".positions.grad");
      }
      break;
    }
    case models::LayerKind::LayerNorm:
      out = check_norm(i, *layer);
      break;
    case models::LayerKind::RmsNorm: {
      if (p.phase != Phase::Forward) {
        out = check_norm(i, *layer);
        break;
      }
      // models/reference in the same order (the chain down the column is its feature order).
      namespace ref = models::reference;
      const ref::Format f = ref::format_of(cm_->model.dtype);
      const std::uint64_t d = layer->in_features;
      ref::Tensor x(f, models::Shape{cm_->model.batch, cm_->model.sequence, d});
      const Bits& xb = before_.at(p.operands[0]);
      for (std::size_t k = 0; k < xb.size(); ++k) x.set_bits(k, xb[k]);
      ref::Tensor g(f, ref::vector_shape(d));
      const Bits& gb = data_.host[cm_->host_tensor(layer->name + ".weight")];
      for (std::size_t k = 0; k < gb.size(); ++k) g.set_bits(k, gb[k]);
      const ref::Tensor y = ref::rmsnorm_forward(x, g, layer->epsilon);
      Bits want = bits_of(y);
      Check c = compare(layer->name, dt, gather(p.operands[1]), want, true, 0);
      c.reference = "models/reference rmsnorm_forward";
      out.push_back(std::move(c));
      break;
    }
    case models::LayerKind::Attention: {
      // models/reference in the same order (each query's chains run on one PE).
      namespace ref = models::reference;
      const ref::Format f = ref::format_of(cm_->model.dtype);
      auto tensor = [&](std::uint32_t id) {
        ref::Tensor x(f, models::Shape{cm_->model.batch, cm_->model.sequence, cm_->tensors[id].features});
        const Bits& bits = before_.at(id);
        for (std::size_t k = 0; k < bits.size(); ++k) x.set_bits(k, bits[k]);
        return x;
      };
      auto check = [&](std::uint32_t result, const ref::Tensor& y, const char* reference) {
        Bits want = bits_of(y);
        if (p.phase != Phase::Forward && before_.count(result))  // added to a gradient already there
          for (std::size_t k = 0; k < want.size(); ++k) want[k] = nm::add(dt, before_.at(result)[k], want[k]);
        Check c = compare(cm_->tensors[result].name, dt, gather(result), want, true, 0);
        c.reference = reference;
        out.push_back(std::move(c));
      };
      ref::AttentionShape shape;
      shape.heads = layer->heads;
      shape.kv_heads = layer->kv_heads ? layer->kv_heads : layer->heads;
      shape.causal = layer->causal;
      const auto& ops = p.operands;
      if (p.phase == Phase::Forward) {
        check(ops[3], ref::attention_forward(tensor(ops[0]), tensor(ops[1]), tensor(ops[2]), shape),
              "models/reference attention_forward");
      } else {
        const ref::AttentionGrads g =
            ref::attention_backward(tensor(ops[0]), tensor(ops[1]), tensor(ops[2]), tensor(ops[3]), shape);
        const ref::Tensor* grads[3] = {&g.dq, &g.dk, &g.dv};
        for (int g3 = 0; g3 < 3; ++g3)
          if (ops[4 + g3] != models::compiler::kScratchTensor)
            check(ops[4 + g3], *grads[g3], "models/reference attention_backward");
      }
      break;
    }
    case models::LayerKind::Softmax: {
      // models/reference in the same order (the chains down the column are its feature order).
      namespace ref = models::reference;
      const ref::Format f = ref::format_of(cm_->model.dtype);
      const models::Shape shape{cm_->model.batch, cm_->model.sequence, layer->output.features};
      auto tensor = [&](const Bits& bits) {
        ref::Tensor x(f, shape);
        for (std::size_t k = 0; k < bits.size(); ++k) x.set_bits(k, bits[k]);
        return x;
      };
      const bool fwd = p.phase == Phase::Forward;
      const ref::Tensor y =
          fwd ? ref::softmax_forward(tensor(before_.at(p.operands[0])))
              : ref::softmax_backward(tensor(before_.at(p.operands[0])), tensor(before_.at(p.operands[1])));
      Bits want = bits_of(y);
      const std::uint32_t result = p.operands.back();
      // A gradient another consumer already wrote: the step adds its own in the storage format.
      if (!fwd && before_.count(result))
        for (std::size_t k = 0; k < want.size(); ++k)
          want[k] = nm::add(dt, static_cast<std::uint32_t>(before_.at(result)[k]), static_cast<std::uint32_t>(want[k]));
      Check c = compare(cm_->tensors[result].name, dt, gather(result), want, true, 0);
      c.reference = fwd ? "models/reference softmax_forward" : "models/reference softmax_backward";
      out.push_back(std::move(c));
      break;
    }
    default:
      break;
  }
  return out;
}

std::vector<Check> Executor::check_cross_entropy(std::size_t i, const models::LayerSpec& layer) {
  // models/reference: the wafer's per-token (max, sum, label logit) against the reference's
  // order (max over the row, exp(x - max) summed in feature order), then the loss the host
  // forms from them with the reference's log against cross_entropy_forward; the gradient
  // against cross_entropy_backward. All bit for bit.
  namespace ref = models::reference;
  const models::compiler::LayerProgram& p = cm_->programs.at(i);
  const hw::DType dt = cm_->dtype(), f32 = hw::DType::F32;
  const ref::Format f = ref::format_of(cm_->model.dtype);
  const std::uint64_t V = cm_->model.shape_of(layer.inputs[0]).features, R = cm_->layout.tokens;
  const Bits& xb = before_.at(p.operands[0]);
  const Bits& lb = before_.at(p.operands[1]);
  ref::Tensor logits(f, models::Shape{cm_->model.batch, cm_->model.sequence, V});
  for (std::size_t k = 0; k < xb.size(); ++k) logits.set_bits(k, xb[k]);
  ref::TokenIds labels;
  labels.shape = models::Shape{cm_->model.batch, cm_->model.sequence, 1};
  labels.ids.assign(lb.begin(), lb.end());
  for (std::uint64_t r = 0; r < R; ++r)
    if (labels.ids[r] >= V)
      throw sim::InputError(
          fmt::format("layer '{}': label {} of token {} is outside [0, {})", layer.name, labels.ids[r], r, V));
  std::vector<Check> out;
  if (p.phase == Phase::Forward) {
    auto w = [&](std::uint32_t v) { return dt == f32 ? v : nm::convert(f32, dt, v); };
    Bits want(R * 3);
    for (std::uint64_t r = 0; r < R; ++r) {
      std::uint32_t m = w(xb[r * V]);
      for (std::uint64_t j = 1; j < V; ++j) m = nm::max(f32, m, w(xb[r * V + j]));
      std::uint32_t sum = 0;
      for (std::uint64_t j = 0; j < V; ++j) sum = nm::add(f32, sum, nm::exp(f32, nm::sub(f32, w(xb[r * V + j]), m)));
      want[3 * r] = m;
      want[3 * r + 1] = sum;
      want[3 * r + 2] = w(xb[r * V + labels.ids[r]]);
    }
    const Bits got = gather(p.operands[2]);
    Check c = compare(layer.name + " (max, sum, label logit)", f32, got, want, true, 0);
    c.reference = "models/reference cross_entropy order";
    out.push_back(std::move(c));
    // The loss: the host takes log(sum) (the PE has none), as docs/reference.md describes.
    const ref::Arith A(ref::Format::FP32);
    std::uint32_t total = 0;
    for (std::uint64_t r = 0; r < R; ++r) {
      const auto lse = static_cast<std::uint32_t>(A.add(got[3 * r], A.log(got[3 * r + 1])));
      total = static_cast<std::uint32_t>(A.add(total, A.sub(lse, got[3 * r + 2])));
    }
    const auto loss = static_cast<std::uint32_t>(A.mul(total, A.of(1.0 / static_cast<double>(R))));
    const Bits ref_loss{static_cast<std::uint32_t>(ref::cross_entropy_forward(logits, labels).bits(0))};
    Check l = compare(layer.name + " loss", f32, Bits{loss}, ref_loss, true, 0);
    l.reference = "models/reference cross_entropy_forward";
    l.value = nm::to_double(f32, loss);
    out.push_back(std::move(l));
  } else {
    const ref::Tensor want = ref::cross_entropy_backward(logits, labels);
    Bits wb = bits_of(want);
    Check c = compare(cm_->tensors[p.operands[3]].name, dt, gather(p.operands[3]), wb, true, 0);
    c.reference = "models/reference cross_entropy_backward";
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<Check> Executor::check_norm(std::size_t i, const models::LayerSpec& layer) {
  // models/reference in the same order: the column chains are its feature order, the
  // parameter gradients' chains run over the tokens in row order (through a PE, then west to
  // east). LayerNorm forward and the backward of both norms.
  namespace ref = models::reference;
  const models::compiler::LayerProgram& p = cm_->programs.at(i);
  const bool ln = layer.kind == models::LayerKind::LayerNorm;
  const hw::DType dt = cm_->dtype();
  const ref::Format f = ref::format_of(cm_->model.dtype);
  const std::uint64_t d = layer.in_features;
  auto tensor = [&](const Bits& b, models::Shape shape) {
    ref::Tensor x(f, shape);
    for (std::size_t k = 0; k < b.size(); ++k) x.set_bits(k, b[k]);
    return x;
  };
  const models::Shape act{cm_->model.batch, cm_->model.sequence, d};
  const ref::Tensor x = tensor(before_.at(p.operands[0]), act);
  const ref::Tensor g = tensor(data_.host[cm_->host_tensor(layer.name + ".weight")], ref::vector_shape(d));
  const std::string kind = ln ? "layernorm" : "rmsnorm";
  std::vector<Check> out;
  auto add = [&](const std::string& what, hw::DType t, const Bits& got, const Bits& want, const std::string& fn) {
    Check c = compare(what, t, got, want, true, 0);
    c.reference = "models/reference " + kind + "_" + fn;
    out.push_back(std::move(c));
  };
  if (p.phase == Phase::Forward) {
    const ref::Tensor beta = tensor(data_.host[cm_->host_tensor(layer.name + ".bias")], ref::vector_shape(d));
    add(layer.name, dt, gather(p.operands[1]), bits_of(ref::layernorm_forward(x, g, beta, layer.epsilon)), "forward");
    return out;
  }
  const ref::Tensor dy = tensor(before_.at(p.operands[1]), act);
  const ref::NormGrads want =
      ln ? ref::layernorm_backward(x, g, dy, layer.epsilon) : ref::rmsnorm_backward(x, g, dy, layer.epsilon);
  if (p.phase == Phase::BackwardData) {
    const std::uint32_t dx = p.operands[2];
    const bool acc = std::find(p.reads.begin(), p.reads.end(), dx) != p.reads.end();
    Bits w = bits_of(want.dx);
    if (acc)  // R(W(earlier) + W(this layer's contribution))
      for (std::size_t k = 0; k < w.size(); ++k)
        w[k] = nm::convert(dt, hw::DType::F32,
                           nm::add(hw::DType::F32, nm::convert(hw::DType::F32, dt, before_.at(dx)[k]),
                                   nm::convert(hw::DType::F32, dt, w[k])));
    add(cm_->tensors[dx].name, dt, gather(dx), w, "backward");
  } else {
    // Each row group's chains over its own tokens (the reference's order there); the host adds
    // the groups' sums in fp32, in group order.
    const std::uint32_t G = cm_->layout.groups;
    const std::uint64_t Rg = cm_->layout.group_tokens();
    Bits dgamma, dbeta;
    for (std::uint32_t grp = 0; grp < G; ++grp) {
      ref::NormGrads part;
      if (G == 1) {
        part = want;
      } else {
        const models::Shape gs = group_shape(*cm_, d);
        const ref::Tensor xg = tensor(token_range(before_.at(p.operands[0]), grp * Rg, (grp + 1) * Rg, d), gs);
        const ref::Tensor dyg = tensor(token_range(before_.at(p.operands[1]), grp * Rg, (grp + 1) * Rg, d), gs);
        part =
            ln ? ref::layernorm_backward(xg, g, dyg, layer.epsilon) : ref::rmsnorm_backward(xg, g, dyg, layer.epsilon);
      }
      add_group_partial(dgamma, bits_of(part.dgamma), grp);
      if (ln) add_group_partial(dbeta, bits_of(part.dbeta), grp);
    }
    const std::string gname = layer.name + ".weight.grad";
    add(gname, hw::DType::F32, step_streams_.at(cm_->host_tensor(gname)), dgamma, "backward");
    if (ln) {
      const std::string bname = layer.name + ".bias.grad";
      add(bname, hw::DType::F32, step_streams_.at(cm_->host_tensor(bname)), dbeta, "backward");
    }
  }
  return out;
}

void Executor::add_stats(sim::stats::Group& g) {
  // Steps are known before the run; their groups read results_ when the stats are dumped.
  for (std::size_t i = 0; i < cm_->programs.size(); ++i) {
    const auto& p = cm_->programs[i];
    std::string name = fmt::format("{:03}_{}_{}", i, p.layer, models::compiler::to_string(p.phase));
    for (auto& c : name)
      if (c == '.' || c == '-') c = '_';
    auto& s = g.group(name);
    auto res = [this, k = first_result_ + i]() -> const StepResult* {
      return k < results_.size() ? &results_[k] : nullptr;
    };
    const double hz = cm_->target.wafer.clock.hz;
    const double peak =
        static_cast<double>(cm_->target.wafer.pe_count()) * cm_->target.peak_flops_per_cycle(cm_->dtype());
    s.formula(
        "start_cycle", [res] { return res() ? static_cast<double>(res()->start) : 0.0; }, "cycles",
        "cycle at which the step started", true);
    s.formula(
        "cycles", [res] { return res() ? static_cast<double>(res()->cycles()) : 0.0; }, "cycles",
        "cycles from the step's start to its last PE or edge activity", true);
    s.formula(
        "bound_cycles", [&p] { return static_cast<double>(p.bound.cycles); }, "cycles",
        "analytical lower bound on the step's cycles", true);
    s.formula(
        "flops", [&p] { return static_cast<double>(p.work.flops); }, "FLOP", "useful FLOPs of the step", true);
    s.formula(
        "executed_flops", [res] { return res() ? static_cast<double>(res()->executed_flops) : 0.0; }, "FLOP",
        "FLOPs the PEs executed (partial-sum additions included)", true);
    s.formula(
        "flops_per_second",
        [res, &p, hz] {
          return res() && res()->cycles()
                     ? static_cast<double>(p.work.flops) * hz / static_cast<double>(res()->cycles())
                     : 0.0;
        },
        "FLOP/s", "useful FLOPs per second of simulated time");
    s.formula(
        "peak_fraction",
        [res, &p, peak] {
          return res() && res()->cycles()
                     ? static_cast<double>(p.work.flops) / (static_cast<double>(res()->cycles()) * peak)
                     : 0.0;
        },
        "ratio", "useful FLOPs over the wafer's dense peak for the model's number format in the same cycles");
    s.formula(
        "wavelets_in", [res] { return res() ? static_cast<double>(res()->wavelets_in) : 0.0; }, "wavelets",
        "wavelets the edge driver sent into the wafer", true);
    s.formula(
        "wavelets_out", [res] { return res() ? static_cast<double>(res()->wavelets_out) : 0.0; }, "wavelets",
        "wavelets the edge driver received from the wafer", true);
    for (int k = 0; k < hw::kStallCauses; ++k) {
      const auto cause = static_cast<hw::Stall>(k);
      s.formula(
          fmt::format("stall_{}", hw::stall_name(cause)),
          [res, k] { return res() ? static_cast<double>(res()->stalls[k]) : 0.0; }, "cycles",
          fmt::format("thread-cycles stalled in this step: {}", hw::stall_description(cause)), true);
    }
    add_activity_stats(s, wafer_.stats(), [res]() -> const Activity* { return res() ? &res()->activity : nullptr; });
    s.formula(
        "check_mismatches",
        [res] {
          std::uint64_t n = 0;
          if (res())
            for (const auto& c : res()->checks) n += c.mismatches;
          return static_cast<double>(n);
        },
        "elements", "result elements that differ from the host's expectation", true);
  }
}

}  // namespace wafersim::platforms::runtime
