#include "models/model_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace wafersim::generated {
std::vector<std::pair<std::string_view, std::string_view>> model_presets();
}

namespace wafersim::models {
using sim::config::Section;

const char* to_string(DType d) {
  switch (d) {
    case DType::FP16:
      return "fp16";
    case DType::BF16:
      return "bf16";
    case DType::FP32:
      return "fp32";
  }
  return "?";
}

std::uint32_t bytes_of(DType d) { return d == DType::FP32 ? 4 : 2; }

namespace {

struct KindInfo {
  LayerKind kind;
  const char* name;
  int inputs;                  // exact number of inputs
  std::set<std::string> keys;  // keys that apply besides name, kind, inputs
};

const std::vector<KindInfo>& kinds() {
  static const std::vector<KindInfo> k{
      {LayerKind::Embedding, "embedding", 1, {"features", "vocabulary", "learned_positions"}},
      {LayerKind::Linear, "linear", 1, {"features", "bias", "tied_to"}},
      {LayerKind::Gemv, "gemv", 1, {"features", "bias"}},
      {LayerKind::Add, "add", 2, {}},
      {LayerKind::Mul, "mul", 2, {}},
      {LayerKind::Gelu, "gelu", 1, {}},
      {LayerKind::Silu, "silu", 1, {}},
      {LayerKind::Relu, "relu", 1, {}},
      {LayerKind::Swiglu, "swiglu", 2, {}},
      {LayerKind::LayerNorm, "layernorm", 1, {"epsilon"}},
      {LayerKind::RmsNorm, "rmsnorm", 1, {"epsilon"}},
      {LayerKind::Softmax, "softmax", 1, {}},
      {LayerKind::Attention, "attention", 3, {"heads", "kv_heads", "causal"}},
      {LayerKind::CrossEntropy, "cross_entropy", 2, {}},
  };
  return k;
}

const KindInfo& info(LayerKind kind) {
  for (const auto& k : kinds())
    if (k.kind == kind) return k;
  return kinds().front();
}

DType dtype_of(const std::string& s) {
  if (s == "fp32") return DType::FP32;
  if (s == "bf16") return DType::BF16;
  return DType::FP16;
}

// Builds the layer graph of a pre-norm decoder-only transformer.
void expand_transformer(ModelSpec& m) {
  const TransformerConfig& t = *m.transformer;
  const std::uint64_t hd = t.d_model / t.heads;
  const LayerKind norm = t.norm == "rmsnorm" ? LayerKind::RmsNorm : LayerKind::LayerNorm;
  m.inputs = {{"tokens", InputSpec::Kind::Tokens, 0}, {"labels", InputSpec::Kind::Labels, 0}};
  auto add = [&](std::string name, LayerKind kind, std::vector<std::string> inputs) -> LayerSpec& {
    LayerSpec l;
    l.name = std::move(name);
    l.kind = kind;
    l.inputs = std::move(inputs);
    m.layers.push_back(std::move(l));
    return m.layers.back();
  };
  auto linear = [&](std::string name, const std::string& in, std::uint64_t n) {
    auto& l = add(std::move(name), LayerKind::Linear, {in});
    l.features = n;
    l.bias = t.bias;
  };
  auto& emb = add("embed", LayerKind::Embedding, {"tokens"});
  emb.features = t.d_model;
  emb.vocabulary = t.vocabulary;
  emb.learned_positions = t.positions == "learned";
  std::string x = "embed";
  for (std::uint64_t i = 0; i < t.layers; ++i) {
    const std::string p = fmt::format("h{}.", i);
    add(p + "ln1", norm, {x});
    linear(p + "q", p + "ln1", t.heads * hd);
    linear(p + "k", p + "ln1", t.kv_heads * hd);
    linear(p + "v", p + "ln1", t.kv_heads * hd);
    auto& at = add(p + "attn", LayerKind::Attention, {p + "q", p + "k", p + "v"});
    at.heads = static_cast<std::uint32_t>(t.heads);
    at.kv_heads = static_cast<std::uint32_t>(t.kv_heads);
    at.causal = t.causal;
    linear(p + "o", p + "attn", t.d_model);
    std::string mlp_in = p + "ln2";
    if (t.parallel_residual) {
      mlp_in = p + "ln1";
    } else {
      add(p + "res1", LayerKind::Add, {x, p + "o"});
      add(p + "ln2", norm, {p + "res1"});
    }
    std::string act;
    if (t.activation == "swiglu") {
      linear(p + "gate", mlp_in, t.d_ff);
      linear(p + "up", mlp_in, t.d_ff);
      add(p + "act", LayerKind::Swiglu, {p + "gate", p + "up"});
    } else {
      linear(p + "fc1", mlp_in, t.d_ff);
      LayerKind a = t.activation == "relu"   ? LayerKind::Relu
                    : t.activation == "silu" ? LayerKind::Silu
                                             : LayerKind::Gelu;
      add(p + "act", a, {p + "fc1"});
    }
    linear(p + "fc2", p + "act", t.d_model);
    if (t.parallel_residual) {
      add(p + "res1", LayerKind::Add, {x, p + "o"});
      add(p + "res2", LayerKind::Add, {p + "res1", p + "fc2"});
    } else {
      add(p + "res2", LayerKind::Add, {p + "res1", p + "fc2"});
    }
    x = p + "res2";
  }
  add("ln_f", norm, {x});
  auto& head = add("head", LayerKind::Linear, {"ln_f"});
  head.features = t.vocabulary;
  head.bias = false;
  if (t.tied_embeddings) head.tied_to = "embed";
  add("loss", LayerKind::CrossEntropy, {"head", "labels"});
}

// Computes shapes and checks the graph; errors point at the layer in `sections` when given.
void check_graph(ModelSpec& m, std::vector<Section>* sections, Section& root) {
  std::map<std::string, Shape> shapes;
  std::map<std::string, InputSpec::Kind> input_kinds;
  for (const auto& in : m.inputs) {
    Shape s{m.batch, m.sequence, in.kind == InputSpec::Kind::Activations ? in.features : 0};
    shapes[in.name] = s;
    input_kinds[in.name] = in.kind;
  }
  auto fail = [&](std::size_t i, const std::string& key, const std::string& msg) {
    if (sections && i < sections->size())
      (*sections)[i].error(key, msg);
    else
      root.error("transformer", fmt::format("layer '{}': {}", m.layers[i].name, msg));
  };
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    LayerSpec& l = m.layers[i];
    if (shapes.count(l.name)) {
      fail(i, "name", fmt::format("layer name '{}' is already used", l.name));
      continue;
    }
    const KindInfo& k = info(l.kind);
    if (static_cast<int>(l.inputs.size()) != k.inputs) {
      fail(i, "inputs", fmt::format("a {} layer takes {} input(s), found {}", k.name, k.inputs, l.inputs.size()));
      continue;
    }
    std::vector<Shape> in;
    bool ok = true;
    for (const auto& name : l.inputs) {
      auto it = shapes.find(name);
      if (it == shapes.end()) {
        std::vector<std::string> known;
        for (const auto& [n, s] : shapes) known.push_back(n);
        std::string hint = sim::config::closest_match(name, known);
        fail(i, "inputs",
             fmt::format("unknown input '{}' (inputs must be model inputs or earlier layers){}", name,
                         hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
        ok = false;
        break;
      }
      in.push_back(it->second);
    }
    if (!ok) continue;
    auto is_tokens = [&](std::size_t j) {
      auto it = input_kinds.find(l.inputs[j]);
      return it != input_kinds.end() && it->second != InputSpec::Kind::Activations;
    };
    Shape out = in[0];
    switch (l.kind) {
      case LayerKind::Embedding:
        if (!is_tokens(0)) fail(i, "inputs", "an embedding takes token ids (an input of kind 'tokens')");
        if (l.features == 0 || l.vocabulary == 0) fail(i, "features", "an embedding needs features and vocabulary");
        out.features = l.features;
        break;
      case LayerKind::Linear:
      case LayerKind::Gemv:
        if (in[0].features == 0) fail(i, "inputs", "a linear layer takes activations, not token ids");
        if (l.features == 0) fail(i, "features", "expected the number of output features (features: N)");
        if (l.kind == LayerKind::Gemv && in[0].rows() != 1)
          fail(i, "kind", fmt::format("a gemv takes one row (batch x sequence = 1), found {}", in[0].rows()));
        if (!l.tied_to.empty()) {
          const LayerSpec* e = m.find(l.tied_to);
          if (!e || e->kind != LayerKind::Embedding)
            fail(i, "tied_to", fmt::format("'{}' is not an earlier embedding layer", l.tied_to));
          else if (e->vocabulary != l.features || e->features != in[0].features)
            fail(i, "tied_to", "tied weights must be vocabulary x features of the embedding");
        }
        l.in_features = in[0].features;
        out.features = l.features;
        break;
      case LayerKind::Add:
      case LayerKind::Mul:
      case LayerKind::Swiglu:
        if (!(in[0] == in[1]))
          fail(i, "inputs",
               fmt::format("inputs '{}' and '{}' differ in shape ({} vs {} features)", l.inputs[0], l.inputs[1],
                           in[0].features, in[1].features));
        break;
      case LayerKind::LayerNorm:
      case LayerKind::RmsNorm:
        l.in_features = in[0].features;
        [[fallthrough]];
      case LayerKind::Gelu:
      case LayerKind::Silu:
      case LayerKind::Relu:
      case LayerKind::Softmax:
        if (in[0].features == 0) fail(i, "inputs", "expected activations, found token ids");
        break;
      case LayerKind::Attention: {
        if (l.heads == 0) {
          fail(i, "heads", "an attention layer needs heads");
          break;
        }
        if (l.kv_heads == 0) l.kv_heads = l.heads;
        if (l.heads % l.kv_heads != 0)
          fail(i, "kv_heads", fmt::format("{} heads are not a multiple of {} kv_heads", l.heads, l.kv_heads));
        if (in[0].features % l.heads != 0)
          fail(i, "heads", fmt::format("{} query features do not split into {} heads", in[0].features, l.heads));
        std::uint64_t hd = in[0].features / l.heads;
        if (in[1].features != hd * l.kv_heads || in[2].features != hd * l.kv_heads)
          fail(i, "inputs",
               fmt::format("k and v need {} features ({} kv heads x {}), found {} and {}", hd * l.kv_heads, l.kv_heads,
                           hd, in[1].features, in[2].features));
        l.in_features = hd;
        break;
      }
      case LayerKind::CrossEntropy:
        if (!is_tokens(1)) fail(i, "inputs", "cross_entropy takes logits and an input of kind 'labels'");
        out.features = 1;
        break;
    }
    shapes[l.name] = out;
    l.output = out;
  }
}

}  // namespace

const char* to_string(LayerKind k) { return info(k).name; }

std::uint64_t LayerSpec::parameters() const {
  switch (kind) {
    case LayerKind::Embedding:
      return vocabulary * features + (learned_positions ? output.sequence * features : 0);
    case LayerKind::Linear:
    case LayerKind::Gemv:
      return (tied_to.empty() ? in_features * features : 0) + (bias ? features : 0);
    case LayerKind::LayerNorm:
      return 2 * in_features;
    case LayerKind::RmsNorm:
      return in_features;
    default:
      return 0;
  }
}

namespace {

// A layer's forward FLOPs in the number type T: std::uint64_t for the count itself, long double
// (exact to 2^64) to check first that the count fits.
template <class T>
T flops_as(const LayerSpec& l) {
  const T rows = static_cast<T>(l.output.batch) * static_cast<T>(l.output.sequence);
  const T n = rows * static_cast<T>(l.output.features ? l.output.features : 1);
  const T in_features = static_cast<T>(l.in_features), features = static_cast<T>(l.features);
  switch (l.kind) {
    case LayerKind::Embedding:
      return 0;
    case LayerKind::Linear:
    case LayerKind::Gemv:
      return 2 * rows * in_features * features + (l.bias ? rows * features : T(0));
    case LayerKind::Add:
    case LayerKind::Mul:
    case LayerKind::Relu:
      return n;
    case LayerKind::Gelu:
      return 8 * n;
    case LayerKind::Silu:
      return 4 * n;
    case LayerKind::Swiglu:
      return 5 * n;
    case LayerKind::LayerNorm:
      return 5 * n;
    case LayerKind::RmsNorm:
      return 4 * n;
    case LayerKind::Softmax:
      return 5 * n;
    case LayerKind::Attention: {
      // QK^T and PV over the full S x S score matrix, plus the softmax.
      const T b = static_cast<T>(l.output.batch), s = static_cast<T>(l.output.sequence), h = static_cast<T>(l.heads);
      const T hd = in_features;
      return 4 * b * h * s * s * hd + 5 * b * h * s * s;
    }
    case LayerKind::CrossEntropy:
      return 0;
  }
  return 0;
}

}  // namespace

std::uint64_t LayerSpec::forward_flops() const { return flops_as<std::uint64_t>(*this); }

namespace {

// Every count a step makes (FLOPs forward and, in training, about twice more backward; bytes
// of each output) fits in 64 bits with room to add them up.
void check_counts(const ModelSpec& m, Section& root) {
  constexpr long double kLimit = 0x1p60L;
  long double total = 0;
  for (const auto& l : m.layers) {
    const long double f = flops_as<long double>(l);
    const long double bytes = static_cast<long double>(l.output.batch) * static_cast<long double>(l.output.sequence) *
                              static_cast<long double>(l.output.features ? l.output.features : 1) * 4;
    total += f;
    if (f * 3 > kLimit || bytes > kLimit || total * 3 > kLimit) {
      root.error(root.has("batch") ? "batch" : "sequence",
                 fmt::format("batch x sequence = {} x {} = {} tokens: layer '{}' would count {:.3g} FLOPs and {:.3g} "
                             "bytes a step, past what 64-bit counters hold (2^60); give a smaller batch or sequence",
                             m.batch, m.sequence, static_cast<long double>(m.batch) * m.sequence, l.name,
                             static_cast<double>(f), static_cast<double>(bytes)));
      return;
    }
  }
}

}  // namespace

const LayerSpec* ModelSpec::find(const std::string& layer) const {
  for (const auto& l : layers)
    if (l.name == layer) return &l;
  return nullptr;
}

Shape ModelSpec::shape_of(const std::string& tensor) const {
  if (const LayerSpec* l = find(tensor)) return l->output;
  for (const auto& in : inputs)
    if (in.name == tensor) return Shape{batch, sequence, in.kind == InputSpec::Kind::Activations ? in.features : 0};
  return {};
}

std::uint64_t ModelSpec::parameters() const {
  std::uint64_t p = 0;
  for (const auto& l : layers) p += l.parameters();
  return p;
}

std::uint64_t ModelSpec::max_features() const {
  std::uint64_t f = 1;
  for (const auto& in : inputs) f = std::max(f, in.features);
  for (const auto& l : layers) f = std::max(f, l.output.features);
  return f;
}

std::uint64_t ModelSpec::forward_flops() const {
  std::uint64_t f = 0;
  for (const auto& l : layers) f += l.forward_flops();
  return f;
}

ModelSpec ModelSpec::read(Section root) {
  ModelSpec m;
  m.name = root.text("name", "model", "model name shown in reports");
  m.description = root.text("description", "", "one line about the model and its source");
  m.dtype =
      dtype_of(root.choice("dtype", "fp16", {"fp16", "bf16", "fp32"}, "number format of weights and activations"));
  m.batch = static_cast<std::uint64_t>(root.integer("batch", 1, 1, 1 << 20, "samples per step"));
  m.sequence = static_cast<std::uint64_t>(root.integer("sequence", 1, 1, 1 << 20, "tokens per sample"));

  const bool is_transformer = root.has("transformer");
  auto t = root.section("transformer", "a decoder-only transformer stack (expands into layers)");
  TransformerConfig tc;
  tc.d_model = static_cast<std::uint64_t>(t.integer("d_model", 768, 1, 1 << 20, "hidden size"));
  tc.heads = static_cast<std::uint64_t>(t.integer("heads", 12, 1, 4096, "attention heads"));
  tc.kv_heads = static_cast<std::uint64_t>(
      t.integer("kv_heads", 0, 0, 4096, "key/value heads (grouped-query attention); 0: same as heads"));
  tc.d_ff = static_cast<std::uint64_t>(t.integer("d_ff", 0, 0, 1 << 22, "MLP hidden size; 0: 4 x d_model"));
  tc.layers = static_cast<std::uint64_t>(t.integer("layers", 12, 1, 1024, "transformer blocks"));
  tc.vocabulary = static_cast<std::uint64_t>(t.integer("vocabulary", 50257, 2, 1 << 24, "vocabulary size"));
  tc.activation = t.choice("activation", "gelu", {"gelu", "silu", "relu", "swiglu"}, "MLP activation");
  tc.norm = t.choice("norm", "layernorm", {"layernorm", "rmsnorm"}, "normalisation");
  tc.positions = t.choice("positions", "learned", {"learned", "rotary", "none"},
                          "position encoding (rotary is parameter-free and not modelled in compute)");
  tc.bias = t.boolean("bias", true, "linear layers have biases");
  tc.tied_embeddings = t.boolean("tied_embeddings", false, "the output head reuses the embedding weights");
  tc.parallel_residual = t.boolean("parallel_residual", false, "attention and MLP read the same normed input (GPT-J)");
  tc.causal = t.boolean("causal", true, "causal mask in attention (false: every token sees its whole sample)");
  if (tc.kv_heads == 0) tc.kv_heads = tc.heads;
  if (tc.d_ff == 0) tc.d_ff = 4 * tc.d_model;
  if (tc.d_model % tc.heads != 0)
    t.error("heads", fmt::format("d_model {} does not split into {} heads", tc.d_model, tc.heads));
  if (tc.heads % tc.kv_heads != 0)
    t.error("kv_heads", fmt::format("{} heads are not a multiple of {} kv_heads", tc.heads, tc.kv_heads));

  auto inputs = root.sections("inputs", "model inputs (graph models)");
  for (auto& s : inputs) {
    InputSpec in;
    in.name = s.text("name", "x", "tensor name");
    std::string kind = s.choice("kind", "activations", {"activations", "tokens", "labels"},
                                "activations [batch, sequence, features], token ids or labels [batch, sequence]");
    in.kind = kind == "tokens"   ? InputSpec::Kind::Tokens
              : kind == "labels" ? InputSpec::Kind::Labels
                                 : InputSpec::Kind::Activations;
    in.features = static_cast<std::uint64_t>(s.integer("features", 0, 0, 1 << 22, "features of activations"));
    if (in.kind == InputSpec::Kind::Activations && in.features == 0)
      s.error("features", "activations need features > 0");
    m.inputs.push_back(in);
  }
  auto layers = root.sections("layers", "the layer graph, in order (graph models)");
  std::vector<std::string> kind_names;
  for (const auto& k : kinds()) kind_names.push_back(k.name);
  for (auto& s : layers) {
    LayerSpec l;
    l.name = s.text("name", "", "layer name (unique)");
    std::string kind = s.text("kind", "linear",
                              "layer kind: embedding, linear, gemv, add, mul, gelu, silu, relu, "
                              "swiglu, layernorm, rmsnorm, softmax, attention, cross_entropy");
    l.inputs = s.texts("inputs", {}, "names of input tensors (model inputs or earlier layers)");
    l.features = static_cast<std::uint64_t>(s.integer("features", 0, 0, 1 << 24, "output features"));
    l.bias = s.boolean("bias", false, "add a bias (linear, gemv)");
    l.vocabulary = static_cast<std::uint64_t>(s.integer("vocabulary", 0, 0, 1 << 24, "vocabulary (embedding)"));
    l.learned_positions = s.boolean("learned_positions", false, "learned position table (embedding)");
    l.heads = static_cast<std::uint32_t>(s.integer("heads", 0, 0, 4096, "attention heads"));
    l.kv_heads = static_cast<std::uint32_t>(s.integer("kv_heads", 0, 0, 4096, "key/value heads; 0: same as heads"));
    l.causal = s.boolean("causal", true, "causal mask (attention)");
    l.epsilon = s.real("epsilon", 1e-5, 0, 1, "normalisation epsilon");
    l.tied_to = s.text("tied_to", "", "embedding whose weights this linear layer reuses, transposed");
    if (l.name.empty()) s.error("name", "every layer needs a name");
    auto it = std::find(kind_names.begin(), kind_names.end(), kind);
    if (it == kind_names.end()) {
      std::string hint = sim::config::closest_match(kind, kind_names);
      s.error("kind", fmt::format("unknown layer kind '{}'{}", kind,
                                  hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
      continue;
    }
    l.kind = kinds()[static_cast<std::size_t>(it - kind_names.begin())].kind;
    for (const char* key :
         {"features", "bias", "vocabulary", "learned_positions", "heads", "kv_heads", "causal", "epsilon", "tied_to"}) {
      if (info(l.kind).keys.count(key)) continue;
      if (s.has(key)) s.error(key, fmt::format("'{}' does not apply to a {} layer", key, kind));
      s.omit(key);
    }
    m.layers.push_back(l);
  }

  if (is_transformer) {
    if (!m.layers.empty() || !m.inputs.empty())
      root.error("layers", "a model has either a transformer: section or inputs:/layers:, not both");
    m.transformer = tc;
    m.inputs.clear();
    m.layers.clear();
    root.omit("inputs");
    root.omit("layers");
    expand_transformer(m);
    check_graph(m, nullptr, root);
  } else if (root.has("layers")) {
    root.omit("transformer");
    if (layers.empty()) root.error("layers", "an empty list: a model needs at least one layer");
    if (m.layers.size() == layers.size()) check_graph(m, &layers, root);
  } else if (root.has("name") || root.has("inputs")) {
    root.error("layers", "a model needs a transformer: section or a layers: list");
  }
  m.sparsity = read_sparsity(root, m.layers);
  check_counts(m, root);
  return m;
}

bool is_model_document(const sim::config::Node& root) {
  return root.is_map() && (root.find("transformer") || root.find("layers"));
}

const sim::config::BuiltinFiles& builtin_models() {
  static const sim::config::BuiltinFiles files = generated::model_presets();
  return files;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& [path, text] : builtin_models()) {
    std::string p(path);
    std::string base = p.substr(p.rfind('/') + 1);
    if (base.size() > 5 && base.substr(base.size() - 5) == ".yaml") names.push_back(base.substr(0, base.size() - 5));
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

LoadedModel resolve_model(sim::config::Node root, const std::string& source,
                          const std::vector<std::string>& overrides) {
  sim::config::Loader::apply_overrides(root, overrides);
  sim::config::Resolver resolver(&root);
  LoadedModel out;
  out.spec = ModelSpec::read(resolver.root());
  resolver.finish();
  out.source = source;
  out.resolved_yaml = resolver.resolved_yaml(fmt::format("Resolved wafersim model. Source: {}", source));
  return out;
}

}  // namespace

LoadedModel load_model(const std::string& path, const std::vector<std::string>& overrides) {
  sim::config::Loader loader(&builtin_models(), "models/presets");
  return resolve_model(loader.load(path), path, overrides);
}

LoadedModel load_model_text(std::string_view text, const std::string& name, const std::vector<std::string>& overrides) {
  sim::config::Loader loader(&builtin_models(), "models/presets");
  return resolve_model(loader.load_text(text, name), name, overrides);
}

std::vector<sim::config::FieldDoc> model_schema() {
  sim::config::Resolver resolver(nullptr);
  ModelSpec::read(resolver.root());
  return resolver.docs();
}

}  // namespace wafersim::models
