#pragma once
// A model: a graph of layers over activation tensors, read from YAML either as an explicit
// graph or as a transformer configuration that expands into one.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memoryx/optimizer.h"
#include "models/sparsity.h"
#include "sim/config/loader.h"
#include "sim/config/schema.h"

namespace wafersim::models {

enum class DType { FP16, BF16, FP32 };
const char* to_string(DType d);
std::uint32_t bytes_of(DType d);

enum class LayerKind {
  Embedding,     // token ids [B, S] -> [B, S, d]; weights vocab x d (+ learned positions S x d)
  Linear,        // [.., K] -> [.., N]: Y = X W (+ b); weights K x N
  Gemv,          // [K] -> [N] with batch x sequence = 1 (decode); weights K x N
  Add,           // elementwise, two inputs of one shape
  Mul,           // elementwise, two inputs of one shape
  Gelu,          // elementwise (tanh approximation)
  Silu,          // elementwise
  Relu,          // elementwise
  Swiglu,        // silu(gate) * up: two inputs of one shape
  LayerNorm,     // over the last dimension; gamma and beta of size d
  RmsNorm,       // over the last dimension; gamma of size d
  Softmax,       // over the last dimension
  Attention,     // q [B,S,H*hd], k, v [B,S,KV*hd] -> [B,S,H*hd]; causal mask optional
  CrossEntropy,  // logits [B,S,V] and labels [B,S] -> mean loss
};
const char* to_string(LayerKind k);

// Shape of an activation tensor: batch x sequence x features (features 0 for token ids).
struct Shape {
  std::uint64_t batch = 1;
  std::uint64_t sequence = 1;
  std::uint64_t features = 0;
  [[nodiscard]] std::uint64_t rows() const { return batch * sequence; }
  [[nodiscard]] std::uint64_t elements() const { return rows() * (features ? features : 1); }
  friend bool operator==(const Shape& a, const Shape& b) {
    return a.batch == b.batch && a.sequence == b.sequence && a.features == b.features;
  }
};

struct InputSpec {
  enum class Kind { Activations, Tokens, Labels };
  std::string name;
  Kind kind = Kind::Activations;
  std::uint64_t features = 0;
};

struct LayerSpec {
  std::string name;
  LayerKind kind = LayerKind::Linear;
  std::vector<std::string> inputs;
  std::uint64_t features = 0;      // output features (linear, gemv, embedding width)
  bool bias = false;               // linear, gemv
  std::uint64_t vocabulary = 0;    // embedding
  bool learned_positions = false;  // embedding
  std::uint32_t heads = 0;         // attention
  std::uint32_t kv_heads = 0;      // attention (grouped-query when < heads)
  bool causal = true;              // attention
  double epsilon = 1e-5;           // norms
  std::string tied_to;             // linear: reuses the (transposed) weights of this embedding

  Shape output;                   // filled in by validation
  std::uint64_t in_features = 0;  // K of a linear/gemv; d of a norm

  [[nodiscard]] std::uint64_t parameters() const;     // weights this layer owns (0 when tied)
  [[nodiscard]] std::uint64_t forward_flops() const;  // multiply-add counted as 2
  [[nodiscard]] bool has_weights() const { return parameters() > 0; }
};

// The transformer configuration a `transformer:` section describes.
struct TransformerConfig {
  std::uint64_t d_model = 0, heads = 0, kv_heads = 0, d_ff = 0, layers = 0, vocabulary = 0;
  std::string activation;  // gelu, silu, relu, swiglu
  std::string norm;        // layernorm, rmsnorm
  std::string positions;   // learned, rotary, none
  bool bias = true;
  bool tied_embeddings = false;
  bool parallel_residual = false;  // GPT-J: attention and MLP read the same normed input
  bool causal = true;              // attention masks later tokens (false: each token sees its sample)
};

struct ModelSpec {
  std::string name, description;
  DType dtype = DType::FP16;
  std::uint64_t batch = 1;
  std::uint64_t sequence = 1;
  std::optional<TransformerConfig> transformer;
  std::vector<InputSpec> inputs;
  std::vector<LayerSpec> layers;       // in topological order
  SparsitySpec sparsity;               // sparse linear layers (training runs)
  memoryx::OptimizerConfig optimizer;  // when trained (the `optimizer:` section)

  static ModelSpec read(sim::config::Section root);
  [[nodiscard]] std::uint64_t parameters() const;
  [[nodiscard]] std::uint64_t forward_flops() const;
  // The most features of any input or layer output (at least 1): what the layout spreads.
  [[nodiscard]] std::uint64_t max_features() const;
  [[nodiscard]] const LayerSpec* find(const std::string& layer) const;
  [[nodiscard]] Shape shape_of(const std::string& tensor) const;
};

struct LoadedModel {
  ModelSpec spec;
  std::string source;
  std::string resolved_yaml;
};

const sim::config::BuiltinFiles& builtin_models();
std::vector<std::string> model_preset_names();
// Loads a model file or preset name (`base:` and --set as for platforms); throws ConfigError.
LoadedModel load_model(const std::string& path, const std::vector<std::string>& overrides = {});
LoadedModel load_model_text(std::string_view text, const std::string& name,
                            const std::vector<std::string>& overrides = {});
// Whether a parsed YAML document looks like a model (has `transformer:` or `layers:`).
bool is_model_document(const sim::config::Node& root);
std::vector<sim::config::FieldDoc> model_schema();

}  // namespace wafersim::models
