#include "models/reference/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "models/reference/attention.h"
#include "models/reference/cross_entropy.h"
#include "models/reference/elementwise.h"
#include "models/reference/embedding.h"
#include "models/reference/linear.h"
#include "models/reference/norms.h"
#include "models/reference/random.h"
#include "models/reference/softmax.h"
#include "models/reference/tolerance.h"
#include "sim/errors.h"

namespace wafersim::models::reference {
namespace {

std::string param(const LayerSpec& l, const char* what) { return l.name + "." + what; }

bool is_linear(const LayerSpec& l) { return l.kind == LayerKind::Linear || l.kind == LayerKind::Gemv; }

Activation activation_of(LayerKind k) {
  if (k == LayerKind::Gelu) return Activation::Gelu;
  if (k == LayerKind::Silu) return Activation::Silu;
  return Activation::Relu;
}

// w^T of a [1, V, d] table: the [1, d, V] weights of a linear layer tied to it.
Tensor transposed(const Tensor& t) {
  Tensor out(t.format(), matrix_shape(t.cols(), t.rows()));
  for (std::uint64_t r = 0; r < t.rows(); ++r)
    for (std::uint64_t c = 0; c < t.cols(); ++c) out.set_bits(out.at(c, r), t.bits(t.at(r, c)));
  return out;
}

// Gradient contributions of one tensor, keyed by (reader position, input position) so they can
// be summed in forward order whatever order the backward produced them in.
using Key = std::pair<std::size_t, std::size_t>;
using Contributions = std::map<std::string, std::vector<std::pair<Key, Tensor>>>;

Tensor total(Contributions& c, const std::string& name, Format s, const Shape& shape) {
  auto it = c.find(name);
  if (it == c.end() || it->second.empty()) return Tensor(s, shape);
  auto& list = it->second;
  std::sort(list.begin(), list.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  if (list.size() == 1) return list.front().second;
  const Format a = accumulation_of(s);
  const Arith A(a);
  Tensor acc = list.front().second.converted(a);
  for (std::size_t k = 1; k < list.size(); ++k)
    for (std::size_t i = 0; i < acc.size(); ++i) acc.set_bits(i, A.add(acc.bits(i), A.from(s, list[k].second.bits(i))));
  return acc.converted(s);
}

Tensor sum_into(const Tensor& a, const Tensor& b) {
  const Arith A(a.format());
  Tensor out = a;
  for (std::size_t i = 0; i < out.size(); ++i) out.set_bits(i, A.add(a.bits(i), b.bits(i)));
  return out;
}

}  // namespace

std::uint64_t Inputs::batch() const {
  if (!activations.empty()) return activations.begin()->second.shape().batch;
  if (!ids.empty()) return ids.begin()->second.shape.batch;
  return 0;
}

Inputs Inputs::batch_slice(std::uint64_t first, std::uint64_t count) const {
  Inputs out;
  for (const auto& [name, t] : activations) out.activations.emplace(name, t.batch_slice(first, count));
  for (const auto& [name, t] : ids) out.ids.emplace(name, t.batch_slice(first, count));
  return out;
}

Model::Model(ModelSpec spec) : Model(spec, format_of(spec.dtype)) {}

Model::Model(ModelSpec spec, Format format) : spec_(std::move(spec)), format_(format) {
  for (const LayerSpec& l : spec_.layers) {
    switch (l.kind) {
      case LayerKind::Embedding:
        parameters_.push_back({param(l, "weight"), l.name, matrix_shape(l.vocabulary, l.features), -0.5, 0.5});
        if (l.learned_positions)
          parameters_.push_back({param(l, "positions"), l.name, matrix_shape(spec_.sequence, l.features), -0.1, 0.1});
        break;
      case LayerKind::Linear:
      case LayerKind::Gemv: {
        const double bound = 1.0 / std::sqrt(static_cast<double>(l.in_features));
        if (l.tied_to.empty())
          parameters_.push_back({param(l, "weight"), l.name, matrix_shape(l.in_features, l.features), -bound, bound});
        if (l.bias) parameters_.push_back({param(l, "bias"), l.name, vector_shape(l.features), 0, 0});
        break;
      }
      case LayerKind::LayerNorm:
        parameters_.push_back({param(l, "gamma"), l.name, vector_shape(l.in_features), 1, 1});
        parameters_.push_back({param(l, "beta"), l.name, vector_shape(l.in_features), 0, 0});
        break;
      case LayerKind::RmsNorm:
        parameters_.push_back({param(l, "gamma"), l.name, vector_shape(l.in_features), 1, 1});
        break;
      default:
        break;
    }
  }
}

TensorMap Model::initial_parameters(std::uint64_t seed) const {
  TensorMap out;
  const Format m = master_format();
  for (const ParameterInfo& p : parameters_) {
    if (p.init_lo == p.init_hi)
      out.emplace(p.name, Tensor::filled(m, p.shape, p.init_lo));
    else
      out.emplace(p.name, Tensor::uniform(m, p.shape, p.init_lo, p.init_hi, derive_seed(seed, p.name)));
  }
  return out;
}

namespace {

// The tensors one pass reads: stored parameters, inputs and layer outputs.
class Scope {
 public:
  Scope(const ModelSpec& spec, const std::vector<ParameterInfo>& params, Format s, const TensorMap& masters,
        const Inputs& inputs)
      : inputs_(inputs) {
    batch_ = 0;
    for (const InputSpec& in : spec.inputs) {
      Shape shape;
      if (in.kind == InputSpec::Kind::Activations) {
        auto it = inputs.activations.find(in.name);
        if (it == inputs.activations.end())
          throw sim::InputError(fmt::format("reference: model '{}' needs activations '{}'", spec.name, in.name));
        if (it->second.format() != s)
          throw sim::InputError(fmt::format("reference: input '{}' is {}, the model computes in {}", in.name,
                                            to_string(it->second.format()), to_string(s)));
        shape = it->second.shape();
        if (shape.features != in.features)
          throw sim::InputError(
              fmt::format("reference: input '{}' has {} features, expected {}", in.name, shape.features, in.features));
      } else {
        auto it = inputs.ids.find(in.name);
        if (it == inputs.ids.end())
          throw sim::InputError(fmt::format("reference: model '{}' needs {} '{}'", spec.name,
                                            in.kind == InputSpec::Kind::Tokens ? "tokens" : "labels", in.name));
        shape = it->second.shape;
        if (it->second.ids.size() != shape.rows())
          throw sim::InputError(fmt::format("reference: input '{}' holds {} ids for [{}, {}]", in.name,
                                            it->second.ids.size(), shape.batch, shape.sequence));
      }
      if (shape.sequence != spec.sequence)
        throw sim::InputError(
            fmt::format("reference: input '{}' has sequence {}, the model {}", in.name, shape.sequence, spec.sequence));
      if (batch_ == 0) batch_ = shape.batch;
      if (shape.batch != batch_ || batch_ == 0)
        throw sim::InputError(
            fmt::format("reference: input '{}' has batch {}, other inputs {}", in.name, shape.batch, batch_));
    }
    for (const ParameterInfo& p : params) {
      auto it = masters.find(p.name);
      if (it == masters.end()) throw sim::InputError(fmt::format("reference: parameter '{}' is missing", p.name));
      if (!(it->second.shape() == p.shape))
        throw sim::InputError(fmt::format("reference: parameter '{}' has shape {}, expected {}", p.name,
                                          to_string(it->second.shape()), to_string(p.shape)));
      stored_.emplace(p.name, it->second.converted(s));
    }
  }

  [[nodiscard]] std::uint64_t batch() const { return batch_; }
  [[nodiscard]] const Tensor& param(const std::string& name) const { return stored_.at(name); }
  [[nodiscard]] const Tensor* optional(const std::string& name) const {
    auto it = stored_.find(name);
    return it == stored_.end() ? nullptr : &it->second;
  }
  // The weights a linear layer multiplies by: its own, or its embedding's transposed.
  [[nodiscard]] Tensor weights(const LayerSpec& l) const {
    if (l.tied_to.empty()) return param(l.name + ".weight");
    return transposed(param(l.tied_to + ".weight"));
  }
  [[nodiscard]] const Tensor& act(const std::string& name, const TensorMap& values) const {
    auto it = values.find(name);
    if (it != values.end()) return it->second;
    return inputs_.activations.at(name);
  }
  [[nodiscard]] const TokenIds& ids(const std::string& name) const { return inputs_.ids.at(name); }

 private:
  const Inputs& inputs_;
  std::uint64_t batch_ = 0;
  TensorMap stored_;
};

}  // namespace

Forward Model::forward(const TensorMap& parameters, const Inputs& inputs) const {
  const Scope sc(spec_, parameters_, format_, parameters, inputs);
  const Format a = master_format();
  const Arith A(a);
  Forward f;
  f.loss = Tensor(a, vector_shape(1));
  for (const LayerSpec& l : spec_.layers) {
    const auto& in = l.inputs;
    auto x = [&](std::size_t i) -> const Tensor& { return sc.act(in[i], f.values); };
    Tensor y;
    switch (l.kind) {
      case LayerKind::Embedding:
        y = embedding_forward(sc.ids(in[0]), sc.param(l.name + ".weight"), sc.optional(l.name + ".positions"));
        break;
      case LayerKind::Linear:
      case LayerKind::Gemv:
        y = linear_forward(x(0), sc.weights(l), sc.optional(l.name + ".bias"));
        break;
      case LayerKind::Add:
        y = add_forward(x(0), x(1));
        break;
      case LayerKind::Mul:
        y = mul_forward(x(0), x(1));
        break;
      case LayerKind::Gelu:
      case LayerKind::Silu:
      case LayerKind::Relu:
        y = activation_forward(activation_of(l.kind), x(0));
        break;
      case LayerKind::Swiglu:
        y = swiglu_forward(x(0), x(1));
        break;
      case LayerKind::LayerNorm:
        y = layernorm_forward(x(0), sc.param(l.name + ".gamma"), sc.param(l.name + ".beta"), l.epsilon);
        break;
      case LayerKind::RmsNorm:
        y = rmsnorm_forward(x(0), sc.param(l.name + ".gamma"), l.epsilon);
        break;
      case LayerKind::Softmax:
        y = softmax_forward(x(0));
        break;
      case LayerKind::Attention:
        y = attention_forward(x(0), x(1), x(2), AttentionShape{l.heads, l.kv_heads, l.causal});
        break;
      case LayerKind::CrossEntropy:
        y = cross_entropy_forward(x(0), sc.ids(in[1]));
        f.loss.set_bits(0, A.add(f.loss.bits(0), y.bits(0)));
        break;
    }
    f.values.emplace(l.name, std::move(y));
  }
  return f;
}

Gradients Model::backward(const TensorMap& parameters, const Inputs& inputs, const Forward& fwd,
                          const TensorMap& seeds) const {
  const Scope sc(spec_, parameters_, format_, parameters, inputs);
  const Format s = format_;
  Gradients g;
  Contributions c;
  // Seeds come before every reader (position 0); layer i reads at position i + 1.
  for (const auto& [name, t] : seeds) c[name].push_back({{0, 0}, t});
  auto push = [&](const std::string& name, std::size_t layer, std::size_t input, Tensor t) {
    c[name].push_back({{layer + 1, input}, std::move(t)});
  };
  std::map<std::string, std::vector<std::pair<std::size_t, Tensor>>> tied;  // embedding -> (layer, dW^T)
  for (std::size_t li = spec_.layers.size(); li-- > 0;) {
    const LayerSpec& l = spec_.layers[li];
    const auto& in = l.inputs;
    auto x = [&](std::size_t i) -> const Tensor& { return sc.act(in[i], fwd.values); };
    if (l.kind == LayerKind::CrossEntropy) {
      push(in[0], li, 0, cross_entropy_backward(x(0), sc.ids(in[1])));
      continue;
    }
    const Tensor dy = total(c, l.name, s, fwd.values.at(l.name).shape());
    g.activations[l.name] = dy;
    switch (l.kind) {
      case LayerKind::Embedding: {
        const Tensor* pos = sc.optional(l.name + ".positions");
        EmbeddingGrads eg = embedding_backward(sc.ids(in[0]), dy, l.vocabulary, pos ? pos->rows() : 0);
        Tensor table = std::move(eg.table);
        auto it = tied.find(l.name);
        if (it != tied.end()) {
          std::sort(it->second.begin(), it->second.end(),
                    [](const auto& p, const auto& q) { return p.first < q.first; });
          for (const auto& [layer, t] : it->second) table = sum_into(table, t);
        }
        g.parameters[l.name + ".weight"] = std::move(table);
        if (pos) g.parameters[l.name + ".positions"] = std::move(eg.positions);
        break;
      }
      case LayerKind::Linear:
      case LayerKind::Gemv: {
        LinearGrads lg = linear_backward(x(0), sc.weights(l), dy, l.bias);
        push(in[0], li, 0, std::move(lg.dx));
        if (l.tied_to.empty())
          g.parameters[l.name + ".weight"] = std::move(lg.dw);
        else
          tied[l.tied_to].push_back({li, transposed(lg.dw)});
        if (l.bias) g.parameters[l.name + ".bias"] = std::move(lg.db);
        break;
      }
      case LayerKind::Add: {
        PairGrads pg = add_backward(dy);
        push(in[0], li, 0, std::move(pg.da));
        push(in[1], li, 1, std::move(pg.db));
        break;
      }
      case LayerKind::Mul:
      case LayerKind::Swiglu: {
        PairGrads pg = l.kind == LayerKind::Mul ? mul_backward(x(0), x(1), dy) : swiglu_backward(x(0), x(1), dy);
        push(in[0], li, 0, std::move(pg.da));
        push(in[1], li, 1, std::move(pg.db));
        break;
      }
      case LayerKind::Gelu:
      case LayerKind::Silu:
      case LayerKind::Relu:
        push(in[0], li, 0, activation_backward(activation_of(l.kind), x(0), dy));
        break;
      case LayerKind::LayerNorm:
      case LayerKind::RmsNorm: {
        const bool layer = l.kind == LayerKind::LayerNorm;
        NormGrads ng = layer ? layernorm_backward(x(0), sc.param(l.name + ".gamma"), dy, l.epsilon)
                             : rmsnorm_backward(x(0), sc.param(l.name + ".gamma"), dy, l.epsilon);
        push(in[0], li, 0, std::move(ng.dx));
        g.parameters[l.name + ".gamma"] = std::move(ng.dgamma);
        if (layer) g.parameters[l.name + ".beta"] = std::move(ng.dbeta);
        break;
      }
      case LayerKind::Softmax:
        push(in[0], li, 0, softmax_backward(fwd.values.at(l.name), dy));
        break;
      case LayerKind::Attention: {
        AttentionGrads ag = attention_backward(x(0), x(1), x(2), dy, AttentionShape{l.heads, l.kv_heads, l.causal});
        push(in[0], li, 0, std::move(ag.dq));
        push(in[1], li, 1, std::move(ag.dk));
        push(in[2], li, 2, std::move(ag.dv));
        break;
      }
      case LayerKind::CrossEntropy:
        break;
    }
  }
  for (const InputSpec& in : spec_.inputs)
    if (in.kind == InputSpec::Kind::Activations) {
      const Tensor& t = inputs.activations.at(in.name);
      g.activations[in.name] = total(c, in.name, s, t.shape());
    }
  return g;
}

std::map<std::string, std::vector<double>> Model::row_order_tolerance(const Inputs& inputs, const Forward& fwd,
                                                                      const Gradients& grads) const {
  const Format a = master_format();
  // Per parameter: sum of |terms| and their count, accumulated over every reduction into it.
  std::map<std::string, std::vector<double>> sum_abs;
  std::map<std::string, std::uint64_t> terms;
  auto add_terms = [&](const std::string& name, std::size_t n, std::uint64_t count) -> std::vector<double>& {
    auto& v = sum_abs[name];
    if (v.empty()) v.assign(n, 0.0);
    terms[name] += count;
    return v;
  };
  auto act = [&](const std::string& name) -> const Tensor& {
    auto it = fwd.values.find(name);
    return it != fwd.values.end() ? it->second : inputs.activations.at(name);
  };
  for (const LayerSpec& l : spec_.layers) {
    if (!l.has_weights() && l.tied_to.empty()) continue;
    const Tensor& dy = grads.activations.at(l.name);
    const std::uint64_t R = dy.rows(), d = dy.cols();
    if (l.kind == LayerKind::Embedding) {
      const TokenIds& tok = inputs.ids.at(l.inputs[0]);
      auto& t = add_terms(l.name + ".weight", l.vocabulary * d, R);
      for (std::uint64_t r = 0; r < R; ++r)
        for (std::uint64_t j = 0; j < d; ++j) t[tok.ids[r] * d + j] += std::fabs(dy.value(dy.at(r, j)));
      if (l.learned_positions) {
        auto& p = add_terms(l.name + ".positions", spec_.sequence * d, dy.shape().batch);
        for (std::uint64_t r = 0; r < R; ++r)
          for (std::uint64_t j = 0; j < d; ++j)
            p[(r % dy.shape().sequence) * d + j] += std::fabs(dy.value(dy.at(r, j)));
      }
    } else if (is_linear(l)) {
      const Tensor& x = act(l.inputs[0]);
      const std::uint64_t K = x.cols();
      const bool tied = !l.tied_to.empty();
      auto& w = add_terms(tied ? l.tied_to + ".weight" : l.name + ".weight", K * d, R);
      for (std::uint64_t r = 0; r < R; ++r)
        for (std::uint64_t k = 0; k < K; ++k)
          for (std::uint64_t n = 0; n < d; ++n) {
            const double term = std::fabs(x.value(x.at(r, k)) * dy.value(dy.at(r, n)));
            w[tied ? n * K + k : k * d + n] += term;
          }
      if (l.bias) {
        auto& b = add_terms(l.name + ".bias", d, R);
        for (std::uint64_t r = 0; r < R; ++r)
          for (std::uint64_t n = 0; n < d; ++n) b[n] += std::fabs(dy.value(dy.at(r, n)));
      }
    } else if (l.kind == LayerKind::LayerNorm || l.kind == LayerKind::RmsNorm) {
      const bool layer = l.kind == LayerKind::LayerNorm;
      const Tensor& x = act(l.inputs[0]);
      auto& gm = add_terms(l.name + ".gamma", d, R);
      for (std::uint64_t r = 0; r < R; ++r) {
        double mean = 0, sq = 0;
        for (std::uint64_t j = 0; j < d; ++j) mean += x.value(x.at(r, j));
        mean = layer ? mean / static_cast<double>(d) : 0.0;
        for (std::uint64_t j = 0; j < d; ++j) sq += (x.value(x.at(r, j)) - mean) * (x.value(x.at(r, j)) - mean);
        const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(d) + l.epsilon);
        for (std::uint64_t j = 0; j < d; ++j)
          gm[j] += std::fabs(dy.value(dy.at(r, j)) * (x.value(x.at(r, j)) - mean) * rstd);
      }
      if (layer) {
        auto& bt = add_terms(l.name + ".beta", d, R);
        for (std::uint64_t r = 0; r < R; ++r)
          for (std::uint64_t j = 0; j < d; ++j) bt[j] += std::fabs(dy.value(dy.at(r, j)));
      }
    }
  }
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, sums] : sum_abs) {
    const Tensor& gt = grads.parameters.at(name);
    std::vector<double> v(sums.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = reduction_tolerance(a, a, terms[name], sums[i], gt.value(i));
    out.emplace(name, std::move(v));
  }
  return out;
}

}  // namespace wafersim::models::reference
