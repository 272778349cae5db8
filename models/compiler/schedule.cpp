#include "models/compiler/schedule.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "sim/errors.h"

namespace wafersim::models::compiler {

namespace {

// Tensors each kind's backward reads besides the output gradient: inputs by position, and
// whether it reads its own output.
struct Saved {
  std::vector<int> inputs;
  bool output = false;
};

Saved saved_for_backward(LayerKind k) {
  switch (k) {
    case LayerKind::Linear:
    case LayerKind::Gemv:
    case LayerKind::Embedding:
      return {{0}, false};
    case LayerKind::Add:
      return {{}, false};
    case LayerKind::Mul:
    case LayerKind::Swiglu:
      return {{0, 1}, false};
    case LayerKind::Gelu:
    case LayerKind::Silu:
    case LayerKind::Relu:
    case LayerKind::LayerNorm:
    case LayerKind::RmsNorm:
      return {{0}, false};
    case LayerKind::Softmax:
      return {{}, true};
    case LayerKind::Attention:
      return {{0, 1, 2}, false};
    case LayerKind::CrossEntropy:  // its output: (max, sum, label logit) per token
      return {{0, 1}, true};
  }
  return {};
}

bool keeps_map(LayerKind k) {
  switch (k) {
    case LayerKind::Add:
    case LayerKind::Mul:
    case LayerKind::Swiglu:
    case LayerKind::Gelu:
    case LayerKind::Silu:
    case LayerKind::Relu:
    case LayerKind::LayerNorm:
    case LayerKind::RmsNorm:
    case LayerKind::Softmax:
      return true;
    default:
      return false;
  }
}

}  // namespace

Schedule make_schedule(const CompiledModel& cm, bool split_heads) {
  const ModelSpec& m = cm.model;
  const StreamingLayout& l = cm.layout;
  const hw::DType dt = hw_dtype(m.dtype);
  Schedule s;
  std::map<std::string, std::uint32_t> tensor_of;
  // Attention reads q, k and v with each key/value head's features on one row (Heads maps)
  // when there are at least as many key/value heads as rows; else each group's heads are
  // split by dimension over the group's rows (HeadParts maps: the dot products chain down
  // the column).
  std::map<std::string, FeatureMap> maps;
  for (const auto& layer : m.layers) {
    if (layer.kind != LayerKind::Attention) continue;
    const std::uint32_t kv = layer.kv_heads ? layer.kv_heads : layer.heads;
    if (kv < l.slices() && !split_heads) continue;
    const Shape q = m.shape_of(layer.inputs[0]), k = m.shape_of(layer.inputs[1]);
    auto map = [&](std::uint64_t features) {
      return kv >= l.slices() ? FeatureMap::heads(features, l.slices(), kv)
                              : FeatureMap::head_parts(features, l.slices(), kv, q.features / layer.heads);
    };
    maps[layer.inputs[0]] = map(q.features);
    maps[layer.inputs[1]] = map(k.features);
    maps[layer.inputs[2]] = map(k.features);
    maps[layer.name] = map(q.features);
  }
  // A layer that works on each row's slice of its tensors (elementwise, norms, softmax) needs
  // its inputs and output (and so their gradients) in one map. Its output takes its inputs'
  // map when they share one other than even slices (a softmax of attention's output keeps the
  // heads' map), and inputs without a map take its output's (a norm whose output attention
  // reads as q); repeated until nothing changes. A kernel refuses tensors still laid out
  // differently, and the norms and softmax a map whose features do not run in order down the
  // column.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& layer : m.layers) {
      if (!keeps_map(layer.kind) || maps.count(layer.name)) continue;
      const auto it = maps.find(layer.inputs.at(0));
      if (it == maps.end()) continue;
      bool shared = true;
      for (const auto& in : layer.inputs) {
        const auto j = maps.find(in);
        shared = shared && j != maps.end() && j->second == it->second;
      }
      if (shared) {
        maps.emplace(layer.name, it->second);
        changed = true;
      }
    }
    for (auto r = m.layers.rbegin(); r != m.layers.rend(); ++r) {
      const auto it = maps.find(r->name);
      if (!keeps_map(r->kind) || it == maps.end()) continue;
      for (const auto& in : r->inputs)
        if (!maps.count(in)) {
          maps.emplace(in, it->second);
          changed = true;
        }
    }
  }
  auto map_of = [&](const std::string& name, std::uint64_t features) {
    auto it = maps.find(name);
    return it != maps.end() ? it->second : FeatureMap::even(features, l.slices());
  };
  auto add_tensor = [&](const std::string& name, std::uint64_t features, const std::string& map_name) {
    Tensor t;
    t.name = name;
    t.features = features;
    t.map = map_of(map_name, features);
    t.dtype = dt;
    t.bytes = static_cast<std::uint32_t>(t.map.max_count() * l.tokens_per_pe * hw::size_of(dt));
    tensor_of[name] = static_cast<std::uint32_t>(s.tensors.size());
    s.tensors.push_back(t);
    return tensor_of[name];
  };
  auto add_token_tensor = [&](const std::string& name, std::uint32_t width, hw::DType type) {
    Tensor t;
    t.name = name;
    t.width = width;
    t.dtype = type;
    t.bytes = l.tokens_per_pe * width * hw::size_of(type);
    tensor_of[name] = static_cast<std::uint32_t>(s.tensors.size());
    s.tensors.push_back(t);
    return tensor_of[name];
  };
  auto add_host = [&](const std::string& name, std::vector<std::uint64_t> shape, bool gradient) {
    s.host_tensors.push_back({name, std::move(shape), gradient});
  };

  for (const auto& in : m.inputs) {
    const auto id = in.kind == InputSpec::Kind::Activations ? add_tensor(in.name, in.features, in.name)
                                                            : add_token_tensor(in.name, 1, hw::DType::U32);
    s.preloaded.push_back(id);
  }
  std::set<std::string> consumed;
  for (const auto& layer : m.layers) {
    for (const auto& i : layer.inputs) consumed.insert(i);
    if (layer.kind == LayerKind::CrossEntropy)
      add_token_tensor(layer.name, 3, hw::DType::F32);  // per token: max, sum of exp(x - max), label logit
    else
      add_tensor(layer.name, layer.output.features, layer.name);
    switch (layer.kind) {
      case LayerKind::Linear:
      case LayerKind::Gemv:
        if (layer.tied_to.empty()) {
          add_host(layer.name + ".weight", {layer.in_features, layer.features}, false);
          if (cm.options.training) add_host(layer.name + ".weight.grad", {layer.in_features, layer.features}, true);
        }
        if (layer.bias) {
          add_host(layer.name + ".bias", {layer.features}, false);
          if (cm.options.training) add_host(layer.name + ".bias.grad", {layer.features}, true);
        }
        break;
      case LayerKind::Embedding:
        add_host(layer.name + ".weight", {layer.vocabulary, layer.features}, false);
        if (cm.options.training) add_host(layer.name + ".weight.grad", {layer.vocabulary, layer.features}, true);
        if (layer.learned_positions) {
          add_host(layer.name + ".positions", {m.sequence, layer.features}, false);
          if (cm.options.training) add_host(layer.name + ".positions.grad", {m.sequence, layer.features}, true);
        }
        break;
      case LayerKind::LayerNorm:
      case LayerKind::RmsNorm:
        add_host(layer.name + ".weight", {layer.in_features}, false);
        if (cm.options.training) add_host(layer.name + ".weight.grad", {layer.in_features}, true);
        if (layer.kind == LayerKind::LayerNorm) {
          add_host(layer.name + ".bias", {layer.in_features}, false);
          if (cm.options.training) add_host(layer.name + ".bias.grad", {layer.in_features}, true);
        }
        break;
      default:
        break;
    }
  }

  // Forward.
  for (std::uint32_t i = 0; i < m.layers.size(); ++i) {
    const auto& layer = m.layers[i];
    Step st;
    st.layer = layer.name;
    st.index = i;
    st.kind = layer.kind;
    st.phase = Phase::Forward;
    for (const auto& name : layer.inputs) {
      const auto id = tensor_of.at(name);
      st.in.push_back(static_cast<int>(id));
      st.reads.push_back(id);
    }
    st.out = static_cast<int>(tensor_of.at(layer.name));
    st.writes.push_back(static_cast<std::uint32_t>(st.out));
    s.steps.push_back(st);
    if (!consumed.count(layer.name)) s.kept.push_back(static_cast<std::uint32_t>(st.out));
  }
  if (!cm.options.training) return s;

  // Backward: gradients of every layer output; model inputs need none.
  std::set<std::string> inputs;
  for (const auto& in : m.inputs) inputs.insert(in.name);
  std::set<std::string> written;
  for (const auto& layer : m.layers)
    if (layer.kind != LayerKind::CrossEntropy) {
      const auto id = add_tensor(grad_name(layer.name), layer.output.features, layer.name);
      if (!consumed.count(layer.name)) {  // a final output: its gradient comes from the host
        s.preloaded.push_back(id);
        written.insert(grad_name(layer.name));
      }
    }
  for (std::uint32_t i = static_cast<std::uint32_t>(m.layers.size()); i-- > 0;) {
    const auto& layer = m.layers[i];
    Step st;
    st.layer = layer.name;
    st.index = i;
    st.kind = layer.kind;
    st.out = static_cast<int>(tensor_of.at(layer.name));
    for (const auto& name : layer.inputs) st.in.push_back(static_cast<int>(tensor_of.at(name)));
    if (layer.kind != LayerKind::CrossEntropy) st.grad_out = static_cast<int>(tensor_of.at(grad_name(layer.name)));
    std::set<std::string> written_here;
    for (const auto& name : layer.inputs) {
      if (written_here.count(grad_name(name))) {  // the same tensor twice: the second adds
        st.grad_in.push_back(static_cast<int>(tensor_of.at(grad_name(name))));
        st.grad_accumulate.push_back(true);
        continue;
      }
      if (inputs.count(name)) {
        st.grad_in.push_back(-1);
        st.grad_accumulate.push_back(false);
        continue;
      }
      st.grad_in.push_back(static_cast<int>(tensor_of.at(grad_name(name))));
      st.grad_accumulate.push_back(written.count(grad_name(name)) > 0);
      written_here.insert(grad_name(name));
    }
    const Saved saved = saved_for_backward(layer.kind);
    Step data = st;
    data.phase = Phase::BackwardData;
    if (data.grad_out >= 0) data.reads.push_back(static_cast<std::uint32_t>(data.grad_out));
    for (std::size_t k = 0; k < data.grad_in.size(); ++k) {
      if (data.grad_in[k] < 0) continue;
      if (data.grad_accumulate[k]) data.reads.push_back(static_cast<std::uint32_t>(data.grad_in[k]));
      data.writes.push_back(static_cast<std::uint32_t>(data.grad_in[k]));
    }
    const bool weights = layer.kind == LayerKind::Linear || layer.kind == LayerKind::Gemv;
    const bool params = weights || layer.kind == LayerKind::Embedding || layer.kind == LayerKind::LayerNorm ||
                        layer.kind == LayerKind::RmsNorm;
    if (!weights) {
      for (int k : saved.inputs) data.reads.push_back(static_cast<std::uint32_t>(data.in[static_cast<std::size_t>(k)]));
      if (saved.output) data.reads.push_back(static_cast<std::uint32_t>(data.out));
    }
    bool any_grad = false;
    for (int g : data.grad_in) any_grad = any_grad || g >= 0;
    if (any_grad) s.steps.push_back(data);
    for (std::size_t k = 0; k < layer.inputs.size(); ++k)
      if (data.grad_in[k] >= 0) written.insert(grad_name(layer.inputs[k]));
    if (params) {
      Step wg = st;
      wg.phase = Phase::BackwardWeights;
      wg.reads = {static_cast<std::uint32_t>(st.in[0]), static_cast<std::uint32_t>(st.grad_out)};
      s.steps.push_back(wg);
    }
  }
  return s;
}

AttentionArgs attention_args(const Step& step, const LayerSpec& layer, std::uint64_t head_dim, std::uint64_t sequence) {
  AttentionArgs a;
  a.layer = step.layer;
  a.phase = step.phase;
  a.q = static_cast<std::uint32_t>(step.in[0]);
  a.k = static_cast<std::uint32_t>(step.in[1]);
  a.v = static_cast<std::uint32_t>(step.in[2]);
  a.out = static_cast<std::uint32_t>(step.out);
  a.heads = layer.heads;
  a.kv_heads = layer.kv_heads ? layer.kv_heads : layer.heads;
  a.head_dim = head_dim;
  a.sequence = sequence;
  a.causal = layer.causal;
  return a;
}

LayerProgram lower_step(KernelContext& ctx, const CompiledModel& cm, const Step& st) {
  const LayerSpec& layer = cm.model.layers[st.index];
  auto host = [&](const std::string& name) { return cm.host_tensor(name); };
  switch (layer.kind) {
    case LayerKind::Linear:
    case LayerKind::Gemv: {
      const bool tied = !layer.tied_to.empty();
      const std::string wname = (tied ? layer.tied_to : layer.name) + ".weight";
      const std::uint64_t K = layer.in_features, N = layer.features;
      // W[k][n] at k*N + n, or for a head tied to an embedding E[n][k] at n*K + k.
      const std::int64_t sk = tied ? 1 : static_cast<std::int64_t>(N);
      const std::int64_t sn = tied ? static_cast<std::int64_t>(K) : 1;
      if (st.phase == Phase::Forward) {
        MatmulArgs a;
        a.layer = st.layer;
        a.kind = layer.kind;
        a.phase = Phase::Forward;
        a.in = static_cast<std::uint32_t>(st.in[0]);
        a.out = static_cast<std::uint32_t>(st.out);
        a.f_in = K;
        a.f_out = N;
        a.weight = static_cast<std::uint32_t>(host(wname));
        a.sf = sk;
        a.so = sn;
        a.bias = layer.bias ? host(layer.name + ".bias") : -1;
        return lower_matmul(ctx, a);
      }
      if (st.phase == Phase::BackwardData) {
        MatmulArgs a;
        a.layer = st.layer;
        a.kind = layer.kind;
        a.phase = Phase::BackwardData;
        a.in = static_cast<std::uint32_t>(st.grad_out);
        a.out = static_cast<std::uint32_t>(st.grad_in[0]);
        a.accumulate_out = st.grad_accumulate[0];
        a.f_in = N;
        a.f_out = K;
        a.weight = static_cast<std::uint32_t>(host(wname));
        a.sf = sn;
        a.so = sk;
        return lower_matmul(ctx, a);
      }
      WeightGradArgs g;
      g.layer = st.layer;
      g.kind = layer.kind;
      g.x = static_cast<std::uint32_t>(st.in[0]);
      g.dy = static_cast<std::uint32_t>(st.grad_out);
      g.f_in = K;
      g.f_out = N;
      g.grad = static_cast<std::uint32_t>(host(wname + ".grad"));
      g.sf = sk;
      g.so = sn;
      g.bias_grad = layer.bias ? host(layer.name + ".bias.grad") : -1;
      return lower_weight_gradient(ctx, g);
    }
    case LayerKind::Add:
    case LayerKind::Mul:
    case LayerKind::Gelu:
    case LayerKind::Silu:
    case LayerKind::Relu:
    case LayerKind::Swiglu: {
      ElementwiseArgs e;
      e.layer = st.layer;
      e.kind = layer.kind;
      e.phase = st.phase;
      if (st.phase == Phase::Forward) {
        e.program = elementwise_forward(layer.kind);
        for (int i : st.in) e.tensors.push_back(static_cast<std::uint32_t>(i));
        e.tensors.push_back(static_cast<std::uint32_t>(st.out));
      } else {
        e.program = elementwise_backward(layer.kind, st.grad_accumulate);
        e.accumulate = st.grad_accumulate;
        e.tensors.push_back(static_cast<std::uint32_t>(st.grad_out));
        if (layer.kind != LayerKind::Add)
          for (int i : st.in) e.tensors.push_back(static_cast<std::uint32_t>(i));
        for (int g : st.grad_in) e.tensors.push_back(g >= 0 ? static_cast<std::uint32_t>(g) : kScratchTensor);
      }
      return lower_elementwise(ctx, e);
    }
    case LayerKind::RmsNorm:
      if (st.phase == Phase::Forward) {
        NormArgs n;
        n.layer = st.layer;
        n.in = static_cast<std::uint32_t>(st.in[0]);
        n.out = static_cast<std::uint32_t>(st.out);
        n.gamma = static_cast<std::uint32_t>(host(layer.name + ".weight"));
        n.epsilon = layer.epsilon;
        return lower_rmsnorm_forward(ctx, n);
      }
      [[fallthrough]];
    case LayerKind::LayerNorm: {
      const bool ln = layer.kind == LayerKind::LayerNorm;
      NormStepArgs n;
      n.layer = st.layer;
      n.layernorm = ln;
      n.phase = st.phase;
      n.x = static_cast<std::uint32_t>(st.in[0]);
      if (st.phase == Phase::Forward) {
        n.out = static_cast<std::uint32_t>(st.out);
      } else {
        n.dy = static_cast<std::uint32_t>(st.grad_out);
      }
      if (st.phase == Phase::BackwardData) {
        n.dx = static_cast<std::uint32_t>(st.grad_in[0]);
        n.accumulate = st.grad_accumulate[0];
      }
      n.gamma = static_cast<std::uint32_t>(host(layer.name + ".weight"));
      if (ln) n.beta = static_cast<std::uint32_t>(host(layer.name + ".bias"));
      if (st.phase == Phase::BackwardWeights) {
        n.gamma_grad = host(layer.name + ".weight.grad");
        if (ln) n.beta_grad = host(layer.name + ".bias.grad");
      }
      n.epsilon = layer.epsilon;
      return lower_norm(ctx, n);
    }
    case LayerKind::Embedding: {
      if (st.phase == Phase::BackwardData) break;
      {  // The kernel keeps the row's slice of the table (fp32 for the gradient) for the layer;
         // a table too large for that (with learned positions, the position table too) is
        // planned with the host's gather (no code yet).
        const bool fwd = st.phase == Phase::Forward;
        const Tensor& y = cm.tensors.at(static_cast<std::size_t>(fwd ? st.out : st.grad_out));
        const std::uint64_t c = y.map.max_count();
        const std::uint64_t rows = layer.vocabulary + (layer.learned_positions ? cm.model.sequence : 0);
        const std::uint64_t need = rows * c * (fwd ? hw::size_of(y.dtype) : 4) +
                                   (fwd ? 0 : c * cm.layout.tokens_per_pe * 4) +
                                   (layer.learned_positions ? cm.layout.tokens_per_pe * 4 : 0);
        if (need + ctx.sram.in_use() > ctx.sram.capacity()) break;
      }
      EmbeddingArgs e;
      e.layer = st.layer;
      e.fwd = st.phase == Phase::Forward;
      e.ids = static_cast<std::uint32_t>(st.in[0]);
      if (e.fwd)
        e.out = static_cast<std::uint32_t>(st.out);
      else
        e.dy = static_cast<std::uint32_t>(st.grad_out);
      e.table = static_cast<std::uint32_t>(host(layer.name + (e.fwd ? ".weight" : ".weight.grad")));
      e.vocabulary = layer.vocabulary;
      if (layer.learned_positions) {
        e.positions = host(layer.name + (e.fwd ? ".positions" : ".positions.grad"));
        e.sequence = cm.model.sequence;
      }
      return lower_embedding(ctx, e);
    }
    case LayerKind::CrossEntropy: {
      CrossEntropyArgs c;
      c.layer = st.layer;
      c.phase = st.phase;
      c.logits = static_cast<std::uint32_t>(st.in[0]);
      c.labels = static_cast<std::uint32_t>(st.in[1]);
      c.loss = static_cast<std::uint32_t>(st.out);
      if (st.phase == Phase::BackwardData) {
        c.dlogits = static_cast<std::uint32_t>(st.grad_in[0]);
        c.accumulate = st.grad_accumulate[0];
      }
      return lower_cross_entropy(ctx, c);
    }
    case LayerKind::Attention: {
      // PE code for attention (heads whole on rows, or split over a group's rows)
      // when q, k, v and the output have this layer's maps (a tensor that another attention
      // with other head counts also reads has that one's map) and the kernel fits the SRAM.
      const std::uint32_t kv = layer.kv_heads ? layer.kv_heads : layer.heads;
      const std::uint64_t hd = ctx.tensors.at(static_cast<std::size_t>(st.in[0])).features / layer.heads;
      auto expected = [&](std::uint64_t features) {
        return kv >= ctx.layout.slices() ? FeatureMap::heads(features, ctx.layout.slices(), kv)
                                         : FeatureMap::head_parts(features, ctx.layout.slices(), kv, hd);
      };
      bool maps_fit = true;
      for (int id : {st.in[0], st.in[1], st.in[2], st.out}) {
        const Tensor& x = ctx.tensors.at(static_cast<std::size_t>(id));
        maps_fit = maps_fit && x.map == expected(x.features);
      }
      if (!maps_fit) break;
      AttentionArgs a = attention_args(
          st, layer, ctx.tensors.at(static_cast<std::size_t>(st.in[0])).features / layer.heads, cm.model.sequence);
      if (st.phase != Phase::Forward) {
        a.dout = static_cast<std::uint32_t>(st.grad_out);
        auto grad = [&](std::size_t i) {
          return st.grad_in[i] >= 0 ? static_cast<std::uint32_t>(st.grad_in[i]) : kScratchTensor;
        };
        a.dq = grad(0);
        a.dk = grad(1);
        a.dv = grad(2);
        a.accumulate_dq = st.grad_accumulate[0];
        a.accumulate_dk = st.grad_accumulate[1];
        a.accumulate_dv = st.grad_accumulate[2];
      }
      if (ctx.emit) return lower_attention(ctx, a);
      // Mapping only: a kernel whose buffers (the keys and values of a whole sample) do not
      // fit is planned analytically instead (streamed keys, docs/compiler.md).
      const SramArena before = ctx.sram;
      try {
        return lower_attention(ctx, a);
      } catch (const sim::InputError&) {
        ctx.sram = before;  // as if the kernel had not been tried (its peak too)
        ctx.scratch_addrs.clear();
      }
      break;
    }
    case LayerKind::Softmax: {
      SoftmaxArgs a;
      a.layer = st.layer;
      a.phase = st.phase;
      if (st.phase == Phase::Forward) {
        a.x = static_cast<std::uint32_t>(st.in[0]);
        a.out = static_cast<std::uint32_t>(st.out);
      } else {
        a.y = static_cast<std::uint32_t>(st.out);
        a.dy = static_cast<std::uint32_t>(st.grad_out);
        a.dx = static_cast<std::uint32_t>(st.grad_in[0]);
        a.accumulate = st.grad_accumulate[0];
      }
      return lower_softmax(ctx, a);
    }
    default:
      break;
  }
  return plan_without_code(ctx, cm, st);
}

Lifetimes tensor_lifetimes(const Schedule& sched) {
  const std::size_t n_steps = sched.steps.size();
  Lifetimes l{std::vector<int>(sched.tensors.size(), -1), std::vector<int>(sched.tensors.size(), -1)};
  for (std::size_t i = 0; i < n_steps; ++i) {
    auto touch = [&](std::uint32_t t) {
      if (l.first[t] < 0) l.first[t] = static_cast<int>(i);
      l.last[t] = static_cast<int>(i);
    };
    for (auto t : sched.steps[i].reads) touch(t);
    for (auto t : sched.steps[i].writes) touch(t);
  }
  for (auto t : sched.preloaded) l.first[t] = 0;
  for (auto t : sched.kept) l.last[t] = static_cast<int>(n_steps);
  return l;
}

}  // namespace wafersim::models::compiler
